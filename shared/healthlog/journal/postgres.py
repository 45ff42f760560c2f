"""The PostgreSQL adapter of the Journal port: the scale-out journal (SPEC §2).

Connections. A small pool, like the SQLite adapter's: each call checks a connection out,
runs one transaction on it and gives it back, and a connection is used by one thread at
a time. Opening a connection costs about a hundred statements (4 ms against 0.04 ms on
this machine's loopback, more over a network and TLS), so they are kept. The pool is
bounded: a caller that finds every connection busy for ``lock_timeout_ms`` gets
``JournalBusy``, instead of a burst of threads exhausting the server's connections.
Sessions run in UTC with ``lock_timeout`` set, in autocommit mode: every transaction is
an explicit block, and no connection idles inside one.

Busy. A transaction that meets a lock held longer than ``lock_timeout_ms`` (55P03), a
deadlock (40P01) or a serialization failure (40001) is tried again after a short,
jittered, doubling pause, ``retries`` more times, and then ``JournalBusy`` is raised. A
pooled connection the server dropped while it idled (a restart, a failover, a Lambda
frozen between invocations) is replaced once without counting as a retry; any other
failure to reach the server is ``JournalUnavailable``. A refused statement (a constraint,
a value the database cannot store) is a plain ``HealthlogError``: retrying cannot help.
No psycopg exception leaves this module, and no message quotes a value.

Times are ``timestamptz``. The port's times that are fixed-width UTC text (a point's
``start`` and ``end``, a record's, an item's ``t``) go in as text, which the server
parses, and come out through ``to_text``: a showcase row reads back exactly as it was
written, and ``fingerprint`` hashes the very rows the SQLite adapter hashes.

The fold lock is a session-level advisory lock on a connection of its own, held for the
block: the server drops it when that session ends, also when the holder dies. Outcomes
are guarded by the expected status (``UPDATE ... WHERE status = expected``), which locks
the delivery row, so two writers can never both succeed; docs/architecture.md
("Concurrency") says why both exist.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from operator import attrgetter
from typing import Any, TypeVar

import orjson
import psycopg
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus
from psycopg.rows import TupleRow

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
Conn = psycopg.Connection[TupleRow]

BACKEND = "postgres"

# Advisory lock keys: fixed, and per database (two journals in two databases of one
# server do not exclude each other). The bytes spell what they lock.
FOLD_LOCK_KEY = int.from_bytes(b"hl:fold\0", "big")
MIGRATE_LOCK_KEY = int.from_bytes(b"hl:migr\0", "big")

# serialization_failure, deadlock_detected, lock_not_available: the transaction lost a
# race, not its footing; the same work a moment later will go through
_BUSY_STATES = frozenset({"40001", "40P01", "55P03"})

# the pause before retry n (0-based) is up to min(cap, base * 2**n), jittered so two
# waiting writers do not retry in step
_BACKOFF_BASE_S = 0.01
_BACKOFF_CAP_S = 0.2
# idle connections kept for reuse, and connections open at once (the fold lock's own
# connection is not counted)
_POOL_KEEP = 4
_POOL_SIZE = 10
_FETCH = 1000
# the fold lock's session tells the server to probe a silent client after 30 s and to
# give up after three unanswered probes, so a holder whose machine vanished (not only
# its process) releases the lock within about a minute instead of the OS's two hours
_LOCK_KEEPALIVES = (
    "SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; SET tcp_keepalives_count = 3"
)

_sleep = time.sleep  # the one place the adapter pauses between retries; tests replace it

# --- SQL (named, fixed fragments; every value is a bound parameter) ----------------------

# The queue lookups say `status = 'pending'` literally: the planner can only prove the
# partial index deliveries_pending applies to a literal (also in a prepared statement's
# generic plan). The row value is one index condition: a range of that index from the
# cursor on, in order, with no sort.
PENDING_PAGE = """
SELECT received_at, id FROM deliveries
WHERE status = 'pending' AND (received_at, id) > (%s, %s)
ORDER BY received_at, id
LIMIT %s"""

COUNT_PENDING = "SELECT count(*) FROM deliveries WHERE status = 'pending'"

_DELIVERY_COLUMNS = (
    "id, account_id, received_at, archive_key, size, content_type, status, uncovered,"
    " points, attempts, failure, folded_at, headers"
)

_INSERT_DELIVERY = """
INSERT INTO deliveries (id, account_id, received_at, archive_key, size, content_type, headers)
VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb)
ON CONFLICT (id) DO NOTHING"""

# The status guard and the outcome in one statement: the UPDATE locks the delivery row,
# so a second writer waits for the first to commit, then finds the status changed and
# updates nothing (READ COMMITTED re-checks the WHERE on the row's newest version).
_WRITE_OUTCOME = """
UPDATE deliveries
SET status = %s, uncovered = %s::text[], failure = %s, points = %s, attempts = 0,
    folded_at = %s
WHERE id = %s AND status = %s
RETURNING account_id, received_at"""

# Points, records and items go in by COPY into the session's temporary tables, then one
# upsert each from there: for 100k points it took 0.7-1.4 s against 2-4 s for
# executemany (pipelined) and 1.3-2 s for an INSERT from unnest(arrays); for 100 points
# all three take ~5 ms. ``n`` is the position in the delivery, so the last of two
# entries with one key wins, as row-by-row upserts would have it.
_INCOMING = """
CREATE TEMPORARY TABLE IF NOT EXISTS incoming_points (
    n integer NOT NULL,
    metric text COLLATE "C" NOT NULL,
    field text COLLATE "C" NOT NULL,
    source text COLLATE "C" NOT NULL,
    start timestamptz NOT NULL,
    utc_offset integer,
    "end" timestamptz,
    qty double precision,
    text text,
    unit text NOT NULL,
    extra text
) ON COMMIT DELETE ROWS;
CREATE TEMPORARY TABLE IF NOT EXISTS incoming_records (
    n integer NOT NULL,
    section text COLLATE "C" NOT NULL,
    identity text COLLATE "C" NOT NULL,
    start timestamptz,
    "end" timestamptz,
    utc_offset integer,
    name text,
    source text,
    body text NOT NULL
) ON COMMIT DELETE ROWS;
CREATE TEMPORARY TABLE IF NOT EXISTS incoming_items (
    n integer NOT NULL,
    section text COLLATE "C" NOT NULL,
    identity text COLLATE "C" NOT NULL,
    series text COLLATE "C" NOT NULL,
    seq integer NOT NULL,
    t timestamptz,
    qty double precision,
    lat double precision,
    lon double precision,
    alt double precision,
    unit text,
    extra text
) ON COMMIT DELETE ROWS"""

_COPY_POINTS = (
    'COPY incoming_points (n, metric, field, source, start, utc_offset, "end", qty, text,'
    " unit, extra) FROM STDIN"
)

# The layer guard: a stored point is overwritten only by a layer that is not older, so
# the newest layer wins whatever order deliveries are folded in, and refolding the same
# delivery rewrites the same values. One statement may not update a row twice, so a key
# the delivery carries twice keeps its last point (as row-by-row upserts would); the
# sort also takes the rows' locks in key order, so two folds of overlapping deliveries
# queue behind each other instead of deadlocking.
_UPSERT_POINTS = """
INSERT INTO points (account_id, metric, field, source, start, utc_offset, "end", qty, text,
                    unit, extra, layer_received_at, layer_id)
SELECT DISTINCT ON (i.metric, i.start, i.field, i.source)
       %s, i.metric, i.field, i.source, i.start, i.utc_offset, i."end", i.qty, i.text,
       i.unit, i.extra, %s, %s
FROM incoming_points AS i
ORDER BY i.metric, i.start, i.field, i.source, i.n DESC
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

# Records: the same layer guard on the record row (its body); its series are guarded one
# by one through record_series (see 0004_records.sql).
_COPY_RECORDS = (
    'COPY incoming_records (n, section, identity, start, "end", utc_offset, name, source,'
    " body) FROM STDIN"
)

_RECORD_VALUES = attrgetter(
    "section", "identity", "start", "end", "utc_offset", "name", "source", "body"
)

_UPSERT_RECORDS = """
INSERT INTO records (account_id, section, identity, start, "end", utc_offset, name, source,
                     body, layer_received_at, layer_id)
SELECT DISTINCT ON (i.section, i.identity)
       %s, i.section, i.identity, i.start, i."end", i.utc_offset, i.name, i.source, i.body,
       %s, %s
FROM incoming_records AS i
ORDER BY i.section, i.identity, i.n DESC
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

_COPY_ITEMS = (
    "COPY incoming_items (n, section, identity, series, seq, t, qty, lat, lon, alt, unit,"
    " extra) FROM STDIN"
)

_ITEM_VALUES = attrgetter("series", "seq", "t", "qty", "lat", "lon", "alt", "unit", "extra")

# A series the delivery carries passes to its layer unless a newer layer holds it; the
# series this layer won lose their stored items. (The upsert locks each series row, also
# where the guard refuses it, so two writers of one series take turns.)
_CLAIM_SERIES = """
WITH won AS (
    INSERT INTO record_series (account_id, section, identity, series, layer_received_at,
                               layer_id)
    SELECT DISTINCT ON (i.section, i.identity, i.series)
           %(account)s, i.section, i.identity, i.series, %(at)s, %(id)s
    FROM incoming_items AS i
    ORDER BY i.section, i.identity, i.series
    ON CONFLICT (account_id, section, identity, series) DO UPDATE SET
        layer_received_at = excluded.layer_received_at,
        layer_id = excluded.layer_id
    WHERE (excluded.layer_received_at, excluded.layer_id)
          >= (record_series.layer_received_at, record_series.layer_id)
    RETURNING section, identity, series
)
DELETE FROM record_items AS r
USING won
WHERE r.account_id = %(account)s
  AND (r.section, r.identity, r.series) = (won.section, won.identity, won.series)"""

# ... and get this delivery's items for them: those of the last record that carries
# the series (a record twice in one delivery), into the series this layer now holds.
_INSERT_ITEMS = """
INSERT INTO record_items (account_id, section, identity, series, seq, t, qty, lat, lon, alt,
                          unit, extra)
SELECT s.account_id, i.section, i.identity, i.series, i.seq, i.t, i.qty, i.lat, i.lon,
       i.alt, i.unit, i.extra
FROM incoming_items AS i
JOIN (SELECT section, identity, series, max(n) AS n
      FROM incoming_items GROUP BY section, identity, series) AS last
  USING (section, identity, series, n)
JOIN record_series AS s
  ON s.account_id = %(account)s
 AND (s.section, s.identity, s.series) = (i.section, i.identity, i.series)
 AND (s.layer_received_at, s.layer_id) = (%(at)s, %(id)s)
ORDER BY i.section, i.identity, i.series, i.seq"""

_RECORD_COLUMNS = (
    'account_id, section, identity, start, "end", utc_offset, name, source, body,'
    " layer_received_at, layer_id"
)

_ITEM_COLUMNS = "series, seq, t, qty, lat, lon, alt, unit, extra"

# the items of a page of records, in one statement
_ITEMS_OF = f"""
SELECT account_id, section, identity, {_ITEM_COLUMNS}
FROM record_items
JOIN unnest(%s::text[], %s::text[], %s::text[]) AS k (account_id, section, identity)
  USING (account_id, section, identity)
ORDER BY account_id, section, identity, series, seq"""

_RECORD_MIGRATION = "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)"

# a consistent view across the statements of one report (summary)
_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"


# --- times at the edge ---------------------------------------------------------------------

_FIRST = datetime.min.replace(tzinfo=UTC)
_LAST = datetime.max.replace(tzinfo=UTC)
_SPAN_US = (_LAST - _FIRST) // timedelta(microseconds=1)


def to_text(at: datetime) -> str:
    """The port's fixed-width UTC text, so text order is time order (year 1 included)."""
    if at.tzinfo is None:
        raise ValueError("the journal stores aware datetimes only")
    u = at.astimezone(UTC)
    return (
        f"{u.year:04d}-{u.month:02d}-{u.day:02d}T"
        f"{u.hour:02d}:{u.minute:02d}:{u.second:02d}.{u.microsecond:06d}Z"
    )


def first_at_or_after(prefix: str) -> datetime | None:
    """The first instant whose text sorts at or after ``prefix``; None if none does.

    ``to_text`` is monotonic, so ``start >= first_at_or_after(p)`` holds exactly when
    ``to_text(start) >= p``: the export's text bounds (a prefix such as ``2024-01-31``
    works) become instants the primary key can range over. A binary search over the
    microseconds of years 1-9999: about sixty formattings.
    """
    if to_text(_LAST) < prefix:
        return None
    low, high = 0, _SPAN_US  # the text at ``high`` is always >= prefix
    while low < high:
        middle = (low + high) // 2
        if to_text(_FIRST + timedelta(microseconds=middle)) >= prefix:
            high = middle
        else:
            low = middle + 1
    return _FIRST + timedelta(microseconds=low)


def _optional_text(at: datetime | None) -> str | None:
    return None if at is None else to_text(at)


# --- errors at the edge --------------------------------------------------------------------


def _is_busy(exc: psycopg.Error) -> bool:
    return exc.sqlstate in _BUSY_STATES


def _translate(exc: psycopg.Error) -> errors.HealthlogError:
    """The port's error for a driver error (the caller raises it ``from`` exc).

    Messages name the error class and SQLSTATE only: the server's text may quote the
    value it refused, and that could be health data.
    """
    if _is_busy(exc):
        return errors.JournalBusy()
    what = f"{type(exc).__name__}, SQLSTATE {exc.sqlstate or '-'}"
    if isinstance(exc, pg_errors.UndefinedTable | pg_errors.UndefinedColumn):
        return errors.JournalUnavailable(f"the journal is not migrated ({what})")
    if isinstance(
        exc,
        psycopg.IntegrityError | psycopg.DataError | psycopg.ProgrammingError,
    ):
        # the data or the statement is wrong, not the database: retrying will not help
        return errors.HealthlogError(f"the journal refused the statement ({what})")
    return errors.JournalUnavailable(f"the journal failed ({what})")


# --- connections -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Lease:
    conn: Conn
    #: it came from the idle list (and may have been dropped by the server meanwhile)
    reused: bool


class _Pool:
    """Idle connections, each handed to one thread at a time; at most ``size`` open."""

    def __init__(self, connect: Callable[[], Conn], keep: int, size: int, wait_s: float):
        self._connect = connect
        self._keep = keep
        self._wait_s = wait_s
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[Conn] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[_Lease]:
        if not self._slots.acquire(timeout=self._wait_s):
            raise errors.JournalBusy("every journal connection stayed in use")
        try:
            with self._lock:
                if self._closed:
                    raise errors.JournalUnavailable("the journal is closed")
                conn = self._idle.pop() if self._idle else None
            lease = _Lease(self._connect(), False) if conn is None else _Lease(conn, True)
            try:
                yield lease
            finally:
                self._give_back(lease.conn)
        finally:
            self._slots.release()

    def _give_back(self, conn: Conn) -> None:
        if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
            try:
                conn.rollback()
            except psycopg.Error:
                conn.close()
        with self._lock:
            if not conn.closed and not self._closed and len(self._idle) < self._keep:
                self._idle.append(conn)
                return
        conn.close()

    def drop_idle(self) -> None:
        """Close the idle connections: after one was found dead, the rest likely are."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.drop_idle()


class _MigrationSession:
    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    def applied(self) -> set[int]:
        return {row[0] for row in self._conn.execute("SELECT version FROM schema_migrations")}

    def apply(self, migration: migrations.Migration) -> None:
        # a script without parameters goes as one simple query, in the open transaction
        self._conn.execute(migration.sql)
        self._conn.execute(
            _RECORD_MIGRATION, (migration.version, migration.name, to_text(ids.now()))
        )


# --- the adapter ---------------------------------------------------------------------------


class PostgresJournal:
    def __init__(
        self,
        url: str,
        *,
        retries: int = 5,
        lock_timeout_ms: int = 5000,
        connect_timeout_s: float = 5,
        pool_size: int = _POOL_SIZE,
    ) -> None:
        if not url.startswith(("postgresql://", "postgres://")):
            raise errors.ConfigError("a PostgreSQL journal URL starts with postgresql://")
        if retries < 0 or lock_timeout_ms <= 0 or connect_timeout_s <= 0 or pool_size < 1:
            # lock_timeout 0 would mean "wait forever" to PostgreSQL
            raise errors.ConfigError(
                "retries must not be negative; lock_timeout_ms, connect_timeout_s and"
                " pool_size must be positive"
            )
        self._url = url
        self._retries = retries
        self._lock_timeout_ms = int(lock_timeout_ms)
        # libpq counts whole seconds
        self._connect_timeout_s = max(1, math.ceil(connect_timeout_s))
        self._pool = _Pool(self._open, _POOL_KEEP, pool_size, lock_timeout_ms / 1000)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        retries: int = 5,
        lock_timeout_ms: int = 5000,
        connect_timeout_s: float = 5,
    ) -> PostgresJournal:
        """``postgresql://user:password@host:port/database?sslmode=...`` (libpq's URL)."""
        return cls(
            url,
            retries=retries,
            lock_timeout_ms=lock_timeout_ms,
            connect_timeout_s=connect_timeout_s,
        )

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

    def _transaction(self, work: Callable[[Conn], T], *, snapshot: bool = False) -> T:
        """Run ``work`` in one transaction, again on a busy database, then JournalBusy."""
        attempt = 0
        replaced_stale = False
        while True:
            with self._pool.connection() as lease:
                try:
                    with lease.conn.transaction():
                        if snapshot:
                            lease.conn.execute(_SNAPSHOT)
                        return work(lease.conn)
                except psycopg.Error as exc:
                    if _is_busy(exc):
                        if attempt >= self._retries:
                            raise errors.JournalBusy() from exc
                    elif lease.reused and lease.conn.broken and not replaced_stale:
                        # the server dropped this idle connection; a fresh one may work
                        self._pool.drop_idle()
                        replaced_stale = True
                        continue
                    else:
                        raise _translate(exc) from exc
            pause = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)
            _sleep(pause * random.uniform(0.5, 1.0))  # noqa: S311  (jitter, not secrecy)
            attempt += 1

    def migrate(self, *, target: int | None = None) -> None:
        """Apply the migrations not applied yet, up to ``target`` (default: all).

        Under a transaction-scoped advisory lock: a second process starting at once
        waits, then finds them applied.
        """
        known = migrations.load(BACKEND)

        def work(conn: Conn) -> list[migrations.Migration]:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK_KEY,))
            conn.execute(migrations.SCHEMA_MIGRATIONS_DDL)
            return migrations.run(_MigrationSession(conn), known, target=target)

        applied = self._transaction(work)
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
        """A session-level advisory lock on a connection held for the block.

        The waiting form blocks in ``pg_advisory_lock`` under a ``lock_timeout`` of
        ``wait_s``, so a waiter gets the lock the moment it is released, with no polling.
        """
        conn = self._open()  # its own session: a pooled one could already hold the lock
        try:
            try:
                conn.execute(_LOCK_KEEPALIVES)
                if wait_s > 0:
                    conn.execute(f"SET lock_timeout = {max(1, round(wait_s * 1000))}")
                    try:
                        conn.execute("SELECT pg_advisory_lock(%s)", (FOLD_LOCK_KEY,))
                        held = True
                    except pg_errors.LockNotAvailable:
                        held = False
                else:
                    row = conn.execute(
                        "SELECT pg_try_advisory_lock(%s)", (FOLD_LOCK_KEY,)
                    ).fetchone()
                    held = bool(row and row[0])
            except psycopg.Error as exc:
                raise _translate(exc) from exc
            yield held
            if held:
                # at once, so the next holder need not wait for the session to end (if
                # this fails, closing the session below releases it all the same)
                with contextlib.suppress(psycopg.Error):
                    conn.execute("SELECT pg_advisory_unlock(%s)", (FOLD_LOCK_KEY,))
        finally:
            conn.close()

    # --- accounts ---------------------------------------------------------------------------

    def add_account(self, name: str, token_hash: str) -> Account:
        account = Account(id=str(uuid.uuid4()), name=name, created_at=ids.now())

        def work(conn: Conn) -> None:
            try:
                conn.execute(
                    "INSERT INTO accounts (id, name, token_hash, created_at)"
                    " VALUES (%s, %s, %s, %s)",
                    (account.id, name, token_hash, account.created_at),
                )
            except pg_errors.UniqueViolation as exc:
                taken = "name" if exc.diag.constraint_name == "accounts_name_key" else "token"
                raise errors.HealthlogError(f"an account with this {taken} exists") from exc

        self._transaction(work)
        return account

    def account_by_token_hash(self, token_hash: str) -> Account | None:
        return self._one_account("token_hash = %s", token_hash)

    def get_account(self, account_id: str) -> Account | None:
        return self._one_account("id = %s", account_id)

    def _one_account(self, where: str, value: str) -> Account | None:
        sql = f"SELECT id, name, created_at, time_zone FROM accounts WHERE {where}"
        row = self._transaction(lambda conn: conn.execute(sql, (value,)).fetchone())
        return None if row is None else Account(*row)

    def accounts(self) -> list[Account]:
        sql = "SELECT id, name, created_at, time_zone FROM accounts ORDER BY name"
        return [
            Account(*row) for row in self._transaction(lambda conn: conn.execute(sql).fetchall())
        ]

    def set_time_zone(self, account_id: str, time_zone: str) -> None:
        def work(conn: Conn) -> None:
            changed = conn.execute(
                "UPDATE accounts SET time_zone = %s WHERE id = %s", (time_zone, account_id)
            ).rowcount
            if changed != 1:
                raise errors.HealthlogError("no such account")

        self._transaction(work)

    # --- ingest -----------------------------------------------------------------------------

    def insert_delivery(self, new: NewDelivery) -> bool:
        params = (
            new.id,
            new.account_id,
            new.received_at,
            new.archive_key,
            new.size,
            new.content_type,
            orjson.dumps(new.headers).decode(),
        )

        def work(conn: Conn) -> bool:
            try:
                return conn.execute(_INSERT_DELIVERY, params).rowcount == 1
            except pg_errors.ForeignKeyViolation as exc:
                raise errors.NoSuchAccount() from exc

        return self._transaction(work)

    # --- the queue --------------------------------------------------------------------------

    def pending_page(self, after: Cursor, limit: int) -> list[Cursor]:
        if limit < 1:
            raise ValueError("limit must be positive")
        params = (after.received_at, after.id, limit)
        rows = self._transaction(lambda conn: conn.execute(PENDING_PAGE, params).fetchall())
        return [Cursor(at, delivery_id) for at, delivery_id in rows]

    def count_pending(self) -> int:
        row = self._transaction(lambda conn: conn.execute(COUNT_PENDING).fetchone())
        return 0 if row is None else int(row[0])

    def get_delivery(self, delivery_id: str) -> Delivery | None:
        sql = f"SELECT {_DELIVERY_COLUMNS} FROM deliveries WHERE id = %s"
        row = self._transaction(lambda conn: conn.execute(sql, (delivery_id,)).fetchone())
        return None if row is None else _delivery(row)

    def begin_attempt(self, delivery_id: str) -> int:
        def work(conn: Conn) -> int:
            row = conn.execute(
                "UPDATE deliveries SET attempts = attempts + 1 WHERE id = %s RETURNING attempts",
                (delivery_id,),
            ).fetchone()
            if row is None:
                raise errors.Conflict("the delivery is not in the journal")
            return int(row[0])

        return self._transaction(work)

    def release_attempt(self, delivery_id: str) -> None:
        self._transaction(
            lambda conn: conn.execute(
                "UPDATE deliveries SET attempts = greatest(attempts - 1, 0) WHERE id = %s",
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
        def work(conn: Conn) -> None:
            row = conn.execute(
                _WRITE_OUTCOME,
                (
                    status.value,
                    list(uncovered),
                    failure,
                    len(points),
                    ids.now(),
                    delivery_id,
                    expected.value,
                ),
            ).fetchone()
            if row is None:
                found = conn.execute(
                    "SELECT status FROM deliveries WHERE id = %s", (delivery_id,)
                ).fetchone()
                if found is None:
                    raise errors.Conflict("the delivery is not in the journal")
                raise errors.Conflict(
                    f"the delivery is {found[0]}, not {expected.value}; outcome not written"
                )
            if points or records:
                account_id, received_at = row
                layer = (account_id, received_at, delivery_id)
                conn.execute(_INCOMING)
                if points:
                    _upsert_points(conn, points, layer)
                if records:
                    _upsert_records(conn, records, layer)

        self._transaction(work)

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
            where.append("status = %s")
            params.append(status.value)
        if account_id is not None:
            where.append("account_id = %s")
            params.append(account_id)
        if uncovered_key is not None:
            where.append("%s = ANY (uncovered)")
            params.append(uncovered_key)
        order = "DESC" if newest_first else "ASC"
        sql = (
            f"SELECT {_DELIVERY_COLUMNS} FROM deliveries{_where(where)}"
            f" ORDER BY received_at {order}, id {order}"
        )
        if limit is not None:
            if limit < 0:
                raise ValueError("limit must not be negative")
            sql += " LIMIT %s"
            params.append(limit)
        rows = self._transaction(lambda conn: conn.execute(sql, params).fetchall())
        return [_delivery(row) for row in rows]

    def summary(self, account_id: str | None = None) -> Summary:
        # the same account filter, as a whole WHERE and as one more condition
        where, also = "", ""
        params: tuple[str, ...] = ()
        if account_id is not None:
            where, also, params = " WHERE account_id = %s", " AND account_id = %s", (account_id,)

        def one(conn: Conn, sql: str) -> tuple[Any, ...]:
            row = conn.execute(sql, params).fetchone()
            assert row is not None  # an aggregate without GROUP BY always has a row
            return row

        def work(conn: Conn) -> Summary:
            # the queue from its partial index, the settled rows from theirs (0001)
            pending, oldest = one(
                conn,
                f"SELECT count(*), min(received_at) FROM deliveries WHERE status = 'pending'{also}",
            )
            counts = {s.value: 0 for s in ParseStatus}
            counts.update(
                conn.execute(
                    "SELECT status, count(*) FROM deliveries"
                    f" WHERE status <> 'pending'{also} GROUP BY status",
                    params,
                ).fetchall()
            )
            counts[ParseStatus.PENDING.value] = pending
            uncovered = conn.execute(
                # DISTINCT: a list that names a key twice still counts one delivery
                "SELECT key, count(DISTINCT deliveries.id)"
                " FROM deliveries, unnest(deliveries.uncovered) AS key"
                f" WHERE deliveries.uncovered <> '{{}}'{also} GROUP BY key",
                params,
            ).fetchall()
            by_section = conn.execute(
                f"SELECT section, count(*) FROM records{where} GROUP BY section", params
            ).fetchall()
            return Summary(
                counts=counts,
                oldest_pending=oldest,
                last_delivery=one(conn, f"SELECT max(received_at) FROM deliveries{where}")[0],
                uncovered=dict(uncovered),
                points=one(conn, f"SELECT count(*) FROM points{where}")[0],
                records=dict(by_section),
            )

        return self._transaction(work, snapshot=True)

    def export_points(
        self,
        *,
        account_id: str | None = None,
        metric: str | None = None,
        start_from: str | None = None,
        start_to: str | None = None,
    ) -> Iterator[StoredPoint]:
        where, params = _filters({"account_id": account_id, "metric": metric}, start_from, start_to)
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
        where, params = _filters(
            {"account_id": account_id, "section": section}, start_from, start_to
        )
        sql = (
            f"SELECT {_RECORD_COLUMNS} FROM records{_where(where)}"
            " ORDER BY account_id, section, start NULLS FIRST, identity"
        )
        # a page of records, then the items of the whole page in one statement
        try:
            with (
                self._pool.connection() as lease,
                lease.conn.transaction(),
                lease.conn.cursor(name="healthlog_records") as cursor,
            ):
                cursor.execute(sql, params)
                while rows := cursor.fetchmany(_FETCH):
                    keys = [list(column) for column in zip(*(row[:3] for row in rows), strict=True)]
                    items: dict[tuple[str, str, str], list[Item]] = {}
                    for item in lease.conn.execute(_ITEMS_OF, keys):
                        items.setdefault(item[:3], []).append(_item(item[3:]))
                    for row in rows:
                        record = _record(row, tuple(items.get(row[:3], ())))
                        yield StoredRecord(row[0], record, row[10])
        except psycopg.Error as exc:
            raise _translate(exc) from exc

    def _stream(self, sql: str, params: Sequence[object]) -> Iterator[StoredPoint]:
        # a server-side cursor: memory stays flat however large the export; one
        # statement is its own snapshot, and no retries once rows have been yielded
        try:
            with (
                self._pool.connection() as lease,
                lease.conn.transaction(),
                lease.conn.cursor(name="healthlog_export") as cursor,
            ):
                cursor.execute(sql, params)
                while rows := cursor.fetchmany(_FETCH):
                    for row in rows:
                        yield _stored_point(row)
        except psycopg.Error as exc:
            raise _translate(exc) from exc

    def fingerprint(self, account_id: str | None = None) -> str:
        where = ""
        params: tuple[str, ...] = ()
        if account_id is not None:
            where, params = " WHERE account_id = %s", (account_id,)
        # the very rows the SQLite adapter hashes, in its order, with times as the
        # port's text: one showcase has one fingerprint on either backend
        tables: list[tuple[str, Callable[[tuple[Any, ...]], tuple[Any, ...]]]] = [
            (f"SELECT {_POINT_COLUMNS} FROM points{where}"
             " ORDER BY account_id, metric, start, field, source", _point_row),
            (f"SELECT {_RECORD_COLUMNS} FROM records{where}"
             " ORDER BY account_id, section, identity", _record_row),
            ("SELECT account_id, section, identity, series, layer_received_at, layer_id"
             f" FROM record_series{where} ORDER BY account_id, section, identity, series",
             _series_row),
            (f"SELECT account_id, section, identity, {_ITEM_COLUMNS} FROM record_items{where}"
             " ORDER BY account_id, section, identity, series, seq", _item_row),
        ]  # fmt: skip

        def work(conn: Conn) -> str:
            digest = hashlib.sha256()
            for number, (sql, canonical) in enumerate(tables):
                # rows of the later tables carry their table's number: no row of one
                # table can read as a row of another, and empty tables add nothing
                tag = f"{number}:".encode() if number else b""
                with conn.cursor(name=f"healthlog_fingerprint_{number}") as cursor:
                    cursor.execute(sql, params)
                    while rows := cursor.fetchmany(_FETCH):
                        for row in rows:
                            digest.update(tag)
                            # repr of a tuple of str/int/float/None is canonical and
                            # unambiguous (strings quoted and escaped, floats shortest
                            # round-trip)
                            digest.update(repr(canonical(row)).encode())
                            digest.update(b"\n")
            return digest.hexdigest()

        return self._transaction(work)


Layer = tuple[str, datetime, str]  # account, then the layer's version: (received_at, id)


def _upsert_points(conn: Conn, points: Sequence[Point], layer: Layer) -> None:
    with conn.cursor() as cursor, cursor.copy(_COPY_POINTS) as copy:
        for n, point in enumerate(points):
            copy.write_row((n, *_POINT_VALUES(point)))
    conn.execute(_UPSERT_POINTS, layer)


def _upsert_records(conn: Conn, records: Sequence[Record], layer: Layer) -> None:
    """Upsert each record under the layer guard; replace each series it carries if newer.

    A series the record does not carry (absent, null or empty) is left as it is: it is
    inherited from the older layer that carried it (SPEC §5).
    """
    with conn.cursor() as cursor:
        with cursor.copy(_COPY_RECORDS) as copy:
            for n, record in enumerate(records):
                copy.write_row((n, *_RECORD_VALUES(record)))
        with cursor.copy(_COPY_ITEMS) as copy:
            for n, record in enumerate(records):
                head = (n, record.section, record.identity)
                for item in record.items:
                    copy.write_row((*head, *_ITEM_VALUES(item)))
    conn.execute(_UPSERT_RECORDS, layer)
    if any(record.items for record in records):
        named = {"account": layer[0], "at": layer[1], "id": layer[2]}
        conn.execute(_CLAIM_SERIES, named)
        conn.execute(_INSERT_ITEMS, named)


def _where(clauses: list[str]) -> str:
    return " WHERE " + " AND ".join(clauses) if clauses else ""


def _filters(
    equal: dict[str, str | None], start_from: str | None, start_to: str | None
) -> tuple[list[str], list[object]]:
    """An export's WHERE: columns equal to values, and the start bounds as instants."""
    where = [f"{column} = %s" for column, value in equal.items() if value is not None]
    params: list[object] = [value for value in equal.values() if value is not None]
    if start_from is not None:
        lowest = first_at_or_after(start_from)
        if lowest is None:
            where.append("false")  # no text sorts at or after it
        else:
            where.append("start >= %s")
            params.append(lowest)
    if start_to is not None:
        highest = first_at_or_after(start_to)
        if highest is not None:  # else every text sorts before it
            where.append("start < %s")
            params.append(highest)
    return where, params


# Rows as the port has them: times as its fixed-width text (in _*_COLUMNS order).


def _point_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*row[:4], to_text(row[4]), row[5], _optional_text(row[6]), *row[7:11],
            to_text(row[11]), row[12])  # fmt: skip


def _record_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*row[:3], _optional_text(row[3]), _optional_text(row[4]), *row[5:9],
            to_text(row[9]), row[10])  # fmt: skip


def _series_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*row[:4], to_text(row[4]), row[5])


def _item_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*row[:5], _optional_text(row[5]), *row[6:])


def _stored_point(row: tuple[Any, ...]) -> StoredPoint:
    values = _point_row(row)
    return StoredPoint(values[0], Point(*values[1:11]), values[12])


def _record(row: tuple[Any, ...], items: tuple[Item, ...]) -> Record:
    section, identity, start, end, utc_offset, name, source, body = _record_row(row)[1:9]
    return Record(section, identity, start, end, utc_offset, name, source, body, items)


def _item(row: tuple[Any, ...]) -> Item:
    """An item from its _ITEM_COLUMNS."""
    return Item(row[0], row[1], _optional_text(row[2]), *row[3:])


def _delivery(row: tuple[Any, ...]) -> Delivery:
    (id_, account_id, received_at, archive_key, size, content_type, status, uncovered) = row[:8]
    points, attempts, failure, folded_at, headers = row[8:]
    return Delivery(
        id=id_,
        account_id=account_id,
        received_at=received_at,
        archive_key=archive_key,
        size=size,
        content_type=content_type,
        status=ParseStatus(status),
        uncovered=tuple(uncovered),
        points=points,
        attempts=attempts,
        failure=failure,
        folded_at=folded_at,
        headers=tuple((name, value) for name, value in headers),
    )


def _conforms(journal: PostgresJournal) -> Journal:
    """mypy checks here that the adapter satisfies the port."""
    return journal
