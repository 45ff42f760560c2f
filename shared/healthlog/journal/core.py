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
import re
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import date, datetime, timedelta
from itertools import repeat
from operator import itemgetter
from typing import Any, TypeVar

import orjson

from healthlog import clock, errors, ids, kinds
from healthlog.archive import keys
from healthlog.clock import At
from healthlog.journal import migrate as migrations
from healthlog.journal import rows
from healthlog.journal.driver import Busy, Connection, Driver, Layer, Params, Rows
from healthlog.journal.port import (
    BUCKETS,
    BodyRef,
    Bucket,
    BucketRow,
    CatalogEntry,
    DaySum,
    Journal,
    StaleToken,
    StoredPoint,
    StoredRecord,
    Summary,
    WatchNotice,
)
from healthlog.journal.rows import to_text
from healthlog.journal.statements import Statements
from healthlog.model import (
    Account,
    Cursor,
    Delivery,
    NewDelivery,
    ParseStatus,
    Point,
    Record,
    Step,
)

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
    "spanning_points",
    "spanning_day_points",
    "add_day_part",
    "clear_day_sums",
    "keep_day_sums",
    "count_imported",
    "day_sums",
    "lock_series",
    "add_series",
    *(f"bucket_{bucket}" for bucket in BUCKETS),
    "local_start",
    *rows.FINGERPRINT_STATEMENTS,
)


#: at most this many uncovered keys are stored per delivery, each at most KEY_CHARS long;
#: a body with a million unknown keys must not make a row (and ``status``) of megabytes
MAX_KEYS = 100
KEY_CHARS = 200


#: a day's last instant, as stored: a range of UTC days ends there
_DAY_END = "T23:59:59.999999Z"
_DAY_START = "T00:00:00.000000Z"
#: the midnight after the calendar's last day, as text both backends order after every
#: stored start (PostgreSQL reads it as year 10000's first instant): the end of a
#: half-open range that holds 9999-12-31 whole
_AFTER_LAST_DAY = "9999-12-31T24:00:00.000000Z"


#: a point's series (metric, field, unit, source), by position: a Point is a tuple, and
#: one C call per point beats four attribute reads (a step of an import is fifty
#: thousand points)
_SERIES = itemgetter(0, 1, 8, 2)


def starts_by_series(points: Sequence[Point]) -> dict[tuple[str, str, str, str], list[str]]:
    """Per series (metric, field, unit, source), the starts of its points, in order."""
    found: dict[tuple[str, str, str, str], list[str]] = {}
    setdefault, series = found.setdefault, _SERIES
    for p in points:
        setdefault(series(p), []).append(p.start)
    return found


#: a point's series as the series table has it (metric, field, source, unit), and the
#: values of its row in point_rows after the series' keys (start, utc_offset, end, qty,
#: text, extra, seq)
_IDENTITY = itemgetter(0, 1, 2, 8)
_ROW_VALUES = itemgetter(3, 4, 5, 6, 7, 9, 10)

#: a series' (metric_key, point_key, id): how a point row refers to it (migration 0011)
SeriesKeys = dict[tuple[str, str, str, str], tuple[int, int, int]]


def series_keys(
    conn: Connection, sql: Statements, account_id: str, points: Sequence[Point]
) -> SeriesKeys:
    """The keys of the series of ``points``, per (metric, field, source, unit); the series
    the account has not had yet are added (with ``lock_series`` held), in identity order."""
    params = {"account_id": account_id}

    def read() -> SeriesKeys:
        found = conn.execute(sql["account_series"], params).fetchall()
        return {(m, f, s, u): (int(mk), int(pk), int(i)) for m, f, s, u, i, mk, pk in found}

    known = read()
    missing = set(map(_IDENTITY, points)) - known.keys()  # one C pass over the points
    if missing:
        conn.execute(sql["lock_series"], {})
        for metric, field, source, unit in sorted(missing):
            conn.execute(
                sql["add_series"],
                {**params, "metric": metric, "field": field, "source": source, "unit": unit},
            )
        known = read()
    return known


def point_rows(
    points: Sequence[Point], keys: SeriesKeys, version: tuple[str, ...]
) -> Iterator[tuple[Any, ...]]:
    """Each point as a row of point_rows: its series' keys, its values, the layer's version
    (``upsert_point``'s order; ``copy_points`` takes the same after a position)."""
    key_of, values = _IDENTITY, _ROW_VALUES
    for p in points:
        yield keys[key_of(p)] + values(p) + version


#: a point's key less its seq (metric, field, source, start), and what else it holds
#: (end, qty, text, unit, extra): as ``model.distinct_points`` tells samples apart
_SHARED_KEY = itemgetter(0, 1, 2, 3)
_CONTENT = itemgetter(5, 6, 7, 8, 9)
_SEQ = itemgetter(10)


def beside_own(
    conn: Connection, sql: Statements, account_id: str, delivery_id: str, points: Sequence[Point]
) -> tuple[list[Point], list[Point]]:
    """A step's points keyed beside the rows the delivery's own layer already holds:
    those that equal none of them, and those that equal one (with that row's ``seq``).

    The samples of one shared key may fall into different steps of a fold in steps; a
    step numbers its own from 0 (``distinct_points``), which would overwrite the earlier
    step's rows of the same layer. Here a point takes the ``seq`` of the own row it
    equals (the same sample, folded again or sent again), else the first ``seq`` no own
    row of its key holds. Reads the delivery's own rows where the step's points fall:
    one range read per metric and run of days, as the day tally does.
    """
    own: dict[tuple[str, ...], dict[tuple[Any, ...], int]] = {}
    statement = sql["own_points"]
    for metric, runs in touched_days(points).items():
        for low, high in runs:
            params = {
                "account_id": account_id,
                "metric": metric,
                "low": low,
                "high": high,
                "delivery_id": delivery_id,
            }
            for field, source, start, seq, *content in conn.execute(statement, params).fetchall():
                own.setdefault((metric, field, source, start), {})[tuple(content)] = int(seq)
    if not own:
        return list(points), []
    fresh: list[Point] = []
    equal: list[Point] = []
    taken: dict[tuple[str, ...], set[int]] = {}
    # in seq order within each key, so the numbering is the same at every refold
    for point in sorted(points, key=_SEQ):
        key = _SHARED_KEY(point)
        rows_of_key = own.get(key)
        if rows_of_key is None:
            fresh.append(point)
            continue
        seq = rows_of_key.get(_CONTENT(point))
        if seq is not None:
            equal.append(point._replace(seq=seq))
            continue
        used = taken.setdefault(key, set(rows_of_key.values()))
        seq = next(n for n in range(len(used) + 1) if n not in used)
        used.add(seq)
        fresh.append(point._replace(seq=seq))
    return fresh, equal


def touched_days(
    points: Sequence[Point],
    by_series: dict[tuple[str, str, str, str], list[str]] | None = None,
) -> dict[str, list[tuple[str, str]]]:
    """Per metric, the UTC days its points start on, runs of days merged: half-open
    ranges [low, high) of stored time text, a run's first midnight to the midnight after
    its last day (so a start at 23:59:59.999999 is in), where a delivery can add points
    (and nowhere else)."""
    days_of: dict[str, set[str]] = {}
    for (metric, *_), starts in (by_series or starts_by_series(points)).items():
        days_of.setdefault(metric, set()).update({start[:10] for start in starts})
    return {metric: _runs(sorted(days)) for metric, days in sorted(days_of.items())}


#: consecutive days, the first and the last
DayRun = tuple[date, date]
#: the content types of an import of the Health app's export, as statement parameters
_IMPORTS = {"zip": keys.EXPORT_ZIP, "xml": keys.EXPORT_XML}


def _day_text(day: date, shift: int, clock: str) -> str:
    """``day`` moved by ``shift`` days, as stored time text at ``clock``. Off the calendar
    (year 1, year 9999), the first day's first instant, or the midnight after its last
    day: every use is a range's low end, or its high end left out of it."""
    try:
        return (day + timedelta(days=shift)).isoformat() + clock
    except OverflowError:
        return date.min.isoformat() + _DAY_START if shift < 0 else _AFTER_LAST_DAY


def _earlier(at: At | None, by: timedelta) -> At | None:
    """A range's low bound moved ``by`` earlier (a ``Wall`` on the phone's clock, or
    stored UTC text); None stays None, and text off the calendar stays as it is."""
    if at is None:
        return None
    if isinstance(at, clock.Wall):
        try:
            return clock.Wall(at.at - by)
        except OverflowError:
            return None
    found = clock.first_at_or_after(at)
    if found is None:
        return at
    try:
        return clock.to_text(found - by)
    except OverflowError:
        return None


_START_COLUMN = re.compile(r"\bstart\b")


def _stays(bucket: str) -> str:
    """SQL: a point that stays in its start's bucket (``bucket``, a ``bucket_*`` fragment
    of ``start``): it has no end, or its end is in the same bucket. The others a
    cumulative metric spreads over the buckets they span (``clock.spread``)."""
    at_end = _START_COLUMN.sub('"end"', bucket)
    return f'("end" IS NULL OR {at_end} = {bucket})'


def keep_days(
    sql: Statements, conn: Connection, account_id: str, days_of: dict[str, set[date]]
) -> None:
    """Recompute point_day_sums for ``days_of`` (metric -> days of the phone's clock),
    each run of days cleared and summed again from its points; a cumulative metric's
    runs reach ``clock.SPREAD_SPAN`` further, for the days its samples spread onto."""
    if not days_of:
        return
    imports = conn.execute(
        sql["imported_deliveries"], {"account_id": account_id, **_IMPORTS}
    ).fetchall()
    fill = {
        "day": sql["bucket_day"],
        "imported": sql["count_imported"] if imports else "0",
    }
    plain = sql.render("keep_day_sums", **fill)
    # a cumulative metric: the points that stay on their day summed in SQL, the ones
    # that span days spread over them (clock.spread, added by _add_day_parts)
    stays = _stays(sql["bucket_day"])
    spreading = sql.render("keep_day_sums", stays=f"{stays} AND ", **fill)
    imported = {str(row[0]) for row in imports}
    for metric, days in sorted(days_of.items()):
        cumulative = kinds.is_cumulative(metric)
        for first, last in _date_runs(sorted(days)):
            if cumulative:  # a sample of the run's days may reach the days after
                try:
                    last += timedelta(days=clock.SPREAD_SPAN.days)
                except OverflowError:
                    last = date.max
            params = {
                "account_id": account_id,
                "metric": metric,
                "low": _day_text(first, -1, _DAY_START),
                "high": _day_text(last, 2, _DAY_START),
                "day_low": first.isoformat(),
                "day_high": last.isoformat(),
                **_IMPORTS,
            }
            conn.execute(sql["clear_day_sums"], params)
            conn.execute(spreading if cumulative else plain, params)
            if cumulative:
                _add_day_parts(sql, conn, account_id, metric, first, last, imported)


def _add_day_parts(
    sql: Statements,
    conn: Connection,
    account_id: str,
    metric: str,
    first: date,
    last: date,
    imported: set[str],
) -> None:
    """The parts of the days [first, last] that the metric's points spanning days bring
    (those that start up to ``clock.SPREAD_SPAN`` before the run): summed per field and
    day, added to the days' rows."""
    span = sql.render("spanning_day_points", span=f"NOT {_stays(sql['bucket_day'])}")
    params = {
        "account_id": account_id,
        "metric": metric,
        "low": _day_text(first, -(clock.SPREAD_SPAN.days + 1), _DAY_START),
        "high": _day_text(last, 2, _DAY_START),
    }
    day_low, day_high = first.isoformat(), last.isoformat()
    sums: dict[tuple[str, str], list[Any]] = {}
    for field, _, start, end, offset, qty, layer in conn.execute(span, params).fetchall():
        start_text, end_text = str(start), None if end is None else str(end)
        for day, part, _ in clock.spread(start_text, end_text, offset, qty, "day"):
            if not day_low <= day <= day_high:
                continue
            held = sums.setdefault((field, day), [0, 0, None, None, None, start_text,
                                                  start_text, 0])  # fmt: skip
            held[0] += 1
            if part is not None:
                held[1] += 1
                held[2] = part if held[2] is None else held[2] + part
                held[3] = part if held[3] is None else min(held[3], part)
                held[4] = part if held[4] is None else max(held[4], part)
            held[5], held[6] = min(held[5], start_text), max(held[6], start_text)
            held[7] += 1 if str(layer) in imported else 0
    add = sql["add_day_part"]
    for (field, day), held in sorted(sums.items()):
        points, valued, total, low, high, earliest, latest, imp = held
        conn.execute(add, {
            "account_id": account_id, "metric": metric, "field": field, "day": day,
            "points": points, "valued": valued, "total": total, "low": low, "high": high,
            "first_start": earliest, "last_start": latest, "sources": 1, "imported": imp,
        })  # fmt: skip


def _date_runs(dates: list[date]) -> list[DayRun]:
    """Sorted dates as runs of consecutive days, (first, last) each."""
    return [(run[0], run[-1]) for run in rows.runs_of_days(dates, lambda day: day)]


def _runs(days: list[str]) -> list[tuple[str, str]]:
    try:
        dates = [date.fromisoformat(day) for day in days]
    except ValueError:  # not a time: the write refuses it, or stores it as it came
        return [(days[0], days[-1] + _DAY_END)]
    return [
        (first.isoformat() + _DAY_START, _day_text(last, 1, _DAY_START))
        for first, last in _date_runs(dates)
    ]


class _DayTally:
    """What one write brings first into point_days (docs/database.md, "point_days").

    The showcase's points where the delivery's points fall, per metric and day of the
    phone's clock, and how many of them are older than the metric's bar, are read before
    the write and after it: points are never removed and the write is the transaction's
    only change, so the difference is exactly the keys this delivery is first to bring.
    """

    def __init__(
        self,
        sql: Statements,
        layer: Layer,
        bars: dict[str, str],
        ranges: dict[str, list[tuple[str, str]]],
    ) -> None:
        self._sql = sql
        self._query = self._sql.render("day_tally", day=self._sql["bucket_day"])
        self._layer = layer
        self._bars = bars
        self._ranges = ranges
        self._before: dict[tuple[str, str], tuple[int, int]] = {}
        self._after: dict[tuple[str, str], tuple[int, int]] = {}

    def _read(self, conn: Connection) -> dict[tuple[str, str], tuple[int, int]]:
        counts: dict[tuple[str, str], tuple[int, int]] = {}
        for metric, ranges in self._ranges.items():
            for low, high in ranges:
                params = {
                    "account_id": self._layer.account_id,
                    "metric": metric,
                    "low": low,
                    "high": high,
                    "bar": self._bars.get(metric),
                }
                for day, points, late in conn.execute(self._query, params).fetchall():
                    held = counts.get((metric, str(day)), (0, 0))
                    counts[(metric, str(day))] = (held[0] + int(points), held[1] + int(late))
        return counts

    def count_before(self, conn: Connection) -> None:
        self._before = self._read(conn)

    def keep_day_sums(self, conn: Connection) -> None:
        """Recompute point_day_sums for every day of the phone's clock the write changed.

        The days are those the tally read after the write (``count_after``): every day
        with a point that starts where the delivery's points do, so every day a point of
        the delivery is on (no pass over the points for it), and the days it read
        before the write (a point re-sent with another offset moves from one day to
        another, and leaves its old day behind). Each run of those days is cleared and
        summed again from its points, which start from a day before the run to a day
        after it (an offset is less than a day), so an emptied day goes too.
        """
        days_of: dict[str, set[date]] = {}
        for metric, day in {*self._after, *self._before}:
            try:
                days_of.setdefault(metric, set()).add(date.fromisoformat(day))
            except ValueError:
                continue  # not a day (a start stored as it came): no time to sum it by
        keep_days(self._sql, conn, self._layer.account_id, days_of)

    def count_after(self, conn: Connection) -> None:
        self._after = after = self._read(conn)
        changed = {
            key for key in {*after, *self._before} if after.get(key) != self._before.get(key)
        }
        for metric, day in sorted(changed):
            points, late = after.get((metric, day), (0, 0))
            held = self._before.get((metric, day), (0, 0))
            # a day a point left (re-sent with another offset) loses it: negative counts
            brought = {"points": points - held[0], "late": late - held[1]}
            if brought["points"] or brought["late"]:
                params = {"account_id": self._layer.account_id, "metric": metric, "day": day}
                conn.execute(self._sql["add_point_days"], {**params, **brought})


def extents(
    points: Sequence[Point],
    by_series: dict[tuple[str, str, str, str], list[str]] | None = None,
) -> dict[tuple[str, str, str, str], list[Any]]:
    """Per series (metric, field, unit, source): first and last start, how many points."""
    return {
        key: [min(starts), max(starts), len(starts)]
        for key, starts in (by_series or starts_by_series(points)).items()
    }


def bounded_keys(keys: Sequence[str]) -> list[str]:
    """The keys as stored: the first MAX_KEYS in order, each cut to KEY_CHARS, then a
    last entry ``(+N more)`` that says how many were left out."""
    kept = [k if len(k) <= KEY_CHARS else k[: KEY_CHARS - 1] + "\u2026" for k in keys[:MAX_KEYS]]
    if len(keys) > MAX_KEYS:
        kept.append(f"(+{len(keys) - MAX_KEYS} more)")
    return kept


class SqlJournal:
    """The Journal port, once, over a dialect's ``Driver``."""

    def __init__(self, driver: Driver, *, retries: int = 5) -> None:
        if retries < 0:
            raise errors.ConfigError("retries must not be negative")
        self._driver = driver
        self._sql = driver.statements
        self._retries = retries

    @property
    def backend(self) -> str:
        return self._driver.backend

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

    def close(self) -> None:
        self._driver.close()

    def fold_lock(self, wait_s: float = 0.0) -> AbstractContextManager[bool]:
        return self._driver.fold_lock(wait_s)

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
        params = {
            "id": account.id,
            "name": name,
            "token_hash": token_hash,
            "created_at": to_text(account.created_at),
        }
        sql = self._sql["add_account"]
        # the driver turns the unique columns' violations into the typed account errors
        self._write(lambda conn: conn.execute(sql, params))
        return account

    def _change_account(self, name: str, params: Params) -> None:
        sql = self._sql[name]

        def work(conn: Connection) -> None:
            if conn.execute(sql, params).rowcount != 1:
                raise errors.AccountNotFound()

        self._write(work)

    def set_token_hash(self, account_id: str, token_hash: str) -> None:
        sql = self._sql
        at = to_text(ids.now())

        def work(conn: Connection) -> None:
            old = conn.execute(sql["token_hash"], {"id": account_id}).fetchone()
            changed = conn.execute(
                sql["set_token_hash"], {"id": account_id, "token_hash": token_hash}
            )
            if changed.rowcount != 1:
                raise errors.AccountNotFound()
            if old is not None and old[0] != token_hash:
                conn.execute(
                    sql["retire_token"],
                    {"token_hash": old[0], "account_id": account_id, "retired_at": at},
                )

        self._write(work)

    def note_refused_token(self, token_hash: str, at: datetime) -> bool:
        # a read first: a stranger's token (any number of them) takes no write lock
        if self._one("is_retired_token", {"token_hash": token_hash}) is None:
            return False
        sql = self._sql["note_refused_token"]
        params = {"token_hash": token_hash, "at": to_text(at)}
        return self._write(lambda conn: conn.execute(sql, params).rowcount == 1)

    def stale_tokens(self, account_id: str) -> list[StaleToken]:
        return [
            StaleToken(
                rows.from_text(retired),
                int(refused),
                rows.from_text(first),
                rows.from_text(last),
            )
            for retired, refused, first, last in self._all(
                "stale_tokens", {"account_id": account_id}
            )
        ]

    def set_time_zone(self, account_id: str, time_zone: str) -> None:
        self._change_account("set_time_zone", {"id": account_id, "time_zone": time_zone})

    def set_unit_system(self, account_id: str, unit_system: str) -> None:
        self._change_account("set_unit_system", {"id": account_id, "unit_system": unit_system})

    def token_hash(self, account_id: str) -> str | None:
        row = self._one("token_hash", {"id": account_id})
        return None if row is None else str(row[0])

    def account_by_token_hash(self, token_hash: str) -> Account | None:
        row = self._one("account_by_token_hash", {"token_hash": token_hash})
        return None if row is None else rows.account(row)

    def get_account(self, account_id: str) -> Account | None:
        row = self._one("account_by_id", {"id": account_id})
        return None if row is None else rows.account(row)

    def accounts(self) -> list[Account]:
        return [rows.account(row) for row in self._all("accounts", {})]

    # --- ingest -----------------------------------------------------------------------------

    def insert_delivery(self, new: NewDelivery) -> bool:
        params = {
            "id": new.id,
            "account_id": new.account_id,
            "received_at": to_text(new.received_at),
            "archive_key": new.archive_key,
            "size": new.size,
            "content_type": new.content_type,
            "headers": orjson.dumps(new.headers).decode(),
        }
        sql = self._sql["insert_delivery"]
        # a missing account is the driver's NoSuchAccount (the foreign key)
        return self._write(lambda conn: conn.execute(sql, params).rowcount == 1)

    # --- the queue --------------------------------------------------------------------------

    def pending_page(self, after: Cursor, limit: int) -> list[Cursor]:
        if limit < 1:
            raise ValueError("limit must be positive")
        params = {"received_at": to_text(after.received_at), "id": after.id, "limit": limit}
        page = self._all("pending_page", params)
        return [Cursor(rows.from_text(at), delivery_id) for at, delivery_id in page]

    def count_pending(self) -> int:
        return int(self._one("count_pending", {})[0])

    def get_delivery(self, delivery_id: str) -> Delivery | None:
        row = self._one("get_delivery", {"id": delivery_id})
        return None if row is None else rows.delivery(row)

    def begin_attempt(self, delivery_id: str) -> int:
        sql = self._sql["begin_attempt"]

        def work(conn: Connection) -> int:
            # all: the statement must be finished before COMMIT
            counted = conn.execute(sql, {"id": delivery_id}).fetchall()
            if not counted:
                raise errors.Conflict("the delivery is not in the journal")
            return int(counted[0][0])

        return self._write(work)

    def release_attempt(self, delivery_id: str) -> None:
        sql = self._sql["release_attempt"]
        self._write(lambda conn: conn.execute(sql, {"id": delivery_id}))

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
        step: Step | None = None,
        repeated: int = 0,
    ) -> None:
        params: dict[str, Any] = {
            "id": delivery_id,
            "expected": expected.value,
            "status": status.value,
            "uncovered": orjson.dumps(bounded_keys(uncovered)).decode(),
            "failure": failure,
            "points": len(points),
            "records": len(records),
            "repeated": repeated,
            "folded_at": to_text(ids.now()),
        }
        statement = "write_outcome"
        if step is not None:
            statement = "write_last_step"
            params.update(
                points=step.points,
                records=step.records,
                repeated=step.repeated,
                after=step.after,
                state=step.state,
            )
        self._write_layer(statement, params, expected, step, points, records)

    def write_step(
        self,
        delivery_id: str,
        *,
        expected: ParseStatus,
        step: Step,
        points: Sequence[Point],
        records: Sequence[Record] = (),
    ) -> None:
        params = {
            "id": delivery_id,
            "expected": expected.value,
            "after": step.after,
            "position": step.position,
            "state": step.state,
            "points": step.points,
            "records": step.records,
            "repeated": step.repeated,
        }
        self._write_layer("write_step", params, expected, step, points, records)

    def beside_own(
        self, account_id: str, delivery_id: str, points: Sequence[Point]
    ) -> tuple[list[Point], list[Point]]:
        def work(conn: Connection) -> tuple[list[Point], list[Point]]:
            return beside_own(conn, self._sql, account_id, delivery_id, points)

        return self._transaction(work, write=False)

    def _write_layer(
        self,
        statement: str,
        params: Params,
        expected: ParseStatus,
        step: Step | None,
        points: Sequence[Point],
        records: Sequence[Record],
    ) -> None:
        """The delivery's row (``statement``, its guard), its points and records, the day
        counts and its extents, in one transaction; Conflict if the guard failed.

        A fold in one step (``step`` None) replaces the delivery's extents; a step adds to
        those of the fold's earlier steps, the first one (after 0) replacing any older.
        """
        sql = self._sql
        delivery_id = params["id"]

        def work(conn: Connection) -> None:
            # the guard and the delivery's row in one statement, which returns the layer
            won = conn.execute(sql[statement], params).fetchall()
            if not won:
                found = conn.execute(sql["delivery_status"], {"id": delivery_id}).fetchone()
                if found is None:
                    raise errors.Conflict("the delivery is not in the journal")
                if found[0] == expected.value:
                    raise errors.Conflict("another fold of this delivery went on meanwhile")
                raise errors.Conflict(
                    f"the delivery is {found[0]}, not {expected.value}; outcome not written"
                )
            account_id, received_at = won[0]
            layer = Layer(account_id, received_at, delivery_id)
            by_series = starts_by_series(points)
            tally = self._tally(conn, layer, points, by_series)
            self._driver.write_showcase(conn, layer, points, records)
            tally.count_after(conn)
            tally.keep_day_sums(conn)
            if step is None or step.after == 0:
                conn.execute(sql["delete_extents"], {"delivery_id": delivery_id})
            extent = sql["insert_extent" if step is None else "merge_extent"]
            found = extents(points, by_series).items()
            for (metric, field, unit, source), (first, last, count) in found:
                conn.execute(
                    extent,
                    {
                        "delivery_id": delivery_id,
                        "metric": metric,
                        "field": field,
                        "unit": unit,
                        "source": source,
                        "account_id": account_id,
                        "received_at": received_at,
                        "first_start": first,
                        "last_start": last,
                        "points": count,
                    },
                )

        self._write(work)

    def _tally(
        self,
        conn: Connection,
        layer: Layer,
        points: Sequence[Point],
        by_series: dict[tuple[str, str, str, str], list[str]] | None = None,
    ) -> _DayTally:
        """Count, before the write, what the showcase holds where the points fall."""
        ranges = touched_days(points, by_series)
        found = conn.execute(self._sql["metric_bars"], layer._asdict()).fetchall() if points else []
        tally = _DayTally(self._sql, layer, {str(m): bar for m, bar in found}, ranges)
        tally.count_before(conn)
        return tally

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
        where, params = self._filters(
            status=None if status is None else status.value, account_id=account_id
        )
        if uncovered_key is not None:
            where += " AND " + self._sql["has_uncovered"]
            params["uncovered_key"] = uncovered_key
        fragments = {"and": where, "order": "DESC" if newest_first else "ASC"}
        if limit is not None:
            if limit < 0:
                raise ValueError("limit must not be negative")
            fragments["limit"] = "LIMIT " + self._sql.param("limit")
            params["limit"] = limit
        sql = self._sql.render("deliveries", **fragments)
        found = self._fetch(sql, params)
        return [rows.delivery(row) for row in found]

    # --- retention ------------------------------------------------------------------------

    def retention_due(self, before: datetime, after: Cursor, limit: int) -> list[BodyRef]:
        if limit < 1:
            raise ValueError("limit must be positive")
        params = {
            "before": to_text(before),
            "received_at": to_text(after.received_at),
            "id": after.id,
            "limit": limit,
        }
        return [_body_ref(row) for row in self._all("retention_due", params)]

    def mark_bodies_removed(self, delivery_ids: Sequence[str], at: datetime) -> list[str]:
        sql = self._sql["mark_body_removed"]
        when = to_text(at)

        def work(conn: Connection) -> list[str]:
            marked = []
            for delivery_id in delivery_ids:
                if conn.execute(sql, {"id": delivery_id, "at": when}).rowcount == 1:
                    marked.append(delivery_id)
            return marked

        return self._write(work)

    def removed_bodies(
        self, after: Cursor, limit: int, account_id: str | None = None
    ) -> list[BodyRef]:
        if limit < 1:
            raise ValueError("limit must be positive")
        where, params = self._filters(account_id=account_id)
        params.update(received_at=to_text(after.received_at), id=after.id, limit=limit)
        sql = self._sql.render("removed_bodies", **{"and": where})
        return [_body_ref(row) for row in self._fetch(sql, params)]

    def unconfirmed_removals(self, after: Cursor, limit: int) -> list[BodyRef]:
        if limit < 1:
            raise ValueError("limit must be positive")
        params = {"received_at": to_text(after.received_at), "id": after.id, "limit": limit}
        return [_body_ref(row) for row in self._fetch(self._sql["unconfirmed_removals"], params)]

    def confirm_bodies_deleted(self, delivery_ids: Sequence[str], at: datetime) -> None:
        sql = self._sql["confirm_body_deleted"]
        when = to_text(at)

        def work(conn: Connection) -> None:
            for delivery_id in delivery_ids:
                conn.execute(sql, {"id": delivery_id, "at": when})

        self._write(work)

    def count_removed_bodies(self, account_id: str | None = None) -> int:
        where, params = self._filters(account_id=account_id)
        sql = self._sql.render("count_removed_bodies", **{"and": where})
        return int(self._fetch(sql, params)[0][0])

    # --- the watch's notices (healthlog.watch) ------------------------------------------

    def watch_notices(self) -> list[WatchNotice]:
        return [
            WatchNotice(target, key, subject, rows.from_text(at), state)
            for target, key, subject, at, state in self._all("watch_notices", {})
        ]

    def add_watch_notice(self, notice: WatchNotice) -> bool:
        sql = self._sql["add_watch_notice"]
        params = {
            "target": notice.target,
            "rule_key": notice.rule_key,
            "subject": notice.subject,
            "told_at": to_text(notice.told_at),
            "state": notice.state,
        }
        return self._write(lambda conn: conn.execute(sql, params).rowcount == 1)

    def move_watch_notice(self, notice: WatchNotice, *, state: str, at: datetime) -> bool:
        sql = self._sql["move_watch_notice"]
        params = {
            "target": notice.target,
            "rule_key": notice.rule_key,
            "was_state": notice.state,
            "was_at": to_text(notice.told_at),
            "state": state,
            "at": to_text(at),
        }
        return self._write(lambda conn: conn.execute(sql, params).rowcount == 1)

    def delete_watch_notice(self, target: str, rule_key: str) -> bool:
        sql = self._sql["delete_watch_notice"]
        params = {"target": target, "rule_key": rule_key}
        return self._write(lambda conn: conn.execute(sql, params).rowcount == 1)

    def summary(self, account_id: str | None = None) -> Summary:
        where, params = self._filters(account_id=account_id)
        sql = {
            name: self._sql.render(name, **{"and": where})
            for name in (
                "summary_pending",
                "summary_settled",
                "summary_failures",
                "summary_last",
                "summary_uncovered",
                "summary_points",
                "summary_records",
            )
        }

        def work(conn: Connection) -> Summary:
            pending, oldest = conn.execute(sql["summary_pending"], params).fetchone()
            counts = {s.value: 0 for s in ParseStatus}
            counts.update(conn.execute(sql["summary_settled"], params).fetchall())
            counts[ParseStatus.PENDING.value] = pending
            last = conn.execute(sql["summary_last"], params).fetchone()[0]
            return Summary(
                counts=counts,
                oldest_pending=None if oldest is None else rows.from_text(oldest),
                last_delivery=None if last is None else rows.from_text(last),
                uncovered=dict(conn.execute(sql["summary_uncovered"], params).fetchall()),
                points=conn.execute(sql["summary_points"], params).fetchone()[0],
                records=dict(conn.execute(sql["summary_records"], params).fetchall()),
                failures=dict(conn.execute(sql["summary_failures"], params).fetchall()),
            )

        # one snapshot for every count of the report
        return self._transaction(work, write=False, consistent=True)

    def _export(
        self,
        names: tuple[str, ...],
        alias: str,
        equal: dict[str, str | None],
        start_from: At | None,
        start_to: At | None,
        combine: Callable[..., Iterator[T]],
    ) -> Iterator[T]:
        """Stream the statements ``names`` under an export's filters, in one snapshot.

        ``combine`` turns their row streams (one per statement, in order) into the
        port's values. ``start_from`` is inclusive, ``start_to`` exclusive, both holding
        as they would against the stored UTC ``start`` text.
        """
        filters = self._range_filters(alias, equal, start_from, start_to)
        if filters is None:
            return iter(())
        where, params = filters
        statements = [self._sql.render(name, **{"and": where}) for name in names]
        return self._streamed(statements, params, combine)

    def _range_filters(
        self,
        alias: str,
        equal: dict[str, str | None],
        start_from: At | None,
        start_to: At | None,
    ) -> tuple[str, dict[str, Any]] | None:
        """Equality filters and a half-open start range; None when no start can pass.

        A bound of stored UTC text is compared with ``start``; a ``Wall`` (a time on the
        phone's clock) with each row's local start (the ``local_start`` fragment), inside
        the UTC range it can reach, so the key still ranges over it.
        """
        where, params = self._filters(alias, **equal)
        param = self._sql.param
        low, high = clock.utc_side(start_from, False), clock.utc_side(start_to, True)
        if low is not None:
            lowest = rows.start_bound(low)
            if lowest is None:
                return None  # no stored start sorts at or after it
            where += f" AND {alias}start >= {param('start_from')}"
            params["start_from"] = lowest
        if high is not None:
            highest = rows.start_bound(high)
            if highest is not None:  # else every stored start sorts before it
                where += f" AND {alias}start < {param('start_to')}"
                params["start_to"] = highest
        local = self._sql.render("local_start", a=alias) if alias else self._sql["local_start"]
        if isinstance(start_from, clock.Wall):
            where += f" AND {local} >= {param('local_from')}"
            params["local_from"] = start_from.text
        if isinstance(start_to, clock.Wall):
            where += f" AND {local} < {param('local_to')}"
            params["local_to"] = start_to.text
        return where, params

    def _streamed(
        self, statements: list[str], params: Params, combine: Callable[..., Iterator[T]]
    ) -> Iterator[T]:
        with self._driver.streaming() as stream:
            yield from combine(*(stream(sql, params) for sql in statements))

    def export_points(
        self,
        *,
        account_id: str | None = None,
        metric: str | None = None,
        start_from: At | None = None,
        start_to: At | None = None,
        field: str | None = None,
        source: str | None = None,
        unit: str | None = None,
    ) -> Iterator[StoredPoint]:
        """Showcase rows ordered by (account, metric, start, field, source)."""
        equal = {
            "account_id": account_id,
            "metric": metric,
            "field": field,
            "source": source,
            "unit": unit,
        }
        if metric is not None:
            return self._export(("export_points",), "", equal, start_from, start_to, _stored_points)
        return self._every_metric(equal, start_from, start_to)

    def _every_metric(
        self, equal: dict[str, str | None], start_from: At | None, start_to: At | None
    ) -> Iterator[StoredPoint]:
        with self._driver.streaming() as stream:
            found = self._points_by_metric(stream, "export_points", equal, start_from, start_to)
            try:
                yield from map(rows.stored_point, found)
            finally:
                # an export given up (a closed pipe) ends its cursor here, while its
                # connection is still this stream's, not when the garbage is collected
                found.close()

    def _points_by_metric(
        self,
        stream: Rows,
        name: str,
        equal: dict[str, str | None],
        start_from: At | None = None,
        start_to: At | None = None,
    ) -> Generator[tuple[Any, ...], None, None]:
        """The rows of ``name``, a statement of points in export order, one metric at a
        time: the same rows in the same order as the statement alone gives them.

        One metric's points are one range of ``point_rows``' key, read in its order; a
        whole account's come through the ``points`` view, whose order PostgreSQL can
        only get by sorting them all (a million points: 3.6 s against 2.5 s metric by
        metric). The metrics come from ``series`` (``point_metrics``), in the order of
        the view's own (account_id, metric).
        """
        where, params = self._filters(
            account_id=equal.get("account_id"),
            field=equal.get("field"),
            source=equal.get("source"),
            unit=equal.get("unit"),
        )
        listing = self._sql.render("point_metrics", **{"and": where})
        for account_id, metric in list(stream(listing, params)):
            only = {**equal, "account_id": account_id, "metric": metric}
            filters = self._range_filters("", only, start_from, start_to)
            if filters is None:
                return  # no start can pass: nothing of any metric
            where, params = filters
            yield from stream(self._sql.render(name, **{"and": where}), params)

    def export_records(
        self,
        *,
        account_id: str | None = None,
        section: str | None = None,
        start_from: At | None = None,
        start_to: At | None = None,
        identity: str | None = None,
        with_items: bool = True,
    ) -> Iterator[StoredRecord]:
        """Records with their items, ordered by (account, section, start, identity).

        The records and their items are two statements read side by side in one
        snapshot, both in this order, and merged: memory stays flat however many.
        """
        equal = {"account_id": account_id, "section": section, "identity": identity}
        if not with_items:
            names: tuple[str, ...] = ("export_records_alone",)
            return self._export(names, "r.", equal, start_from, start_to, _bare_records)
        names = ("export_records", "export_record_items")
        return self._export(names, "r.", equal, start_from, start_to, rows.with_items)

    # --- the read side: summaries computed in the database ----------------------------

    def catalog(self, account_id: str) -> list[CatalogEntry]:
        found = self._all("catalog", {"account_id": account_id})
        return [CatalogEntry(*row) for row in found]

    def point_buckets(
        self,
        *,
        account_id: str,
        metric: str,
        field: str,
        bucket: Bucket,
        start_from: At | None = None,
        start_to: At | None = None,
        source: str | None = None,
        unit: str | None = None,
        spread: bool = False,
    ) -> list[BucketRow]:
        if bucket not in BUCKETS:
            raise ValueError(f"no bucket {bucket!r}")
        filters = self._range_filters("", {"source": source, "unit": unit}, start_from, start_to)
        if filters is None:
            return []
        where, params = filters
        params.update(account_id=account_id, metric=metric, field=field)
        fragment = self._sql["bucket_" + bucket]
        if not spread:
            sql = self._sql.render("point_buckets", **{"and": where, "bucket": fragment})
            return [BucketRow(*row) for row in self._fetch(sql, params)]
        # a cumulative field: what stays in one bucket summed here, what spans buckets
        # spread over them (clock.spread), its parts in the range only
        stays = _stays(fragment)
        sql = self._sql.render(
            "point_buckets", **{"and": f"{where} AND {stays}", "bucket": fragment}
        )
        found = {str(row[0]): list(row) for row in self._fetch(sql, params)}
        earlier = _earlier(start_from, clock.SPREAD_SPAN)
        wide = self._range_filters("", {"source": source, "unit": unit}, earlier, start_to)
        assert wide is not None  # a wider range than one that holds starts
        span_where, span_params = wide
        span_params.update(account_id=account_id, metric=metric, field=field)
        spanning = self._sql.render(
            "spanning_points", **{"and": span_where, "span": f"NOT {stays}"}
        )
        for start, end, offset, qty in self._fetch(spanning, span_params):
            start_text, end_text = str(start), None if end is None else str(end)
            for name, part, local in clock.spread(start_text, end_text, offset, qty, bucket):
                if not clock.meets(clock.utc_of(local, offset), offset, start_from, start_to):
                    continue  # a part outside the range: the range's neighbour's
                row = found.setdefault(name, [name, 0, None, None, None, None])
                row[1] += 1
                if part is not None:
                    row[5] = part if row[5] is None else row[5] + part
                    row[2] = part if row[2] is None else min(row[2], part)
                    row[4] = part if row[4] is None else max(row[4], part)
                    row[3] = row[5] / row[1]
        return [BucketRow(*found[name]) for name in sorted(found)]

    def metric_days(
        self,
        *,
        account_id: str,
        metric: str | None = None,
        day_from: str | None = None,
        day_to: str | None = None,
    ) -> list[tuple[str, str, int]]:
        return self._days("metric_days", account_id, metric, day_from, day_to)

    def day_sums(
        self, *, account_id: str, metric: str, field: str, day_from: str, day_to: str
    ) -> list[DaySum]:
        params = {
            "account_id": account_id,
            "metric": metric,
            "field": field,
            "day_from": day_from,
            "day_to": day_to,
        }
        found = self._fetch(self._sql["day_sums"], params)
        # both drivers give the columns in DaySum's types already, a row a day, as many as
        # it has fields: each row becomes one as it comes (``_make`` without its length
        # check, a Python frame a row)
        return list(map(tuple.__new__, repeat(DaySum), found))

    def imported_deliveries(self, account_id: str) -> frozenset[str]:
        found = self._fetch(
            self._sql["imported_deliveries"], {"account_id": account_id, **_IMPORTS}
        )
        return frozenset(str(row[0]) for row in found)

    def late_points(
        self,
        *,
        account_id: str,
        metric: str | None = None,
        day_from: str | None = None,
        day_to: str | None = None,
    ) -> list[tuple[str, str, int]]:
        return self._days("late_days", account_id, metric, day_from, day_to)

    def _days(
        self,
        statement: str,
        account_id: str,
        metric: str | None,
        day_from: str | None,
        day_to: str | None,
    ) -> list[tuple[str, str, int]]:
        """Rows of point_days, which the fold keeps as it writes: a read of a day a row."""
        where, params = self._filters(metric=metric)
        params["account_id"] = account_id
        if day_from is not None:
            where += f" AND day >= {self._sql.param('day_from')}"
            params["day_from"] = day_from
        if day_to is not None:
            where += f" AND day < {self._sql.param('day_to')}"
            params["day_to"] = day_to
        found = self._fetch(self._sql.render(statement, **{"and": where}), params)
        return [(str(metric_), str(day), int(count)) for metric_, day, count in found]

    def fingerprint(self, account_id: str | None = None) -> str:
        """A hash of the whole showcase (every column of every row, in key order)."""
        where, params = self._filters(account_id=account_id)
        points, *others = rows.FINGERPRINT_STATEMENTS
        queries = [self._sql.render(name, **{"and": where}) for name in others]
        with self._driver.streaming() as stream:
            by_metric = self._points_by_metric(stream, points, {"account_id": account_id})
            try:
                return rows.fingerprint([by_metric, *(stream(sql, params) for sql in queries)])
            finally:
                by_metric.close()


def _body_ref(row: Sequence[Any]) -> BodyRef:
    return BodyRef(row[0], row[1], rows.from_text(row[2]))


def _stored_points(found: Iterator[tuple[Any, ...]]) -> Iterator[StoredPoint]:
    return map(rows.stored_point, found)


def _bare_records(found: Iterator[tuple[Any, ...]]) -> Iterator[StoredRecord]:
    return (rows.stored_record(row, ()) for row in found)


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
            keep_days(sql, conn, str(account_id), {str(metric): days})


def _conforms(journal: SqlJournal) -> Journal:
    """mypy checks here that the journal satisfies the port."""
    return journal
