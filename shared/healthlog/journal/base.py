"""What every part of the one journal (``journal/core.py``) stands on: its driver, its
statements, and one statement's transaction.

``SqlJournal`` (core) gives ``_transaction`` its retries; the parts (``accounts``,
``queue``, ``showcase_reads``) are mixins over this base, each one job of the port.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from healthlog.journal.driver import Connection, Driver, Params
from healthlog.journal.statements import Statements

T = TypeVar("T")


#: the schema version whose migration made counted_days
COUNTED_DAYS_VERSION = 21


class SqlBase:
    """The driver, its statements, and the helpers every part runs its statements by."""

    _driver: Driver
    _sql: Statements
    #: whether the schema has counted_days (migration 0021), read once (None: not yet);
    #: a journal is migrated before it is written to, except in the migrations' tests
    _counts_days: bool | None = None

    def _keeps_counted_days(self) -> bool:
        if self._counts_days is None:
            self._counts_days = self._driver.schema_version() >= COUNTED_DAYS_VERSION
        return self._counts_days

    @property
    def backend(self) -> str:
        return self._driver.backend

    def _transaction(
        self, work: Callable[[Connection], T], *, write: bool, consistent: bool = False
    ) -> T:
        """Run ``work`` in one transaction (``SqlJournal``'s, with its retries)."""
        raise NotImplementedError

    def _write(self, work: Callable[[Connection], T]) -> T:
        return self._transaction(work, write=True)

    def _one(self, name: str, params: Params) -> Any:
        """The first row of one read statement (None if it has none)."""
        sql = self._sql[name]
        return self._transaction(lambda conn: conn.execute(sql, params).fetchone(), write=False)

    def _all(self, name: str, params: Params) -> list[Any]:
        return self._fetch(self._sql[name], params)

    def _fetch(self, sql: str, params: Params) -> list[Any]:
        """Every row of one read statement, in one read transaction."""
        return self._transaction(lambda conn: conn.execute(sql, params).fetchall(), write=False)

    def _filters(self, alias: str = "", **equal: str | None) -> tuple[str, dict[str, Any]]:
        """``AND column = :column`` for each value given, for a statement's ``/*and*/`` slot."""
        given = {column: value for column, value in equal.items() if value is not None}
        text = "".join(f" AND {alias}{column} = {self._sql.param(column)}" for column in given)
        return text, given
