"""The SQLite driver: the embedded default journal, one file on one machine.

Threads. functions-framework serves requests on threads, and a thread-per-request
server would open (and strand) one connection per request if connections lived in a
``threading.local``. So connections live in a small pool instead: each call checks one
out, uses it, and gives it back; a connection is only ever used by the one thread that
holds it, which is the serialisation ``check_same_thread=False`` asks of us. Unlike one
shared connection behind a lock, readers (status, pending_page) are not queued behind
a long fold transaction: in WAL mode they read beside the one writer.

Durability. ``synchronous=FULL``: with WAL, NORMAL syncs only at checkpoints, so a
commit survives a crash of the process but not of the machine (power loss, kernel
panic). Ingest answers 200 after the commit and the phone then forgets the body, so
the commit must reach the disk first; FULL fsyncs the WAL at every commit.

Busy. Writes run in ``BEGIN IMMEDIATE`` transactions, which take the write lock at the
start (so a transaction never fails halfway on a lock it cannot upgrade to). SQLite
itself waits up to ``busy_timeout_ms`` for the lock; when that wait is spent, the
attempt raises ``Busy`` and the journal core tries the whole transaction again
(``core.py``). That also covers a busy SQLite reports without waiting (when waiting
could deadlock). No sqlite3 exception leaves this module.

One writer per process at a time. SQLite's busy handler waits for the lock by sleeping
1, 2, 5, 10... ms between looks, so a thread that finds the lock taken sleeps at least
a millisecond even when the commit before it takes a tenth of that: with a few
deliveries at once, ingest's threads spent their time asleep beside a free lock. So
the threads of one process take turns at writing in Python first (``_WriteTurn``),
each woken the moment the writer before it is done, and meet SQLite's lock only with
other processes. The turn is waited for as SQLite's lock is, up to ``busy_timeout_ms``
or the write's bound, and a wait given up is ``Busy`` (bench/README.md, "bench_ingest").

Bounded writes. A write under a ``driver.write_bound`` waits for the lock at most until
the bound (a wait given up marks the bound ``waited``), and runs its statements with a
progress handler that interrupts them once the bound has passed: SQLite then rolls the
transaction back, and the attempt raises the bound's ``spent()`` error. The handler is
removed before COMMIT, so a write commits whole or not at all, and the write lock is
free as soon as the attempt returns.

The MCP SQL tool's guarded session (``SqliteGuard``, under ``healthlog.journal.guard``'s
policy) is here too: a backend is one driver module, which is why this one is 600 lines.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, closing, contextmanager, suppress
from typing import Any, TypeVar

from healthlog import errors, log
from healthlog.files import FILE_MODE, private_dirs, private_file
from healthlog.journal import guard as sql_guard
from healthlog.journal import rows
from healthlog.journal.core import GUARDED_STATEMENTS, STATEMENTS, SqlJournal
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
from healthlog.journal.showcase_writes import point_rows, series_keys
from healthlog.journal.statements import Statements
from healthlog.model import Item, Point, Record

logger = logging.getLogger("healthlog.journal")

T = TypeVar("T")

BACKEND = "sqlite"

# idle connections kept for reuse; more are opened when more threads call at once
_POOL_KEEP = 4
_FETCH = 1000
_LOCK_POLL_S = 0.02
# a bounded write's progress handler runs every this many virtual-machine instructions
# (tens of microseconds): the bound is overshot by about that much
_PROGRESS_OPS = 1000
_SQLITE_INTERRUPT = 9

# the unique columns of ``accounts``, as SQLite names them, by the error a duplicate gets
_TAKEN: dict[str, type[errors.AccountError]] = {
    "accounts.name": errors.AccountNameTaken,
    "accounts.token_hash": errors.TokenTaken,
    "accounts.id": errors.AccountIdTaken,
}


# --- errors at the edge --------------------------------------------------------------------


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _translate(exc: sqlite3.Error | OSError | OverflowError) -> errors.HealthlogError:
    """The port's error for a driver error (the caller raises it ``from`` exc)."""
    if isinstance(exc, OverflowError):  # the module's own: an int SQLite cannot hold
        return errors.ValueRefused("the journal cannot store a value (an integer too large)")
    if isinstance(exc, OSError):
        return errors.JournalUnavailable(f"the journal's folder failed ({exc})")
    if _is_busy(exc):
        return Busy()
    name = getattr(exc, "sqlite_errorname", type(exc).__name__)
    if isinstance(exc, sqlite3.DataError) or getattr(exc, "sqlite_errorcode", None) in (
        sqlite3.SQLITE_TOOBIG,
        sqlite3.SQLITE_MISMATCH,
    ):
        # the body's value, not the database: the same value fails every time
        return errors.ValueRefused(f"the journal cannot store a value ({name})")
    if isinstance(exc, sqlite3.IntegrityError):
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
            return errors.NoSuchAccount()  # the one foreign key: a delivery's account
        for column, taken in _TAKEN.items():
            if str(exc).endswith(column):  # "UNIQUE constraint failed: accounts.name"
                return taken()
    if isinstance(exc, sqlite3.IntegrityError | sqlite3.ProgrammingError | sqlite3.DataError):
        # the data or the statement is wrong, not the database: retrying will not help
        return errors.HealthlogError(f"the journal refused the statement ({name}: {exc})")
    return errors.JournalUnavailable(f"the journal failed ({name}: {exc})")


def _translated() -> AbstractContextManager[None]:
    return translated((sqlite3.Error, OSError, OverflowError), _translate)


# --- connections -----------------------------------------------------------------------------


class _Pool:
    """Idle connections, each handed to one thread at a time."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], keep: int) -> None:
        self._connect = connect
        self._keep = keep
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise errors.JournalUnavailable("the journal is closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect()
        try:
            yield conn
        finally:
            self._give_back(conn)

    def _give_back(self, conn: sqlite3.Connection) -> None:
        try:
            if conn.in_transaction:
                conn.rollback()
        except sqlite3.Error:
            conn.close()
            return
        with self._lock:
            if not self._closed and len(self._idle) < self._keep:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer
            buffer = ""
    if buffer.strip():
        yield buffer


# --- the driver ----------------------------------------------------------------------------


class _WriteTurn:
    """The turn of one of this process's threads to run a write transaction."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    @contextmanager
    def held(self, wait_s: float, bound: WriteBound | None) -> Iterator[None]:
        """The turn, waited for up to ``wait_s`` and the bound: else ``Busy`` (the
        bound marked ``waited``: others' time, as a wait for SQLite's lock is), or the
        bound's ``spent()`` when its time is gone already."""
        if bound is not None:
            wait_s = min(wait_s, bound.left_ms() / 1000)  # left_ms: spent() if none left
        # a busy timeout of years is a wait of as long as a lock can wait, not an error
        if not self._lock.acquire(timeout=min(wait_s, threading.TIMEOUT_MAX)):
            if bound is not None:
                bound.waited = True
            raise Busy()
        try:
            yield
        finally:
            self._lock.release()


class SqliteDriver:
    backend = BACKEND

    def __init__(self, path: str, *, busy_timeout_ms: int = 5000) -> None:
        if not path or path == ":memory:" or path.startswith("file:"):
            # every pooled connection must see the same database: a file path only
            raise errors.ConfigError("the SQLite journal needs a file path")
        if busy_timeout_ms < 0:
            raise errors.ConfigError("busy_timeout_ms must not be negative")
        self.path = path
        self.statements = Statements.load(
            BACKEND, param=":{}", required=(*STATEMENTS, *GUARDED_STATEMENTS)
        )
        self._busy_timeout_ms = busy_timeout_ms
        self.pool = _Pool(self._open, _POOL_KEEP)
        self._turn = _WriteTurn()

    def _open(self) -> sqlite3.Connection:
        # the journal holds health data: a new folder and database are the owner's only,
        # whatever the umask (SQLite gives its -wal and -shm files the database's mode)
        private_dirs(os.path.dirname(os.path.abspath(self.path)))
        with suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
            os.chmod(self.path, FILE_MODE)
        conn = sqlite3.connect(
            self.path,
            timeout=self._busy_timeout_ms / 1000,
            # explicit BEGIN/COMMIT only: the module never opens a transaction by itself
            isolation_level=None,
            check_same_thread=False,  # safe: the pool hands a connection to one thread
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                log.event(logger, logging.WARNING, "journal.no_wal", journal_mode=str(mode))
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            conn.close()
            raise
        return conn

    def attempt(
        self, work: Callable[[Connection], T], *, write: bool, consistent: bool = False
    ) -> T:
        if not write:
            # a deferred BEGIN reads one snapshot from its first read on (WAL): consistent
            return self._run(work, "BEGIN", None)
        bound = current_bound()
        with self._turn.held(self._busy_timeout_ms / 1000, bound):
            return self._run(work, "BEGIN IMMEDIATE", bound)

    def _run(self, work: Callable[[Connection], T], begin: str, bound: WriteBound | None) -> T:
        with _translated(), self.pool.connection() as conn:
            if bound is not None:
                return self._bounded(conn, bound, work)
            conn.execute(begin)
            # an error from ``work`` leaves the transaction open; the pool rolls it back
            result = work(conn)
            conn.execute("COMMIT")
            return result

    def _bounded(
        self, conn: sqlite3.Connection, bound: WriteBound, work: Callable[[Connection], T]
    ) -> T:
        """A write transaction that ends by ``bound.until``, or is rolled back there."""
        wait_ms = min(self._busy_timeout_ms, bound.left_ms())
        conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
        try:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):
                    bound.waited = True  # others held the lock: their time, not ours
                raise
            until, clock = bound.until, time.monotonic
            conn.set_progress_handler(lambda: 1 if clock() > until else 0, _PROGRESS_OPS)
            try:
                result = work(conn)
            except sqlite3.OperationalError as exc:
                if getattr(exc, "sqlite_errorcode", None) == _SQLITE_INTERRUPT:
                    # SQLite rolled the transaction back; the pool ends what is left of it
                    raise bound.spent() from exc
                raise
            finally:
                conn.set_progress_handler(None, 0)
            conn.execute("COMMIT")
            return result
        finally:
            with suppress(sqlite3.Error):
                conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")

    @contextmanager
    def streaming(self) -> Iterator[Rows]:
        # one read transaction: every statement of the stream sees one snapshot, and
        # writers go on beside it (WAL); the pool rolls it back however the stream ends
        with _translated(), self.pool.connection() as conn:
            conn.execute("BEGIN")

            def stream(sql: str, params: Params) -> Iterator[tuple[Any, ...]]:
                with _translated():
                    cursor = conn.execute(sql, params)
                    try:
                        while page := cursor.fetchmany(_FETCH):
                            yield from page
                    finally:
                        cursor.close()

            yield stream

    @contextmanager
    def fold_lock(self, wait_s: float) -> Iterator[bool]:
        """An ``flock`` on a file beside the database: the OS drops it if the holder dies.

        SQLite has no advisory locks; its own write lock is per transaction, and a pass
        is many transactions. One machine is SQLite's world, so a file lock spans every
        process that can open this journal.
        """
        deadline = time.monotonic() + wait_s
        try:
            private_dirs(os.path.dirname(os.path.abspath(self.path)))
            handle = os.fdopen(private_file(self.path + ".fold-lock"), "r+b")
        except OSError as exc:
            raise errors.JournalUnavailable("the fold lock file cannot be opened") from exc
        try:
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(_LOCK_POLL_S)
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        finally:
            handle.close()

    def run_script(self, conn: Connection, script: str) -> None:
        # statement by statement: executescript() would COMMIT the open transaction
        for statement in _statements(script):
            conn.execute(statement, {})

    def write_showcase(
        self, conn: Connection, layer: Layer, points: Sequence[Point], records: Sequence[Record]
    ) -> None:
        """Row by row: in process, a statement costs no round trip."""
        assert isinstance(conn, sqlite3.Connection)
        sql = self.statements
        if points:
            keys = series_keys(conn, sql, layer.account_id, points)
            conn.executemany(sql["upsert_point"], point_rows(points, keys, layer[1:]))
        if not records:
            return
        account_id, version = layer[0], layer[1:]
        record_values, item_values = rows.RECORD_VALUES, rows.ITEM_VALUES
        conn.executemany(sql["upsert_record"], (record_values(r) + layer for r in records))
        for record in records:
            by_series: dict[str, list[Item]] = {}
            for item in record.items:
                by_series.setdefault(item.series, []).append(item)
            owner = (account_id, record.section, record.identity)
            for series, items in by_series.items():
                key = (*owner, series)
                stored = conn.execute(sql["series_layer"], key).fetchone()
                if stored is not None and version < tuple(stored):
                    continue  # a newer layer carried this series: an older one changes nothing
                if stored is not None:  # a series no layer holds yet has no items either
                    conn.execute(sql["delete_series_items"], key)
                conn.executemany(sql["insert_item"], (owner + item_values(i) for i in items))
                conn.execute(sql["upsert_series"], key + version)

    def schema_version(self) -> int:
        """The newest migration applied, on a read-only connection of its own: a file
        that is not there is version 0 and is not made, and nothing is written."""
        if not os.path.isfile(self.path):
            return 0
        try:
            with closing(_read_only(self.path)) as conn:
                if not conn.execute(self.statements["has_migrations"]).fetchone()[0]:
                    return 0
                return int(conn.execute(self.statements["schema_version"]).fetchone()[0] or 0)
        except sqlite3.OperationalError:
            raise errors.HealthlogError(f"cannot read the journal at {self.path}") from None
        except sqlite3.DatabaseError:  # SQLITE_NOTADB, SQLITE_CORRUPT: not a journal's file
            raise errors.HealthlogError(
                f"the journal at {self.path} is not a SQLite database, or is damaged: "
                "point HEALTHLOG_JOURNAL_URL at the journal's file"
            ) from None

    def guarded_session(self, account_id: str, daily: sql_guard.Daily | None) -> SqliteGuard:
        return SqliteGuard(self.path, self.statements, account_id, daily)

    def close(self) -> None:
        self.pool.close()


# --- the SQL tool's guarded session -----------------------------------------------------------


def _read_only(path: str) -> sqlite3.Connection:
    """A connection to the file at ``path`` that cannot write it (``mode=ro``)."""
    uri = "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)


#: the journal's tables my_points joins: SQLite may read one of them for no column
_COLUMNLESS = frozenset({"series", "point_rows"})
_VIEW_BODY = re.compile(r"\s*CREATE\s+VIEW\s+\"?points\"?\s+AS\s+(.*)", re.I | re.S)


def _in_main(select: str) -> str:
    """``select`` (the ``points`` view's body) with each table it reads named as the
    journal's (``main.``): SQLite tells the authorizer no database for a read of no
    column of an unqualified table, which it must deny (a query's own ``count(*) FROM
    point_rows``). sqlglot, which the tool's check uses, rewrites the names only."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(select, read="sqlite")
    except SqlglotError:
        raise sqlite3.DatabaseError("the points view cannot be read") from None
    for table in tree.find_all(exp.Table):
        if not table.args.get("db"):
            table.set("db", exp.to_identifier("main"))
    return tree.sql(dialect="sqlite")


class SqliteGuard:
    """The SQL tool on a SQLite journal (``healthlog.journal.guard``'s policy, layer 2): a
    read-only connection of its own, the tool's views ``TEMP`` in it, an authorizer that
    lets a query read the journal's tables only through them, and its limits."""

    dialect: sql_guard.Dialect = "sqlite"

    def __init__(
        self,
        path: str,
        statements: Statements,
        account_id: str,
        daily: sql_guard.Daily | None = None,
    ) -> None:
        if not os.path.isfile(path):
            raise errors.HealthlogError("no journal file at the journal URL's path")
        self._conn = _read_only(path)
        self._sql = statements
        self._lock = threading.Lock()
        self._deadline = 0.0
        try:
            found = self._conn.execute(statements["guarded_names"])
            self._journal_tables = frozenset(str(name).lower() for (name,) in found)
            definition = self._conn.execute(statements["points_definition"]).fetchone()
            points = _VIEW_BODY.match(str(definition[0]) if definition else "")
            if points is None:
                raise sqlite3.DatabaseError("no points view")
            account = sql_guard.literal(account_id)
            # each view twice: under a name of this session's making, which alone may read
            # the journal's tables, and its own over that one. A query's CTE may take a
            # view's name (``WITH my_points AS (SELECT * FROM accounts)``), never one it
            # cannot know: the authorizer names the inner-most view that reads a table
            salt = secrets.token_hex(8)
            self._inner = {f"hl_{salt}_{name}" for name in sql_guard.VIEWS}
            for name in sql_guard.VIEWS:
                if name == sql_guard.DAILY:
                    continue
                fill = {"account": account}
                if name == "my_points":  # the one definition of points, read from the schema
                    fill["points"] = _in_main(points.group(1))
                body = statements.render(f"guarded_{name}", **fill)
                inner = f"hl_{salt}_{name}"
                self._conn.execute(statements.render("guarded_view", view=inner, body=body))
                outer = f"SELECT * FROM temp.{inner}"
                self._conn.execute(statements.render("guarded_view", view=name, body=outer))
            self._conn.execute(statements["guarded_my_daily"])
        except sqlite3.Error as exc:
            self._conn.close()
            raise errors.HealthlogError(
                f"the journal cannot be read ({type(exc).__name__})"
            ) from None
        self._conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        self._conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, sql_guard.VALUE_BYTES)
        self._daily = daily
        self._stamp: object = None
        self._conn.set_authorizer(self._authorize)
        self._conn.set_progress_handler(self._past_deadline, 10_000)

    def _fresh_daily(self) -> None:
        """``my_daily`` made again where the journal changed (the authorizer set aside
        for our own statements, the user's query not yet run)."""
        if self._daily is None or (stamp := self._daily.stamp()) == self._stamp:
            return
        found = list(self._daily.rows())
        self._conn.set_authorizer(None)
        try:
            self._conn.execute("BEGIN")
            self._conn.execute(self._sql["guarded_clear_daily"])
            self._conn.executemany(self._sql["guarded_add_daily"], found)
            self._conn.execute("COMMIT")
        finally:
            self._conn.set_authorizer(self._authorize)
        self._stamp = stamp

    def _authorize(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, view: str | None
    ) -> int:
        views = sql_guard.VIEWS
        if action == sqlite3.SQLITE_SELECT:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ:
            if db == "temp" and (arg1 in views or (arg1 in self._inner and view in views)):
                return sqlite3.SQLITE_OK  # a view, or the inner view it reads
            if db == "main" and view in self._inner:  # a journal table, read by one of ours
                return sqlite3.SQLITE_OK
            if db is None:
                # a common table expression reading itself (or another): no table of
                # any database. SQLite names no database for a read of no column of a
                # table either (``SELECT count(*) FROM point_rows``): a name of the
                # journal's is never a CTE's here, so that read is denied
                named = (arg1 or "").lower()
                return sqlite3.SQLITE_DENY if named in self._journal_tables else sqlite3.SQLITE_OK
            if db == "main" and arg1 in _COLUMNLESS and not arg2:
                # SQLite names no view for a join of my_points whose columns the query
                # does not use: a read of no column, no value
                return sqlite3.SQLITE_OK
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            denied = (arg2 or "").lower() in sql_guard.SQLITE_DENIED_FUNCTIONS
            return sqlite3.SQLITE_DENY if denied else sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_RECURSIVE:
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    def _past_deadline(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def run(self, sql: str, *, limit: int, timeout_s: float) -> sql_guard.Answer:
        sql_guard.check(sql, "sqlite")
        refused = sql_guard.Refused
        with self._lock:
            self._fresh_daily()
            self._deadline = time.monotonic() + timeout_s
            # the progress handler is checked between opcodes; a timer interrupts one
            # that runs long all the same (sqlite3_interrupt is safe from any thread)
            alarm = threading.Timer(timeout_s, self._conn.interrupt)
            alarm.daemon = True
            alarm.start()
            try:
                cursor = self._conn.execute(sql)
                try:
                    fetched = cursor.fetchmany(limit + 1)
                finally:
                    cursor.close()
            except sqlite3.OperationalError as exc:
                if "interrupted" in str(exc):
                    raise sql_guard.timed_out(timeout_s) from None
                raise refused(f"SQLite refused the query: {sql_guard.first_line(exc)}") from None
            except sqlite3.DataError as exc:  # a value past VALUE_BYTES
                raise refused(
                    f"SQLite refused the query: {sql_guard.first_line(exc)} (a value may be "
                    f"at most {sql_guard.VALUE_BYTES // (1024 * 1024)} MB)"
                ) from None
            except sqlite3.Error as exc:
                raise refused(f"SQLite refused the query: {sql_guard.first_line(exc)}") from None
            finally:
                alarm.cancel()
            columns = [d[0] for d in cursor.description or ()]
        return sql_guard.answer(columns, fetched, limit)

    def close(self) -> None:
        self._conn.close()


class SqliteJournal(SqlJournal):
    """The journal on a SQLite file."""

    def __init__(self, path: str, *, busy_timeout_ms: int = 5000, retries: int = 5) -> None:
        self.driver = SqliteDriver(path, busy_timeout_ms=busy_timeout_ms)
        self.path = path
        super().__init__(self.driver, retries=retries)
