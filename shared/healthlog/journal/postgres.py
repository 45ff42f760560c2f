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

The MCP SQL tool's guarded session (``PostgresGuard``: a session of the account's own
reader role, under ``healthlog.journal.guard``'s policy) is here too.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import secrets
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar, cast

import psycopg
from psycopg import errors as pg_errors

from healthlog import errors
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
from healthlog.journal.postgres_pool import Conn, Pool
from healthlog.journal.showcase_writes import point_rows, series_keys
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
        self.statements = Statements.load(
            BACKEND, param="%({})s", required=(*STATEMENTS, *GUARDED_STATEMENTS)
        )
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

    def schema_version(self) -> int:
        """The newest migration applied, read in a read-only transaction; 0 for none."""
        sql = self.statements

        def work(conn: Connection) -> int:
            if not conn.execute(sql["has_migrations"], {}).fetchone()[0]:
                return 0
            return int(conn.execute(sql["schema_version"], {}).fetchone()[0] or 0)

        try:
            with self.pool.connection() as lease, lease.conn.transaction():
                lease.conn.execute("SET TRANSACTION READ ONLY")
                return work(cast(Connection, lease.conn))
        except (psycopg.Error, errors.JournalUnavailable, errors.JournalBusy):
            raise errors.HealthlogError(
                "cannot reach the PostgreSQL journal (HEALTHLOG_JOURNAL_URL)"
            ) from None

    def guarded_session(self, account_id: str, daily: sql_guard.Daily | None) -> PostgresGuard:
        return PostgresGuard(self, account_id, daily)

    def close(self) -> None:
        self.pool.close()


# --- the SQL tool's guarded session -----------------------------------------------------------


class PostgresGuard:
    """The SQL tool on a PostgreSQL journal (``healthlog.journal.guard``'s policy, layer 2): a
    session of the account's reader role.

    Privilege, not only parsing: the journal's connection makes (idempotently) a schema
    and a login role of the account's own (``sql_guard.reader_name``), the views in that
    schema (``security_barrier``, each bound to the account by a literal), grants the
    role ``SELECT`` on those views alone and gives it a new random password; the tool's
    session then logs in *as that role*. Its session user is the reader, so no function
    that runs text (``ts_stat``, ``query_to_xml``), no attribute notation (``x.fn``),
    no ``set_config('role', ...)`` reaches a base table or another account's rows:
    PostgreSQL refuses them for want of a grant. The role's transactions are read-only,
    with a statement timeout; after each query its advisory locks are released and any
    large object it made is removed. The journal's role needs ``CREATEROLE`` (the
    database's owner or a superuser has it); without it the tool says so and runs
    nothing. Every statement is a ``guarded_*`` one of ``sql/postgres.sql``.
    """

    dialect: sql_guard.Dialect = "postgres"

    def __init__(
        self, driver: PostgresDriver, account_id: str, daily: sql_guard.Daily | None = None
    ) -> None:
        from psycopg import sql as pgsql

        self._driver, self._sql = driver, driver.statements
        self._lock = threading.Lock()
        self._daily, self._stamp = daily, cast(object, None)
        name = sql_guard.reader_name(account_id)
        password = secrets.token_urlsafe(32)
        try:
            with contextlib.closing(driver._open()) as owner:
                self._role = pgsql.Identifier(name).as_string(owner)
                self._make_reader(owner, name, pgsql.Literal(password).as_string(owner), account_id)
        except pg_errors.InsufficientPrivilege:
            raise errors.HealthlogError(
                "the SQL tool needs its own PostgreSQL role, and the journal's role may not "
                "create one: grant it CREATEROLE (ALTER ROLE ... CREATEROLE), or use the "
                "other tools"
            ) from None
        except psycopg.Error as exc:
            raise errors.HealthlogError(
                f"the journal cannot be read ({type(exc).__name__})"
            ) from None
        params = psycopg.conninfo.conninfo_to_dict(driver._url)
        params.update(user=name, password=password, connect_timeout=10)
        try:
            self._conn = psycopg.connect(**params, autocommit=False)  # type: ignore[arg-type]
        except psycopg.Error as exc:
            raise errors.HealthlogError(
                f"the SQL tool's role cannot sign in to the journal ({type(exc).__name__}): "
                "allow it in pg_hba.conf like the journal's own role"
            ) from None

    def _make_reader(self, owner: Conn, name: str, password: str, account_id: str) -> None:
        """The reader role, its schema and views, as the journal's role (autocommit)."""
        sql, role = self._sql, self._role
        if owner.execute(sql["guarded_role_exists"], {"role": name}).fetchone() is None:
            with contextlib.suppress(pg_errors.DuplicateObject):  # made meanwhile
                owner.execute(sql.render("guarded_create_role", role=role).encode())
        login = sql.render("guarded_role_login", role=role, password=password)
        owner.execute(login.encode())
        owner.execute(sql.render("guarded_role_settings", role=role).encode())
        account = sql_guard.literal(account_id)
        with owner.transaction():
            owner.execute(sql.render("guarded_schema", role=role).encode())
            for view in sql_guard.VIEWS:
                if view == sql_guard.DAILY:
                    continue
                body = sql.render(f"guarded_{view}", account=account)
                ddl = sql.render("guarded_view", role=role, view=view, body=body)
                owner.execute(ddl.encode())
            owner.execute(sql.render("guarded_my_daily", role=role).encode())
            owner.execute(sql.render("guarded_grant", role=role).encode())

    def run(self, sql: str, *, limit: int, timeout_s: float) -> sql_guard.Answer:
        sql_guard.check(sql, "postgres")
        with self._lock:
            self._fresh_daily()
            try:
                with self._conn.transaction():
                    self._conn.execute(self._sql["guarded_begin"].encode())
                    ms = str(max(1, int(timeout_s * 1000)))
                    self._conn.execute(self._sql.render("guarded_timeout", ms=ms).encode())
                    with self._conn.cursor(name="hl_sql_tool") as cursor:
                        cursor.execute(sql.encode())
                        fetched = cursor.fetchmany(limit + 1)
                        columns = [d.name for d in cursor.description or ()]
            except pg_errors.QueryCanceled:
                raise sql_guard.timed_out(timeout_s) from None
            except psycopg.Error as exc:
                what = f"{type(exc).__name__}, SQLSTATE {exc.sqlstate or '-'}"
                detail = exc.diag.message_primary or ""
                raise sql_guard.Refused(
                    f"PostgreSQL refused the query ({what}): {detail[:200]}"
                ) from None
            finally:
                self._tidy()
        return sql_guard.answer(columns, fetched, limit)

    def _fresh_daily(self) -> None:
        """``my_daily`` made again, by the journal's role, where the journal changed."""
        if self._daily is None or (stamp := self._daily.stamp()) == self._stamp:
            return
        found = list(self._daily.rows())
        clear = self._sql.render("guarded_clear_daily", role=self._role)
        add = self._sql.render("guarded_add_daily", role=self._role)

        def work(conn: Connection) -> None:
            pg = cast(Conn, conn)
            pg.execute(clear.encode())
            with pg.cursor() as cursor:
                cursor.executemany(add.encode(), found)

        try:
            self._driver.attempt(work, write=True)
        except errors.HealthlogError as exc:
            raise sql_guard.Refused(f"my_daily could not be made ({type(exc).__name__})") from None
        self._stamp = stamp

    def _tidy(self) -> None:
        """What a query may leave behind in the role's session: its advisory locks (the
        fold's among them) and large objects; none outlives the query."""
        try:
            with self._conn.transaction():
                self._conn.execute(self._sql["guarded_tidy"].encode())
        except psycopg.Error:
            self._conn.close()  # a session that cannot be tidied is not used again
            raise sql_guard.Refused(
                "the SQL tool's session ended; start the MCP server again"
            ) from None

    def close(self) -> None:
        self._conn.close()


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
