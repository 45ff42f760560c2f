"""The showcase's writes, shared by the queue's outcomes and the drivers' bulk writes.

A delivery's points keyed by their series (``series_keys``, ``point_rows``), a step's
points beside its own layer's rows (``beside_own``), the days a write touches
(``touched_days``), the day sums kept from them (``keep_days``: ``point_day_sums``), the
day tally of ``point_days`` (``DayTally``), the extents, and the uncovered keys as
stored (``bounded_keys``). Functions of a connection in an open transaction: the
queue (``journal/queue.py``) runs them inside its write.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import date, timedelta
from operator import itemgetter
from typing import Any

from healthlog import clock, kinds
from healthlog.archive import keys
from healthlog.journal.driver import Connection, Layer
from healthlog.journal.statements import Statements
from healthlog.model import (
    Point,
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
IMPORTS = {"zip": keys.EXPORT_ZIP, "xml": keys.EXPORT_XML}


def _day_text(day: date, shift: int, clock: str) -> str:
    """``day`` moved by ``shift`` days, as stored time text at ``clock``. Off the calendar
    (year 1, year 9999), the first day's first instant, or the midnight after its last
    day: every use is a range's low end, or its high end left out of it."""
    try:
        return (day + timedelta(days=shift)).isoformat() + clock
    except OverflowError:
        return date.min.isoformat() + _DAY_START if shift < 0 else _AFTER_LAST_DAY


_START_COLUMN = re.compile(r"\bstart\b")


def staying(bucket: str) -> str:
    """SQL: a point that stays in its start's bucket (``bucket``, a ``bucket_*`` fragment
    of ``start``): it has no end, or its end is in the same bucket. The others a
    cumulative metric spreads over the buckets they span (``clock.spread``)."""
    at_end = _START_COLUMN.sub('"end"', bucket)
    return f'("end" IS NULL OR {at_end} = {bucket})'


def keep_days(
    sql: Statements,
    conn: Connection,
    account_id: str,
    days_of: dict[str, set[date]],
    *,
    counted: bool = True,
) -> None:
    """Recompute point_day_sums for ``days_of`` (metric -> days of the phone's clock),
    each run of days cleared and summed again from its points; a cumulative metric's
    runs reach ``clock.SPREAD_SPAN`` further, for the days its samples spread onto.
    Their counted days go too (``counted``: False in a migration before 0021's table)."""
    if not days_of:
        return
    imports = conn.execute(
        sql["imported_deliveries"], {"account_id": account_id, **IMPORTS}
    ).fetchall()
    fill = {
        "day": sql["bucket_day"],
        "imported": sql["count_imported"] if imports else "0",
    }
    plain = sql.render("keep_day_sums", **fill)
    # a cumulative metric: the points that stay on their day summed in SQL, the ones
    # that span days spread over them (clock.spread, added by _add_day_parts)
    stays = staying(sql["bucket_day"])
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
                **IMPORTS,
            }
            conn.execute(sql["clear_day_sums"], params)
            if counted:  # the fold counts them again
                conn.execute(sql["clear_counted_days"], params)
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
    span = sql.render("spanning_day_points", span=f"NOT {staying(sql['bucket_day'])}")
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
    return [(run[0], run[-1]) for run in clock.runs_of_days(dates, lambda day: day)]


def _runs(days: list[str]) -> list[tuple[str, str]]:
    try:
        dates = [date.fromisoformat(day) for day in days]
    except ValueError:  # not a time: the write refuses it, or stores it as it came
        return [(days[0], days[-1] + _DAY_END)]
    return [
        (first.isoformat() + _DAY_START, _day_text(last, 1, _DAY_START))
        for first, last in _date_runs(dates)
    ]


class DayTally:
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
        *,
        counted: bool = True,
    ) -> None:
        self._sql = sql
        self._counted = counted  # the schema keeps counted_days
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
        keep_days(self._sql, conn, self._layer.account_id, days_of, counted=self._counted)

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
