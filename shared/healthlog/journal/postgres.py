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

Times are ``timestamptz``, and sessions run in UTC; ``postgres_showcase.py`` says how
the showcase's times, which the port has as text, read back exactly as written.

The fold lock is a session-level advisory lock on a connection of its own, held for the
block: the server drops it when that session ends, also when the holder dies. Outcomes
are guarded by the expected status (``UPDATE ... WHERE status = expected``), which locks
the delivery row, so two writers can never both succeed; docs/architecture.md
("Concurrency") says why both exist.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TypeVar

import orjson
import psycopg
from psycopg import errors as pg_errors

from healthlog import errors, ids
from healthlog.journal import migrate as migrations
from healthlog.journal import postgres_showcase as showcase
from healthlog.journal import rows
from healthlog.journal.port import Journal
from healthlog.journal.postgres_pool import Conn, Pool
from healthlog.journal.postgres_showcase import PostgresReads
from healthlog.journal.postgres_showcase import first_at_or_after as first_at_or_after
from healthlog.journal.rows import to_text as to_text
from healthlog.model import Account, Cursor, Delivery, NewDelivery, ParseStatus, Point, Record

T = TypeVar("T")

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

_RECORD_MIGRATION = "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, %s)"

# a consistent view across the statements of one report (summary)
_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"


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


# the unique constraints of ``accounts``, by the column a duplicate collides with
_TAKEN = {"accounts_pkey": "id", "accounts_name_key": "name", "accounts_token_hash_key": "token"}


# --- migrations ----------------------------------------------------------------------------


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


class PostgresJournal(PostgresReads):
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
        self._pool = Pool(self._open, _POOL_KEEP, pool_size, lock_timeout_ms / 1000)

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

        migrations.log_applied(BACKEND, self._transaction(work))

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

        def work(conn: Conn) -> None:
            try:
                conn.execute(
                    "INSERT INTO accounts (id, name, token_hash, created_at)"
                    " VALUES (%s, %s, %s, %s)",
                    (account.id, name, token_hash, account.created_at),
                )
            except pg_errors.UniqueViolation as exc:
                taken = _TAKEN.get(exc.diag.constraint_name or "", "token")
                raise errors.HealthlogError(f"an account with this {taken} exists") from exc

        self._transaction(work)
        return account

    def set_token_hash(self, account_id: str, token_hash: str) -> None:
        def work(conn: Conn) -> None:
            try:
                changed = conn.execute(
                    "UPDATE accounts SET token_hash = %s WHERE id = %s", (token_hash, account_id)
                ).rowcount
            except pg_errors.UniqueViolation as exc:
                raise errors.HealthlogError("an account with this token exists") from exc
            if changed != 1:
                raise errors.HealthlogError("no such account")

        self._transaction(work)

    def token_hash(self, account_id: str) -> str | None:
        sql = "SELECT token_hash FROM accounts WHERE id = %s"
        row = self._transaction(lambda conn: conn.execute(sql, (account_id,)).fetchone())
        return None if row is None else str(row[0])

    def account_by_token_hash(self, token_hash: str) -> Account | None:
        return self._one_account("token_hash = %s", token_hash)

    def get_account(self, account_id: str) -> Account | None:
        return self._one_account("id = %s", account_id)

    def _one_account(self, where: str, value: str) -> Account | None:
        sql = f"SELECT {rows.ACCOUNT_COLUMNS} FROM accounts WHERE {where}"
        row = self._transaction(lambda conn: conn.execute(sql, (value,)).fetchone())
        return None if row is None else rows.account(row, showcase.DIALECT)

    def accounts(self) -> list[Account]:
        sql = f"SELECT {rows.ACCOUNT_COLUMNS} FROM accounts ORDER BY name"
        found = self._transaction(lambda conn: conn.execute(sql).fetchall())
        return [rows.account(row, showcase.DIALECT) for row in found]

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
        page = self._transaction(lambda conn: conn.execute(PENDING_PAGE, params).fetchall())
        return [Cursor(at, delivery_id) for at, delivery_id in page]

    def count_pending(self) -> int:
        row = self._transaction(lambda conn: conn.execute(COUNT_PENDING).fetchone())
        return 0 if row is None else int(row[0])

    def get_delivery(self, delivery_id: str) -> Delivery | None:
        sql = f"SELECT {rows.DELIVERY_COLUMNS} FROM deliveries WHERE id = %s"
        row = self._transaction(lambda conn: conn.execute(sql, (delivery_id,)).fetchone())
        return None if row is None else rows.delivery(row, showcase.DIALECT)

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
            account_id, received_at = row
            showcase.write(conn, (account_id, received_at, delivery_id), points, records)

        self._transaction(work)

    # --- reading: the port's reads are PostgresReads (postgres_showcase.py) -----------------

    def _stream(self, read: Callable[[Conn], Iterator[T]]) -> Iterator[T]:
        """Yield what ``read`` yields, in one transaction on one pooled connection."""
        # one statement is its own snapshot, and no retries once rows have been yielded
        try:
            with self._pool.connection() as lease, lease.conn.transaction():
                yield from read(lease.conn)
        except psycopg.Error as exc:
            raise _translate(exc) from exc


def _conforms(journal: PostgresJournal) -> Journal:
    """mypy checks here that the adapter satisfies the port."""
    return journal
