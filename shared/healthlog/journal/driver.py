"""What a dialect's driver does for the one journal (``healthlog.journal.core``).

The journal core holds every account, queue, outcome and read method once, and runs
the dialect's named statements (``journal/sql/<backend>.sql``). A driver does only what
really differs between databases:

* connecting and pooling;
* one transaction, once (``attempt``), with driver errors translated into the domain's:
  ``Busy`` when the database was busy (the core retries, bounded and jittered, and then
  raises ``JournalBusy``), ``JournalUnavailable`` when it cannot be reached, the typed
  account errors for a taken name, token or id, ``NoSuchAccount`` for a delivery whose
  account is missing, and a plain ``HealthlogError`` for a statement it refused;
* streaming rows of several statements from one snapshot;
* the journal-wide fold lock;
* running a migration script;
* the showcase's bulk write (SQLite upserts row by row, PostgreSQL copies);
* the MCP SQL tool's guarded session (``guarded_session``: read-only, its views the
  dialect's ``guarded_*`` statements, the policy ``healthlog.journal.guard``'s) and the
  schema's version read without writing (``schema_version``);
* the write bound (``write_bound``): a write transaction begun under one ends by its
  moment, or is interrupted there and rolled back whole (``WriteInterrupted``); a wait
  for another writer's lock that ran into it is a busy journal (``JournalBusy``).

Values cross this boundary as the port has them: times as fixed-width UTC text, lists
as JSON text; the dialect's SQL converts where its columns are typed otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple, Protocol, TypeVar

from healthlog.errors import HealthlogError, JournalBusy, WriteInterrupted
from healthlog.journal.guard import Daily, Guard
from healthlog.journal.statements import Statements
from healthlog.model import Point, Record

T = TypeVar("T")

Params = Mapping[str, Any]


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """What the core asks of a connection: one statement with named parameters."""

    def execute(self, sql: str, params: Params = ..., /) -> Cursor: ...


#: runs one statement in the stream's snapshot and yields its rows, lazily
Rows = Callable[[str, Params], Iterator[tuple[Any, ...]]]


class Layer(NamedTuple):
    """Whose a delivery's showcase rows are, and the layer's version (received_at, id)."""

    account_id: str
    received_at: str
    delivery_id: str


class Busy(JournalBusy):
    """The database was busy for this attempt; the core tries the transaction again."""


class WriteBound:
    """The moment (``time.monotonic()``) the write transactions under it must end by."""

    def __init__(self, until: float) -> None:
        self.until = until
        #: a wait for another writer's lock under this bound was given up: time that
        #: others used, so running out of it is a busy journal, not the write's own
        self.waited = False

    def left(self) -> float:
        return self.until - time.monotonic()

    def passed(self) -> bool:
        return time.monotonic() > self.until

    def left_ms(self) -> int:
        """The whole milliseconds left (at least 1), or this bound's ``spent()`` raised."""
        left = self.left()
        if left <= 0:
            raise self.spent()
        return max(1, int(left * 1000))

    def spent(self) -> HealthlogError:
        """What a write raises when this bound's time is gone (before or during it)."""
        if self.waited:
            return JournalBusy("the journal stayed busy until the write's deadline")
        return WriteInterrupted()


_BOUND: ContextVar[WriteBound | None] = ContextVar("healthlog_write_bound", default=None)


@contextmanager
def write_bound(until: float | None) -> Iterator[WriteBound | None]:
    """Bound the write transactions begun in this context (this thread) by ``until``.

    ``until`` is a ``time.monotonic()`` value; None bounds nothing (an outer bound still
    holds), and a bound inside another ends at the earlier of the two. Reads are never
    bounded. The driver checks the bound while the transaction's statements run (SQLite:
    a progress handler; PostgreSQL: ``statement_timeout``), not during its COMMIT: a
    write either commits whole or is rolled back whole.
    """
    outer = _BOUND.get()
    if until is None:
        yield outer
        return
    bound = WriteBound(until if outer is None else min(until, outer.until))
    token = _BOUND.set(bound)
    try:
        yield bound
    finally:
        _BOUND.reset(token)


def current_bound() -> WriteBound | None:
    """The bound the write transactions begun now are under, if any."""
    return _BOUND.get()


@contextmanager
def translated(
    kinds: type[Exception] | tuple[type[Exception], ...],
    translate: Callable[[Any], HealthlogError],
) -> Iterator[None]:
    """Raise ``translate(exc)`` from each driver exception of ``kinds`` met in the block."""
    try:
        yield
    except kinds as exc:
        raise translate(exc) from exc


class Driver(Protocol):
    #: names the SQL file and the migrations folder
    backend: str
    statements: Statements

    def attempt(
        self, work: Callable[[Connection], T], *, write: bool, consistent: bool = False
    ) -> T:
        """Run ``work`` in one transaction, once; raise ``Busy`` when the database was busy.

        ``write`` transactions may change rows; ``consistent`` asks that every statement
        of a read sees one snapshot. A write under a ``write_bound`` raises the bound's
        ``spent()`` error when its time is gone before or while it runs, rolled back,
        and marks the bound ``waited`` when it raises ``Busy``.
        """

    def streaming(self) -> AbstractContextManager[Rows]:
        """A snapshot to stream rows from, statement by statement; no retries.

        Driver errors met while the rows are read are translated as in ``attempt``.
        """

    def fold_lock(self, wait_s: float) -> AbstractContextManager[bool]:
        """The journal-wide fold lock (see ``Journal.fold_lock``)."""

    def run_script(self, conn: Connection, script: str) -> None:
        """Run a migration's SQL in the open transaction, without committing."""

    def write_showcase(
        self, conn: Connection, layer: Layer, points: Sequence[Point], records: Sequence[Record]
    ) -> None:
        """Upsert a delivery's points and records under its layer, in the open transaction.

        Points and record rows under the layer guard (a stored row is overwritten only
        by a layer that is not older; the last of two entries with one key in one
        delivery wins); each series a record carries replaces the stored series wholly
        unless a newer layer holds it; a series it does not carry is left as stored.
        """

    def schema_version(self) -> int:
        """The newest migration applied (0 for none), read without writing anything: a
        SQLite file that is not there is not made."""

    def guarded_session(self, account_id: str, daily: Daily | None) -> Guard:
        """The MCP SQL tool's session over ``account_id``'s views (``healthlog.journal.guard``
        says what it allows): one of its own, that cannot write, whose views are the
        dialect's ``guarded_*`` statements; ``my_daily`` from ``daily``."""

    def close(self) -> None: ...
