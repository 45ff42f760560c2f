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
import hashlib
import logging
import os
import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any, TypeVar

import orjson

from healthlog import errors, ids, log
from healthlog.journal import migrate as migrations
from healthlog.journal.port import Journal, StoredPoint, StoredRecord, Summary
from healthlog.model import (
    Account,
    Cursor,
    Delivery,
    Item,
    NewDelivery,
    ParseStatus,
    Point,
    Record,
)

logger = logging.getLogger("healthlog.journal")

T = TypeVar("T")

BACKEND = "sqlite"

# the pause before retry n (0-based) is up to min(cap, base * 2**n), jittered so two
# waiting writers do not retry in step
_BACKOFF_BASE_S = 0.01
_BACKOFF_CAP_S = 0.2
# idle connections kept for reuse; more are opened when more threads call at once
_POOL_KEEP = 4
_FETCH = 1000

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

_DELIVERY_COLUMNS = (
    "id, account_id, received_at, archive_key, size, content_type, status, uncovered,"
    " points, attempts, failure, folded_at, headers"
)

_INSERT_DELIVERY = """
INSERT INTO deliveries (id, account_id, received_at, archive_key, size, content_type, headers)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO NOTHING"""

# The layer guard: a stored point is overwritten only by a layer that is not older, so
# the newest layer wins whatever order deliveries are folded in, and refolding the same
# delivery rewrites the same values. The point's own columns come first so one tuple
# concatenation per point builds the parameters.
_UPSERT_POINT = """
INSERT INTO points (metric, field, source, start, utc_offset, "end", qty, text, unit, extra,
                    account_id, layer_received_at, layer_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (account_id, metric, start, field, source) DO UPDATE SET
    utc_offset = excluded.utc_offset,
    "end" = excluded."end",
    qty = excluded.qty,
    text = excluded.text,
    unit = excluded.unit,
    extra = excluded.extra,
    layer_received_at = excluded.layer_received_at,
    layer_id = excluded.layer_id
WHERE (excluded.layer_received_at, excluded.layer_id)
      >= (points.layer_received_at, points.layer_id)"""

_POINT_VALUES = attrgetter(
    "metric", "field", "source", "start", "utc_offset", "end", "qty", "text", "unit", "extra"
)

_POINT_COLUMNS = (
    'account_id, metric, field, source, start, utc_offset, "end", qty, text, unit, extra,'
    " layer_received_at, layer_id"
)

# Records: the same layer guard on the record row (its body); its series are guarded
# one by one through record_series (see 0004_records.sql).
_UPSERT_RECORD = """
INSERT INTO records (section, identity, start, "end", utc_offset, name, source, body,
                     account_id, layer_received_at, layer_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (account_id, section, identity) DO UPDATE SET
    start = excluded.start,
    "end" = excluded."end",
    utc_offset = excluded.utc_offset,
    name = excluded.name,
    source = excluded.source,
    body = excluded.body,
    layer_received_at = excluded.layer_received_at,
    layer_id = excluded.layer_id
WHERE (excluded.layer_received_at, excluded.layer_id)
      >= (records.layer_received_at, records.layer_id)"""

_RECORD_VALUES = attrgetter(
    "section", "identity", "start", "end", "utc_offset", "name", "source", "body"
)

_RECORD_COLUMNS = (
    'account_id, section, identity, start, "end", utc_offset, name, source, body,'
    " layer_received_at, layer_id"
)

_SERIES_KEY = "account_id = ? AND section = ? AND identity = ? AND series = ?"

_SERIES_LAYER = f"SELECT layer_received_at, layer_id FROM record_series WHERE {_SERIES_KEY}"

_DELETE_SERIES_ITEMS = f"DELETE FROM record_items WHERE {_SERIES_KEY}"

_INSERT_ITEM = """
INSERT INTO record_items (account_id, section, identity, series, seq, t, qty, lat, lon, alt,
                          unit, extra)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""

_UPSERT_SERIES = """
INSERT INTO record_series (account_id, section, identity, series, layer_received_at, layer_id)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (account_id, section, identity, series) DO UPDATE SET
    layer_received_at = excluded.layer_received_at,
    layer_id = excluded.layer_id"""

_ITEM_VALUES = attrgetter("seq", "t", "qty", "lat", "lon", "alt", "unit", "extra")

_ITEM_COLUMNS = "series, seq, t, qty, lat, lon, alt, unit, extra"

_RECORD_MIGRATION = "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)"


# --- times at the edge ---------------------------------------------------------------------


def to_text(at: datetime) -> str:
    """Fixed-width UTC text, so text order is time order (year 1 included)."""
    if at.tzinfo is None:
        raise ValueError("the journal stores aware datetimes only")
    u = at.astimezone(UTC)
    # by hand: strftime("%Y") gives "1", not "0001", for the zero cursor's year
    return (
        f"{u.year:04d}-{u.month:02d}-{u.day:02d}T"
        f"{u.hour:02d}:{u.minute:02d}:{u.second:02d}.{u.microsecond:06d}Z"
    )


def from_text(text: str) -> datetime:
    return datetime.fromisoformat(text)


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


class SqliteJournal:
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

        applied = self._write(work)
        if applied:
            log.event(
                logger,
                logging.INFO,
                "journal.migrated",
                backend=BACKEND,
                versions=[m.version for m in applied],
            )

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

    def add_account(self, name: str, token_hash: str) -> Account:
        account = Account(id=str(uuid.uuid4()), name=name, created_at=ids.now())

        def work(conn: sqlite3.Connection) -> None:
            try:
                conn.execute(
                    "INSERT INTO accounts (id, name, token_hash, created_at) VALUES (?, ?, ?, ?)",
                    (account.id, name, token_hash, to_text(account.created_at)),
                )
            except sqlite3.IntegrityError as exc:
                taken = "name" if "accounts.name" in str(exc) else "token"
                raise errors.HealthlogError(f"an account with this {taken} exists") from exc

        self._write(work)
        return account

    def account_by_token_hash(self, token_hash: str) -> Account | None:
        return self._one_account("token_hash = ?", token_hash)

    def get_account(self, account_id: str) -> Account | None:
        return self._one_account("id = ?", account_id)

    def _one_account(self, where: str, value: str) -> Account | None:
        sql = f"SELECT id, name, created_at, time_zone FROM accounts WHERE {where}"
        row = self._read(lambda conn: conn.execute(sql, (value,)).fetchone())
        return None if row is None else _account(row)

    def accounts(self) -> list[Account]:
        sql = "SELECT id, name, created_at, time_zone FROM accounts ORDER BY name"
        return [_account(row) for row in self._read(lambda conn: conn.execute(sql).fetchall())]

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
        rows = self._read(lambda conn: conn.execute(PENDING_PAGE, params).fetchall())
        return [Cursor(from_text(at), delivery_id) for at, delivery_id in rows]

    def count_pending(self) -> int:
        count: int = self._read(lambda conn: conn.execute(COUNT_PENDING).fetchone()[0])
        return count

    def get_delivery(self, delivery_id: str) -> Delivery | None:
        sql = f"SELECT {_DELIVERY_COLUMNS} FROM deliveries WHERE id = ?"
        row = self._read(lambda conn: conn.execute(sql, (delivery_id,)).fetchone())
        return None if row is None else _delivery(row)

    def begin_attempt(self, delivery_id: str) -> int:
        def work(conn: sqlite3.Connection) -> int:
            rows = conn.execute(
                "UPDATE deliveries SET attempts = attempts + 1 WHERE id = ? RETURNING attempts",
                (delivery_id,),
            ).fetchall()  # all: the statement must be finished before COMMIT
            if not rows:
                raise errors.Conflict("the delivery is not in the journal")
            attempts: int = rows[0][0]
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
            if points:
                layer = (row[1], row[2], delivery_id)  # account, then the layer's version
                conn.executemany(_UPSERT_POINT, (_POINT_VALUES(p) + layer for p in points))
            if records:
                _write_records(conn, row[1], (row[2], delivery_id), records)
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

    # --- reading ----------------------------------------------------------------------------

    def deliveries(
        self,
        *,
        status: ParseStatus | None = None,
        uncovered_key: str | None = None,
        account_id: str | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[Delivery]:
        where: list[str] = []
        params: list[object] = []
        if status is not None:
            where.append("status = ?")
            params.append(status.value)
        if account_id is not None:
            where.append("account_id = ?")
            params.append(account_id)
        if uncovered_key is not None:
            where.append("EXISTS (SELECT 1 FROM json_each(deliveries.uncovered) WHERE value = ?)")
            params.append(uncovered_key)
        order = "DESC" if newest_first else "ASC"
        sql = (
            f"SELECT {_DELIVERY_COLUMNS} FROM deliveries{_where(where)}"
            f" ORDER BY received_at {order}, id {order}"
        )
        if limit is not None:
            if limit < 0:
                raise ValueError("limit must not be negative")
            sql += " LIMIT ?"
            params.append(limit)
        rows = self._read(lambda conn: conn.execute(sql, params).fetchall())
        return [_delivery(row) for row in rows]

    def summary(self, account_id: str | None = None) -> Summary:
        # the same account filter, as a whole WHERE and as one more condition
        where, also = "", ""
        params: tuple[str, ...] = ()
        if account_id is not None:
            where, also, params = " WHERE account_id = ?", " AND account_id = ?", (account_id,)

        def work(conn: sqlite3.Connection) -> Summary:
            counts = {s.value: 0 for s in ParseStatus}
            counts.update(
                conn.execute(
                    f"SELECT status, count(*) FROM deliveries{where} GROUP BY status", params
                ).fetchall()
            )
            oldest = conn.execute(
                f"SELECT min(received_at) FROM deliveries WHERE status = 'pending'{also}", params
            ).fetchone()[0]
            last = conn.execute(
                f"SELECT max(received_at) FROM deliveries{where}", params
            ).fetchone()[0]
            uncovered = conn.execute(
                # DISTINCT: a list that names a key twice still counts one delivery
                "SELECT item.value, count(DISTINCT deliveries.id)"
                " FROM deliveries, json_each(deliveries.uncovered) AS item"
                f" WHERE deliveries.uncovered <> '[]'{also} GROUP BY item.value",
                params,
            ).fetchall()
            points = conn.execute(f"SELECT count(*) FROM points{where}", params).fetchone()[0]
            by_section = conn.execute(
                f"SELECT section, count(*) FROM records{where} GROUP BY section", params
            ).fetchall()
            return Summary(
                counts=counts,
                oldest_pending=None if oldest is None else from_text(oldest),
                last_delivery=None if last is None else from_text(last),
                uncovered=dict(uncovered),
                points=points,
                records=dict(by_section),
            )

        return self._read(work)

    def export_points(
        self,
        *,
        account_id: str | None = None,
        metric: str | None = None,
        start_from: str | None = None,
        start_to: str | None = None,
    ) -> Iterator[StoredPoint]:
        where: list[str] = []
        params: list[object] = []
        for clause, value in (
            ("account_id = ?", account_id),
            ("metric = ?", metric),
            ("start >= ?", start_from),
            ("start < ?", start_to),
        ):
            if value is not None:
                where.append(clause)
                params.append(value)
        sql = (
            f"SELECT {_POINT_COLUMNS} FROM points{_where(where)}"
            " ORDER BY account_id, metric, start, field, source"
        )
        return self._stream(sql, params)

    def export_records(
        self,
        *,
        account_id: str | None = None,
        section: str | None = None,
        start_from: str | None = None,
        start_to: str | None = None,
    ) -> Iterator[StoredRecord]:
        where: list[str] = []
        params: list[object] = []
        for clause, value in (
            ("account_id = ?", account_id),
            ("section = ?", section),
            ("start >= ?", start_from),
            ("start < ?", start_to),
        ):
            if value is not None:
                where.append(clause)
                params.append(value)
        sql = (
            f"SELECT {_RECORD_COLUMNS} FROM records{_where(where)}"
            " ORDER BY account_id, section, start, identity"
        )
        items_sql = (
            f"SELECT {_ITEM_COLUMNS} FROM record_items"
            " WHERE account_id = ? AND section = ? AND identity = ? ORDER BY series, seq"
        )
        try:
            with self._pool.connection() as conn:
                cursor = conn.execute(sql, params)
                try:
                    while rows := cursor.fetchmany(_FETCH):
                        for row in rows:
                            items = tuple(
                                Item(*r) for r in conn.execute(items_sql, row[:3]).fetchall()
                            )
                            yield StoredRecord(row[0], _record(row, items), row[10])
                finally:
                    cursor.close()
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        except OSError as exc:
            raise errors.JournalUnavailable(f"the journal's folder failed ({exc})") from exc

    def _stream(self, sql: str, params: Sequence[object]) -> Iterator[StoredPoint]:
        # one statement is its own read snapshot; no retries once rows have been yielded
        try:
            with self._pool.connection() as conn:
                cursor = conn.execute(sql, params)
                try:
                    while rows := cursor.fetchmany(_FETCH):
                        for row in rows:
                            yield StoredPoint(row[0], Point(*row[1:11]), row[12])
                finally:
                    cursor.close()
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        except OSError as exc:
            raise errors.JournalUnavailable(f"the journal's folder failed ({exc})") from exc

    def fingerprint(self, account_id: str | None = None) -> str:
        where = ""
        params: tuple[str, ...] = ()
        if account_id is not None:
            where, params = " WHERE account_id = ?", (account_id,)
        sql = (
            f"SELECT {_POINT_COLUMNS} FROM points{where}"
            " ORDER BY account_id, metric, start, field, source"
        )

        # records after points, so a showcase of points alone keeps its old fingerprint
        tables = [
            (sql, params),
            (f"SELECT {_RECORD_COLUMNS} FROM records{where} ORDER BY account_id, section, identity",
             params),
            (f"SELECT * FROM record_series{where} ORDER BY account_id, section, identity, series",
             params),
            (f"SELECT account_id, section, identity, {_ITEM_COLUMNS} FROM record_items{where}"
             " ORDER BY account_id, section, identity, series, seq", params),
        ]  # fmt: skip

        def work(conn: sqlite3.Connection) -> str:
            digest = hashlib.sha256()
            for number, (query, values) in enumerate(tables):
                # rows of the later tables carry their table's number: no row of one
                # table can read as a row of another, and empty tables add nothing
                tag = f"{number}:".encode() if number else b""
                for row in conn.execute(query, values):
                    digest.update(tag)
                    # repr of a tuple of str/int/float/None is canonical and unambiguous
                    # (strings quoted and escaped, floats shortest round-trip)
                    digest.update(repr(row).encode())
                    digest.update(b"\n")
            return digest.hexdigest()

        return self._read(work)


def _write_records(
    conn: sqlite3.Connection, account_id: str, layer: tuple[str, str], records: Sequence[Record]
) -> None:
    """Upsert each record under the layer guard; replace each series it carries if newer.

    A series the record does not carry (absent, null or empty) is left as it is: it is
    inherited from the older layer that carried it (SPEC §5).
    """
    tail = (account_id, *layer)
    conn.executemany(_UPSERT_RECORD, (_RECORD_VALUES(r) + tail for r in records))
    for record in records:
        by_series: dict[str, list[Item]] = {}
        for item in record.items:
            by_series.setdefault(item.series, []).append(item)
        for series, items in by_series.items():
            key = (account_id, record.section, record.identity, series)
            stored = conn.execute(_SERIES_LAYER, key).fetchone()
            if stored is not None and layer < tuple(stored):
                continue  # a newer layer carried this series: an older one changes nothing
            conn.execute(_DELETE_SERIES_ITEMS, key)
            conn.executemany(_INSERT_ITEM, (key + _ITEM_VALUES(i) for i in items))
            conn.execute(_UPSERT_SERIES, key + layer)


def _record(row: tuple[Any, ...], items: tuple[Item, ...]) -> Record:
    section, identity, start, end, utc_offset, name, source, body = row[1:9]
    return Record(section, identity, start, end, utc_offset, name, source, body, items)


def _where(clauses: list[str]) -> str:
    return " WHERE " + " AND ".join(clauses) if clauses else ""


def _account(row: tuple[Any, ...]) -> Account:
    return Account(id=row[0], name=row[1], created_at=from_text(row[2]), time_zone=row[3])


def _delivery(row: tuple[Any, ...]) -> Delivery:
    (id_, account_id, received_at, archive_key, size, content_type, status, uncovered) = row[:8]
    points, attempts, failure, folded_at, headers = row[8:]
    return Delivery(
        id=id_,
        account_id=account_id,
        received_at=from_text(received_at),
        archive_key=archive_key,
        size=size,
        content_type=content_type,
        status=ParseStatus(status),
        uncovered=tuple(orjson.loads(uncovered)),
        points=points,
        attempts=attempts,
        failure=failure,
        folded_at=None if folded_at is None else from_text(folded_at),
        headers=tuple((name, value) for name, value in orjson.loads(headers)),
    )


def _conforms(journal: SqliteJournal) -> Journal:
    """mypy checks here that the adapter satisfies the port."""
    return journal
