"""The SQLite adapter of the Journal port: the embedded default (SPEC §2).

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
itself waits up to ``busy_timeout_ms`` for the lock; when that wait is spent, the whole
transaction is tried again after a short, jittered, doubling pause, ``retries`` more
times, and then ``JournalBusy`` is raised. The retry also covers a busy SQLite reports
without waiting (when waiting could deadlock). No sqlite3 exception leaves this module.
"""

from __future__ import annotations

import fcntl
import logging
import os
import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import TypeVar

import orjson

from healthlog import errors, ids, log
from healthlog.journal import migrate as migrations
from healthlog.journal import rows
from healthlog.journal import sqlite_showcase as showcase
from healthlog.journal.port import Journal
from healthlog.journal.rows import from_text as from_text
from healthlog.journal.rows import to_text as to_text
from healthlog.journal.sqlite_showcase import SqliteReads
from healthlog.model import Account, Cursor, Delivery, NewDelivery, ParseStatus, Point, Record

logger = logging.getLogger("healthlog.journal")

T = TypeVar("T")

BACKEND = "sqlite"

# the pause before retry n (0-based) is up to min(cap, base * 2**n), jittered so two
# waiting writers do not retry in step
_BACKOFF_BASE_S = 0.01
_BACKOFF_CAP_S = 0.2
# idle connections kept for reuse; more are opened when more threads call at once
_POOL_KEEP = 4

_sleep = time.sleep  # the one place the adapter waits; tests replace it

# --- SQL (named, fixed fragments; every value is a bound parameter) ----------------------

# The queue lookups name the partial index (INDEXED BY): SQLite documents the clause
# for exactly this, a time-sensitive query whose plan must not change silently. Without
# it the planner may pick deliveries_status, which holds the whole table; with it, a
# missing index is an error instead of a quiet slide into a bigger plan. They say
# `status = 'pending'` literally: the planner can only prove a partial index applies to
# a literal. The row value keeps the cursor one index SEARCH; the OR-expanded form
# (a > ? OR (a = ? AND b > ?)) makes SQLite scan.
PENDING_PAGE = """
SELECT received_at, id FROM deliveries INDEXED BY deliveries_pending
WHERE status = 'pending' AND (received_at, id) > (?, ?)
ORDER BY received_at, id
LIMIT ?"""

COUNT_PENDING = (
    "SELECT count(*) FROM deliveries INDEXED BY deliveries_pending WHERE status = 'pending'"
)

_INSERT_DELIVERY = """
INSERT INTO deliveries (id, account_id, received_at, archive_key, size, content_type, headers)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO NOTHING"""

_RECORD_MIGRATION = "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)"


# --- errors at the edge --------------------------------------------------------------------


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _translate(exc: sqlite3.Error) -> errors.HealthlogError:
    """The port's error for a driver error (the caller raises it ``from`` exc)."""
    if _is_busy(exc):
        return errors.JournalBusy()
    name = getattr(exc, "sqlite_errorname", type(exc).__name__)
    if isinstance(exc, sqlite3.IntegrityError | sqlite3.ProgrammingError | sqlite3.DataError):
        # the data or the statement is wrong, not the database: retrying will not help
        return errors.HealthlogError(f"the journal refused the statement ({name}: {exc})")
    return errors.JournalUnavailable(f"the journal failed ({name}: {exc})")


def _taken(exc: sqlite3.IntegrityError) -> str:
    """Which unique column of ``accounts`` an insert collided with."""
    text = str(exc)
    return "name" if "accounts.name" in text else "id" if "accounts.id" in text else "token"


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


class _MigrationSession:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def applied(self) -> set[int]:
        return {row[0] for row in self._conn.execute("SELECT version FROM schema_migrations")}

    def apply(self, migration: migrations.Migration) -> None:
        # statement by statement: executescript() would COMMIT the open transaction
        for statement in _statements(migration.sql):
            self._conn.execute(statement)
        self._conn.execute(
            _RECORD_MIGRATION, (migration.version, migration.name, to_text(ids.now()))
        )


def _statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer
            buffer = ""
    if buffer.strip():
        yield buffer


# --- the adapter ---------------------------------------------------------------------------


class SqliteJournal(SqliteReads):
    def __init__(self, path: str, *, busy_timeout_ms: int = 5000, retries: int = 5) -> None:
        if not path or path == ":memory:" or path.startswith("file:"):
            # every pooled connection must see the same database: a file path only
            raise errors.ConfigError("the SQLite journal needs a file path")
        if busy_timeout_ms < 0 or retries < 0:
            raise errors.ConfigError("busy_timeout_ms and retries must not be negative")
        self.path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._retries = retries
        self._pool = _Pool(self._open, _POOL_KEEP)

    @classmethod
    def from_url(cls, url: str, *, busy_timeout_ms: int = 5000, retries: int = 5) -> SqliteJournal:
        """``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``."""
        prefix = "sqlite:///"
        if not url.startswith(prefix) or url == prefix:
            raise errors.ConfigError(
                "a SQLite journal URL is sqlite:///relative/path.db or sqlite:////abs/path.db"
            )
        return cls(url.removeprefix(prefix), busy_timeout_ms=busy_timeout_ms, retries=retries)

    def _open(self) -> sqlite3.Connection:
        folder = os.path.dirname(os.path.abspath(self.path))
        # the journal holds health data: a new folder and database are the owner's only
        # (SQLite gives its -wal and -shm files the database file's permissions)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        with suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
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

    def _transaction(self, work: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        """Run ``work`` in one transaction, again on a busy database, then JournalBusy."""
        begin = "BEGIN IMMEDIATE" if write else "BEGIN"
        attempt = 0
        while True:
            try:
                with self._pool.connection() as conn:
                    conn.execute(begin)
                    result = work(conn)
                    conn.execute("COMMIT")
                    return result
            except sqlite3.Error as exc:
                # an error from ``work`` left the transaction open; the pool rolled it back
                if not _is_busy(exc):
                    raise _translate(exc) from exc
                if attempt >= self._retries:
                    raise errors.JournalBusy() from exc
            except OSError as exc:
                raise errors.JournalUnavailable(f"the journal's folder failed ({exc})") from exc
            pause = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)
            _sleep(pause * random.uniform(0.5, 1.0))  # noqa: S311  (jitter, not secrecy)
            attempt += 1

    def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return self._transaction(work, write=False)

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return self._transaction(work, write=True)

    def migrate(self, *, target: int | None = None) -> None:
        """Apply the migrations not applied yet, up to ``target`` (default: all)."""
        known = migrations.load(BACKEND)

        def work(conn: sqlite3.Connection) -> list[migrations.Migration]:
            conn.execute(migrations.SCHEMA_MIGRATIONS_DDL)
            return migrations.run(_MigrationSession(conn), known, target=target)

        migrations.log_applied(BACKEND, self._write(work))

    def close(self) -> None:
        self._pool.close()

    # --- the fold lock ------------------------------------------------------------------------

    @contextmanager
    def fold_lock(self, wait_s: float = 0.0) -> Iterator[bool]:
        """An ``flock`` on a file beside the database: the OS drops it if the holder dies.

        SQLite has no advisory locks; its own write lock is per transaction, and a pass
        is many transactions. One machine is SQLite's world, so a file lock spans every
        process that can open this journal.
        """
        deadline = time.monotonic() + wait_s
        try:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            handle = open(self.path + ".fold-lock", "a+b")  # noqa: SIM115
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
                    _sleep(0.02)
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        finally:
            handle.close()

    # --- accounts ---------------------------------------------------------------------------

    def add_account(
        self,
        name: str,
        token_hash: str,
        *,
        account_id: str | None = None,
        created_at: datetime | None = None,
    ) -> Account:
        account = Account(
            id=str(uuid.uuid4()) if account_id is None else account_id,
            name=name,
            created_at=ids.now() if created_at is None else created_at,
        )

        def work(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    "INSERT INTO accounts (id, name, token_hash, created_at) VALUES (?, ?, ?, ?)",
                    (account.id, name, token_hash, to_text(account.created_at)),
                )
            except sqlite3.IntegrityError as exc:
                raise errors.HealthlogError(f"an account with this {_taken(exc)} exists") from exc

        self._write(work)
        return account

    def set_token_hash(self, account_id: str, token_hash: str) -> None:
        def work(conn: sqlite3.Connection) -> None:
            try:
                changed = conn.execute(
                    "UPDATE accounts SET token_hash = ? WHERE id = ?", (token_hash, account_id)
                ).rowcount
            except sqlite3.IntegrityError as exc:
                raise errors.HealthlogError("an account with this token exists") from exc
            if changed != 1:
                raise errors.HealthlogError("no such account")

        self._write(work)

    def token_hash(self, account_id: str) -> str | None:
        sql = "SELECT token_hash FROM accounts WHERE id = ?"
        row = self._read(lambda conn: conn.execute(sql, (account_id,)).fetchone())
        return None if row is None else str(row[0])

    def account_by_token_hash(self, token_hash: str) -> Account | None:
        return self._one_account("token_hash = ?", token_hash)

    def get_account(self, account_id: str) -> Account | None:
        return self._one_account("id = ?", account_id)

    def _one_account(self, where: str, value: str) -> Account | None:
        sql = f"SELECT {rows.ACCOUNT_COLUMNS} FROM accounts WHERE {where}"
        row = self._read(lambda conn: conn.execute(sql, (value,)).fetchone())
        return None if row is None else rows.account(row, showcase.DIALECT)

    def accounts(self) -> list[Account]:
        sql = f"SELECT {rows.ACCOUNT_COLUMNS} FROM accounts ORDER BY name"
        found = self._read(lambda conn: conn.execute(sql).fetchall())
        return [rows.account(row, showcase.DIALECT) for row in found]

    def set_time_zone(self, account_id: str, time_zone: str) -> None:
        def work(conn: sqlite3.Connection) -> None:
            changed = conn.execute(
                "UPDATE accounts SET time_zone = ? WHERE id = ?", (time_zone, account_id)
            ).rowcount
            if changed != 1:
                raise errors.HealthlogError("no such account")

        self._write(work)

    # --- ingest -----------------------------------------------------------------------------

    def insert_delivery(self, new: NewDelivery) -> bool:
        params = (
            new.id,
            new.account_id,
            to_text(new.received_at),
            new.archive_key,
            new.size,
            new.content_type,
            orjson.dumps(new.headers).decode(),
        )

        def work(conn: sqlite3.Connection) -> bool:
            try:
                return conn.execute(_INSERT_DELIVERY, params).rowcount == 1
            except sqlite3.IntegrityError as exc:
                if exc.sqlite_errorcode == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
                    raise errors.NoSuchAccount() from exc
                raise

        return self._write(work)

    # --- the queue --------------------------------------------------------------------------

    def pending_page(self, after: Cursor, limit: int) -> list[Cursor]:
        if limit < 1:
            raise ValueError("limit must be positive")
        params = (to_text(after.received_at), after.id, limit)
        page = self._read(lambda conn: conn.execute(PENDING_PAGE, params).fetchall())
        return [Cursor(from_text(at), delivery_id) for at, delivery_id in page]

    def count_pending(self) -> int:
        count: int = self._read(lambda conn: conn.execute(COUNT_PENDING).fetchone()[0])
        return count

    def get_delivery(self, delivery_id: str) -> Delivery | None:
        sql = f"SELECT {rows.DELIVERY_COLUMNS} FROM deliveries WHERE id = ?"
        row = self._read(lambda conn: conn.execute(sql, (delivery_id,)).fetchone())
        return None if row is None else rows.delivery(row, showcase.DIALECT)

    def begin_attempt(self, delivery_id: str) -> int:
        def work(conn: sqlite3.Connection) -> int:
            counted = conn.execute(
                "UPDATE deliveries SET attempts = attempts + 1 WHERE id = ? RETURNING attempts",
                (delivery_id,),
            ).fetchall()  # all: the statement must be finished before COMMIT
            if not counted:
                raise errors.Conflict("the delivery is not in the journal")
            attempts: int = counted[0][0]
            return attempts

        return self._write(work)

    def release_attempt(self, delivery_id: str) -> None:
        self._write(
            lambda conn: conn.execute(
                "UPDATE deliveries SET attempts = max(attempts - 1, 0) WHERE id = ?",
                (delivery_id,),
            )
        )

    def write_outcome(
        self,
        delivery_id: str,
        *,
        expected: ParseStatus,
        status: ParseStatus,
        uncovered: tuple[str, ...],
        failure: str | None,
        points: Sequence[Point],
        records: Sequence[Record] = (),
    ) -> None:
        uncovered_json = orjson.dumps(uncovered).decode()

        def work(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT status, account_id, received_at FROM deliveries WHERE id = ?",
                (delivery_id,),
            ).fetchone()
            if row is None:
                raise errors.Conflict("the delivery is not in the journal")
            if row[0] != expected.value:
                raise errors.Conflict(
                    f"the delivery is {row[0]}, not {expected.value}; outcome not written"
                )
            # account, then the layer's version
            showcase.write(conn, (row[1], row[2], delivery_id), points, records)
            conn.execute(
                "UPDATE deliveries SET status = ?, uncovered = ?, failure = ?, points = ?,"
                " attempts = 0, folded_at = ? WHERE id = ?",
                (
                    status.value,
                    uncovered_json,
                    failure,
                    len(points),
                    to_text(ids.now()),
                    delivery_id,
                ),
            )

        self._write(work)

    # --- reading: the port's reads are SqliteReads (sqlite_showcase.py) ---------------------

    def _stream(self, read: Callable[[sqlite3.Connection], Iterator[T]]) -> Iterator[T]:
        """Yield what ``read`` yields from a pooled connection, outside a transaction."""
        # one statement is its own read snapshot; no retries once rows have been yielded
        try:
            with self._pool.connection() as conn:
                yield from read(conn)
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        except OSError as exc:
            raise errors.JournalUnavailable(f"the journal's folder failed ({exc})") from exc


def _conforms(journal: SqliteJournal) -> Journal:
    """mypy checks here that the adapter satisfies the port."""
    return journal
