"""The PostgreSQL driver: the scale-out journal.

Connections. A small pool (``postgres_pool.py``): each attempt checks a connection out,
runs one transaction on it and gives it back, and a connection is used by one thread at
a time. Opening a connection costs about a hundred statements (4 ms against 0.04 ms on
this machine's loopback, more over a network and TLS), so they are kept. The pool is
bounded: a caller that finds every connection busy for ``lock_timeout_ms`` gets
``JournalBusy``, instead of a burst of threads exhausting the server's connections.
Sessions run in UTC with ``lock_timeout`` set, in autocommit mode: every transaction is
an explicit block, and no connection idles inside one.

Busy. A transaction that meets a lock held longer than ``lock_timeout_ms`` (55P03), a
deadlock (40P01) or a serialization failure (40001) raises ``Busy``, and the journal
core tries it again (``core.py``). A pooled connection the server dropped while it
idled (a restart, a failover, a Lambda frozen between invocations) is replaced once,
here, without counting as a retry; any other failure to reach the server is
``JournalUnavailable``. A refused statement (a constraint, a value the database cannot
store) is a plain ``HealthlogError``: retrying cannot help. No psycopg exception leaves
this module, and no message quotes a value.

Bounded writes. A write under a ``driver.write_bound`` sets ``SET LOCAL
statement_timeout`` to the time left (again before each statement of the showcase's bulk
write, so the transaction as a whole ends near the bound) and ``lock_timeout`` to no
more than that. A statement cancelled by the timeout (57014) aborts the transaction,
which rolls back whole, and the attempt raises the bound's ``spent()`` error; a lock
wait given up (55P03) is ``Busy`` as ever and marks the bound ``waited``.

Times are ``timestamptz``, and sessions run in UTC; the statements
(``sql/postgres.sql``) take and return the port's text, so a showcase row reads back
exactly as it was written.

The fold lock is a session-level advisory lock on a connection of its own, held for the
block: the server drops it when that session ends, also when the holder dies. Outcomes
are guarded by the expected status (``UPDATE ... WHERE status = expected``), which locks
the delivery row, so two writers can never both succeed; docs/architecture.md
("Concurrency") says why both exist.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar, cast

import psycopg
from psycopg import errors as pg_errors

from healthlog import errors
from healthlog.journal import rows
from healthlog.journal.core import STATEMENTS, SqlJournal, point_rows, series_keys
from healthlog.journal.driver import (
    Busy,
    Connection,
    Layer,
    Params,
    Rows,
    WriteBound,
    current_bound,
    translated,
)
from healthlog.journal.postgres_pool import Conn, Pool
from healthlog.journal.statements import Statements
from healthlog.model import Point, Record

T = TypeVar("T")

BACKEND = "postgres"

# serialization_failure, deadlock_detected, lock_not_available: the transaction lost a
# race, not its footing; the same work a moment later will go through
_BUSY_STATES = frozenset({"40001", "40P01", "55P03"})

# idle connections kept for reuse, and connections open at once (the fold lock's own
# connection is not counted)
_POOL_KEEP = 4
_POOL_SIZE = 10
_FETCH = 1000

# a consistent view across the statements of one report (summary)
_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"

# data exception (a string too long, text the encoding cannot hold, a number out of
# range) and program limit exceeded (an index row too large for a long name): classes
# of SQLSTATE that a value causes, whatever the database's state
_VALUE_CLASSES = frozenset({"22", "54"})

# query_canceled: under a write bound, its statement_timeout
_CANCELED = "57014"

# the unique constraints of ``accounts``, by the error a duplicate gets
_TAKEN: dict[str, type[errors.AccountError]] = {
    "accounts_pkey": errors.AccountIdTaken,
    "accounts_name_key": errors.AccountNameTaken,
    "accounts_token_hash_key": errors.TokenTaken,
}


# --- errors at the edge --------------------------------------------------------------------


def _translate(exc: psycopg.Error) -> errors.HealthlogError:
    """The port's error for a driver error (the caller raises it ``from`` exc).

    Messages name the error class and SQLSTATE only: the server's text may quote the
    value it refused, and that could be health data.
    """
    if exc.sqlstate in _BUSY_STATES:
        return Busy()
    if isinstance(exc, pg_errors.UniqueViolation):
        taken = _TAKEN.get(exc.diag.constraint_name or "")
        if taken is not None:
            return taken()
    if isinstance(exc, pg_errors.ForeignKeyViolation):
        return errors.NoSuchAccount()  # the one foreign key: a delivery's account
    what = f"{type(exc).__name__}, SQLSTATE {exc.sqlstate or '-'}"
    if (exc.sqlstate or "")[:2] in _VALUE_CLASSES:
        # the body's value, not the database: the same value fails every time
        return errors.ValueRefused(f"the journal cannot store a value ({what})")
    if isinstance(exc, pg_errors.UndefinedTable | pg_errors.UndefinedColumn):
        return errors.JournalUnavailable(f"the journal is not migrated ({what})")
    if isinstance(exc, psycopg.IntegrityError | psycopg.DataError | psycopg.ProgrammingError):
        # the data or the statement is wrong, not the database: retrying will not help
        return errors.HealthlogError(f"the journal refused the statement ({what})")
    return errors.JournalUnavailable(f"the journal failed ({what})")


def _translated() -> AbstractContextManager[None]:
    return translated(psycopg.Error, _translate)


# --- the driver ----------------------------------------------------------------------------


class PostgresDriver:
    backend = BACKEND

    def __init__(
        self,
        url: str,
        *,
        lock_timeout_ms: int = 5000,
        connect_timeout_s: float = 5,
        pool_size: int = _POOL_SIZE,
    ) -> None:
        if not url.startswith(("postgresql://", "postgres://")):
            raise errors.ConfigError("a PostgreSQL journal URL starts with postgresql://")
        if lock_timeout_ms <= 0 or connect_timeout_s <= 0 or pool_size < 1:
            # lock_timeout 0 would mean "wait forever" to PostgreSQL
            raise errors.ConfigError(
                "lock_timeout_ms, connect_timeout_s and pool_size must be positive"
            )
        self.statements = Statements.load(BACKEND, param="%({})s", required=STATEMENTS)
        self._url = url
        self._lock_timeout_ms = int(lock_timeout_ms)
        # libpq counts whole seconds
        self._connect_timeout_s = max(1, math.ceil(connect_timeout_s))
        self.pool = Pool(self._open, _POOL_KEEP, pool_size, lock_timeout_ms / 1000)
        self._cursor_names = itertools.count()

    def _open(self) -> Conn:
        try:
            conn = psycopg.connect(
                self._url,
                autocommit=True,  # explicit transactions only
                connect_timeout=self._connect_timeout_s,
                fallback_application_name="healthlog",
            )
        except psycopg.Error as exc:
            # libpq's first line names the host, the port and why, never the password
            reason = (str(exc).strip().splitlines() or ["-"])[0]
            raise errors.JournalUnavailable(
                f"the journal cannot be reached ({type(exc).__name__}: {reason})"
            ) from exc
        try:
            conn.execute(f"SET TIME ZONE 'UTC'; SET lock_timeout = {self._lock_timeout_ms}")
        except psycopg.Error as exc:
            conn.close()
            raise _translate(exc) from exc
        return conn

    def attempt(
        self, work: Callable[[Connection], T], *, write: bool, consistent: bool = False
    ) -> T:
        replaced_stale = False
        bound = current_bound() if write else None
        while True:
            with self.pool.connection() as lease:
                try:
                    with lease.conn.transaction():
                        if consistent:
                            lease.conn.execute(_SNAPSHOT)
                        if bound is not None:
                            self._bound(lease.conn, bound, lock=True)
                        return work(cast(Connection, lease.conn))
                except psycopg.Error as exc:
                    if bound is not None and exc.sqlstate == _CANCELED:
                        raise bound.spent() from exc
                    if bound is not None and exc.sqlstate in _BUSY_STATES:
                        bound.waited = True  # others held the lock: their time, not ours
                    stale = lease.reused and lease.conn.broken
                    if stale and not replaced_stale and exc.sqlstate not in _BUSY_STATES:
                        # the server dropped this idle connection; a fresh one may work
                        self.pool.drop_idle()
                        replaced_stale = True
                        continue
                    raise _translate(exc) from exc

    def _bound(self, conn: Conn, bound: WriteBound, *, lock: bool = False) -> None:
        """The open transaction's statements from here on end by ``bound.until``."""
        ms = bound.left_ms()
        conn.execute(f"SET LOCAL statement_timeout = {ms}")
        if lock:
            conn.execute(f"SET LOCAL lock_timeout = {min(self._lock_timeout_ms, ms)}")

    def _renew(self, conn: Conn) -> None:
        """Before one more statement of a bounded write: the time left, not the start's."""
        bound = current_bound()
        if bound is not None:
            self._bound(conn, bound)

    @contextmanager
    def streaming(self) -> Iterator[Rows]:
        # one read-only transaction with one snapshot for all its statements (REPEATABLE
        # READ: an export read metric by metric, or records beside their items, sees the
        # showcase of one moment, as SQLite's one read transaction does), each statement
        # through a server-side cursor (memory stays flat however many rows there are)
        with _translated(), self.pool.connection() as lease, lease.conn.transaction():
            conn = lease.conn
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")

            def stream(sql: str, params: Params) -> Iterator[tuple[Any, ...]]:
                name = f"healthlog_{next(self._cursor_names)}"
                with _translated(), conn.cursor(name=name) as cursor:
                    cursor.execute(sql, params)
                    while page := cursor.fetchmany(_FETCH):
                        yield from page

            yield stream

    @contextmanager
    def fold_lock(self, wait_s: float) -> Iterator[bool]:
        """A session-level advisory lock on a connection held for the block.

        The waiting form blocks in ``pg_advisory_lock`` under a ``lock_timeout`` of
        ``wait_s``, so a waiter gets the lock the moment it is released, with no polling.
        """
        sql = self.statements
        conn = self._open()  # its own session: a pooled one could already hold the lock
        try:
            try:
                conn.execute(sql["fold_lock_keepalives"])
                if wait_s > 0:
                    conn.execute(f"SET lock_timeout = {max(1, round(wait_s * 1000))}")
                    try:
                        conn.execute(sql["fold_lock_wait"])
                        held = True
                    except pg_errors.LockNotAvailable:
                        held = False
                else:
                    row = conn.execute(sql["fold_lock_try"]).fetchone()
                    held = bool(row and row[0])
            except psycopg.Error as exc:
                raise _translate(exc) from exc
            yield held
            if held:
                # if this fails, closing the session below releases it all the same
                with contextlib.suppress(psycopg.Error):
                    conn.execute(sql["fold_unlock"])
        finally:
            conn.close()

    def run_script(self, conn: Connection, script: str) -> None:
        # a script without parameters goes as one simple query, in the open transaction
        cast(Conn, conn).execute(script)

    def write_showcase(
        self, conn: Connection, layer: Layer, points: Sequence[Point], records: Sequence[Record]
    ) -> None:
        """By COPY into the session's temporary tables, then one upsert each from there."""
        if not (points or records):
            return
        pg = cast(Conn, conn)
        sql = self.statements
        named = {"account": layer.account_id, "at": layer.received_at, "id": layer.delivery_id}
        renew = self._renew
        pg.execute(sql["incoming"])
        with pg.cursor() as cursor:
            if points:
                renew(pg)
                keys = series_keys(conn, sql, layer.account_id, points)
                renew(pg)
                with cursor.copy(sql["copy_points"]) as copy:
                    for n, row in enumerate(point_rows(points, keys, ())):
                        copy.write_row((n, *row))
                renew(pg)
                pg.execute(sql["upsert_points"], named)
            if not records:
                return
            record_values, item_values = rows.RECORD_VALUES, rows.ITEM_VALUES
            renew(pg)
            with cursor.copy(sql["copy_records"]) as copy:
                for n, record in enumerate(records):
                    copy.write_row((n, *record_values(record)))
            renew(pg)
            with cursor.copy(sql["copy_items"]) as copy:
                for n, record in enumerate(records):
                    head = (n, record.section, record.identity)
                    for item in record.items:
                        copy.write_row((*head, *item_values(item)))
        renew(pg)
        pg.execute(sql["upsert_records"], named)
        if any(record.items for record in records):
            renew(pg)
            pg.execute(sql["claim_series"], named)
            renew(pg)
            pg.execute(sql["insert_items"], named)

    def close(self) -> None:
        self.pool.close()


class PostgresJournal(SqlJournal):
    """The journal on a PostgreSQL database (a libpq URL)."""

    def __init__(
        self,
        url: str,
        *,
        retries: int = 5,
        lock_timeout_ms: int = 5000,
        connect_timeout_s: float = 5,
        pool_size: int = _POOL_SIZE,
    ) -> None:
        self.driver = PostgresDriver(
            url,
            lock_timeout_ms=lock_timeout_ms,
            connect_timeout_s=connect_timeout_s,
            pool_size=pool_size,
        )
        super().__init__(self.driver, retries=retries)
