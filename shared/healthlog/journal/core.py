"""The one implementation of the Journal port, over any dialect's driver.

Accounts, the queue, outcomes, the showcase's reads and the status are written here
once, as the dialect's named statements (``journal/sql/<backend>.sql``) run through its
driver (``journal/driver.py``), which does what really differs: connections, one
transaction, error translation, the fold lock, migration scripts and the bulk
showcase write. ``SqliteJournal`` and ``PostgresJournal`` are this class with their
driver.

Retries live here, in one layer: a transaction the driver found busy is tried again
after a short, jittered, doubling pause, ``retries`` more times, and then
``JournalBusy`` is raised. Nothing above the journal retries on top.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import date
from typing import TypeVar

from healthlog import errors, ids, kinds
from healthlog.clock import to_text
from healthlog.journal import guard as sql_guard
from healthlog.journal import late_imports, rows
from healthlog.journal import migrate as migrations
from healthlog.journal.accounts import AccountsSql
from healthlog.journal.driver import Busy, Connection, Driver
from healthlog.journal.port import BUCKETS, Journal
from healthlog.journal.queue import QueueSql
from healthlog.journal.showcase_reads import ShowcaseReadsSql
from healthlog.journal.showcase_writes import keep_days, touched_days

__all__ = ["GUARDED_STATEMENTS", "STATEMENTS", "SqlJournal", "touched_days"]

T = TypeVar("T")

# the pause before retry n (0-based) is up to min(cap, base * 2**n), jittered so two
# waiting writers do not retry in step
_BACKOFF_BASE_S = 0.01
_BACKOFF_CAP_S = 0.2

_sleep = time.sleep  # the one place the journal pauses between retries; tests replace it

#: every statement the core runs; each dialect's file must have them all
STATEMENTS = (
    "lock_migrations",
    "applied_migrations",
    "record_migration",
    "add_account",
    "set_token_hash",
    "set_time_zone",
    "set_unit_system",
    "token_hash",
    "account_by_id",
    "account_by_token_hash",
    "accounts",
    "insert_delivery",
    "pending_page",
    "count_pending",
    "get_delivery",
    "begin_attempt",
    "release_attempt",
    "write_outcome",
    "write_step",
    "write_last_step",
    "delivery_status",
    "deliveries",
    "has_uncovered",
    "retention_due",
    "mark_body_removed",
    "removed_bodies",
    "unconfirmed_removals",
    "confirm_body_deleted",
    "count_removed_bodies",
    "watch_notices",
    "add_watch_notice",
    "move_watch_notice",
    "retire_token",
    "is_retired_token",
    "note_refused_token",
    "stale_tokens",
    "delete_watch_notice",
    "summary_pending",
    "summary_settled",
    "summary_failures",
    "summary_last",
    "summary_uncovered",
    "summary_points",
    "summary_records",
    "export_points",
    "point_metrics",
    "export_records",
    "export_record_items",
    "export_records_alone",
    "catalog",
    "point_buckets",
    "metric_days",
    "late_days",
    "last_data_day",
    "metric_bars",
    "day_tally",
    "own_points",
    "add_point_days",
    "delete_extents",
    "insert_extent",
    "merge_extent",
    "account_series",
    "day_sum_metrics",
    "day_sum_days",
    "late_import_accounts",
    "late_import_extents",
    "late_import_days",
    "late_import_unlate",
    "spanning_points",
    "spanning_day_points",
    "add_day_part",
    "clear_day_sums",
    "clear_counted_days",
    "counted_days",
    "uncounted_days",
    "keep_counted_day",
    "keep_day_sums",
    "count_imported",
    "day_sums",
    "lock_series",
    "add_series",
    *(f"bucket_{bucket}" for bucket in BUCKETS),
    "local_start",
    *rows.FINGERPRINT_STATEMENTS,
)


#: the statements of the MCP SQL tool's guarded session every dialect has
#: (``Driver.guarded_session``: a ``guarded_<view>`` for each of ``sql_guard.VIEWS``)
GUARDED_STATEMENTS = (
    "has_migrations",
    "schema_version",
    "guarded_view",
    *(f"guarded_{name}" for name in sql_guard.VIEWS),
    "guarded_clear_daily",
    "guarded_add_daily",
)


class SqlJournal(AccountsSql, QueueSql, ShowcaseReadsSql):
    """The Journal port, once, over a dialect's ``Driver``: its parts' methods
    (``accounts``, ``queue``, ``showcase_reads``), the retries, the schema."""

    def __init__(self, driver: Driver, *, retries: int = 5) -> None:
        if retries < 0:
            raise errors.ConfigError("retries must not be negative")
        self._driver = driver
        self._sql = driver.statements
        self._retries = retries

    # --- transactions ---------------------------------------------------------------------

    def _transaction(
        self, work: Callable[[Connection], T], *, write: bool, consistent: bool = False
    ) -> T:
        """Run ``work`` in one transaction, again on a busy database, then JournalBusy."""
        attempt = 0
        while True:
            try:
                return self._driver.attempt(work, write=write, consistent=consistent)
            except Busy as exc:
                if attempt >= self._retries:
                    # caused by what the driver met, as if no layer stood between
                    raise errors.JournalBusy() from (exc.__cause__ or exc)
            pause = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)
            _sleep(pause * random.uniform(0.5, 1.0))  # noqa: S311  (jitter, not secrecy)
            attempt += 1

    # --- schema -----------------------------------------------------------------------------

    def migrate(self, *, target: int | None = None) -> None:
        """Apply the migrations not applied yet, up to ``target`` (default: all).

        In one write transaction that excludes other migrators (the dialect's
        ``lock_migrations``): two processes starting at once apply each migration once.
        """
        known = migrations.load(self.backend)
        sql = self._sql

        def work(conn: Connection) -> list[migrations.Migration]:
            conn.execute(sql["lock_migrations"], {})
            self._driver.run_script(conn, migrations.SCHEMA_MIGRATIONS_DDL)
            return migrations.run(_MigrationSession(self, conn), known, target=target)

        migrations.log_applied(self.backend, self._write(work))
        self._counts_days = None  # the schema may have gained counted_days

    def close(self) -> None:
        self._driver.close()

    def fold_lock(self, wait_s: float = 0.0) -> AbstractContextManager[bool]:
        return self._driver.fold_lock(wait_s)

    def schema_version(self) -> int:
        return self._driver.schema_version()

    def guarded_session(
        self, account_id: str, daily: sql_guard.Daily | None = None
    ) -> sql_guard.Guard:
        found, head = self.schema_version(), migrations.head(migrations.load(self.backend))
        if found != head:
            raise errors.HealthlogError(
                f"the journal's schema is at version {found}, this healthlog reads {head}: "
                "run any other healthlog command once (it migrates), then start again"
            )
        return self._driver.guarded_session(account_id, daily)


class _MigrationSession:
    """The migration runner's view of one open, exclusive transaction."""

    def __init__(self, journal: SqlJournal, conn: Connection) -> None:
        self._journal = journal
        self._conn = conn

    def applied(self) -> set[int]:
        sql = self._journal._sql["applied_migrations"]
        return {int(row[0]) for row in self._conn.execute(sql, {}).fetchall()}

    def apply(self, migration: migrations.Migration) -> None:
        self._journal._driver.run_script(self._conn, migration.sql)
        if migration.name == "spread_days":  # its work is the day sums' own rule
            self._spread_days()
        if migration.name == "late_imports":  # the late rule's bars, replayed in Python
            late_imports.correct(self._journal._sql, self._conn)
        self._conn.execute(
            self._journal._sql["record_migration"],
            {
                "version": migration.version,
                "name": migration.name,
                "applied_at": to_text(ids.now()),
            },
        )

    def _spread_days(self) -> None:
        """Every cumulative metric's kept days summed again (migration 0018)."""
        sql, conn = self._journal._sql, self._conn
        for account_id, metric in conn.execute(sql["day_sum_metrics"], {}).fetchall():
            if not kinds.is_cumulative(str(metric)):
                continue
            params = {"account_id": account_id, "metric": metric}
            days = {
                date.fromisoformat(str(row[0]))
                for row in conn.execute(sql["day_sum_days"], params).fetchall()
            }
            # (migration 0018: counted_days, 0021, does not exist yet)
            keep_days(sql, conn, str(account_id), {str(metric): days}, counted=False)


def _conforms(journal: SqlJournal) -> Journal:
    """mypy checks here that the journal satisfies the port."""
    return journal
