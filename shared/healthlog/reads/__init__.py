"""The read side: what the showcase holds, summed up for a person, a plot or a page.

One module over the journal's reads, used by ``healthlog plot``, ``healthlog coverage``,
the dashboard and its ``/api``: a metric's series at a resolution, a daily summary of
several metrics, sleep per night, workouts with their series and route, the other
sections' records, data coverage (days, gaps, late samples) and the deliveries' status.

Resolutions are computed in the database (``Journal.point_buckets``), so a read returns
at most a few thousand rows whatever the range. Times:

* bounds (``start``, ``end``) are half open, read once by ``healthlog.clock.bound``
  (docs/time.md): an aware datetime is that instant; a naive one a wall-clock time on
  the phone's clock of each sample (``datetime(2026, 3, 2)`` is that day as the phone
  lived it, whatever its offset); text is the port's UTC text or a prefix of it;
* a bucket is read on the phone's clock when its points were taken (their UTC offset;
  UTC for points sent without one) and labelled by its local start without an offset
  (``2026-01-05``, ``2026-01-05T13:00``);
* a raw point's time is ISO 8601 with the phone's offset (``2026-01-05T13:04:00+02:00``).

Each metric has a *kind* (``kind_of``): ``cumulative`` metrics (steps, energy, distance,
...) are summed per bucket, ``discrete`` ones (heart rate, weight, ...) summarised by
min, average and max; docs/dashboard.md lists them.
"""

from __future__ import annotations

import difflib
import itertools
import math
from collections import defaultdict
from collections.abc import Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, timezone
from enum import StrEnum
from typing import Any

import orjson

from healthlog import clock, overlap
from healthlog.clock import At, Moment, Wall, first_at_or_after, from_text, meets, to_text
from healthlog.errors import AccountNotFound, HealthlogError
from healthlog.journal.port import (
    BucketRow,
    CatalogEntry,
    DaySum,
    Journal,
    StoredPoint,
    Summary,
)
from healthlog.journal.rows import runs_of_days
from healthlog.model import Account, Delivery, Item, Record

#: at most this many buckets or raw points in one series
MAX_ROWS = 5000


class Kind(StrEnum):
    DISCRETE = "discrete"  # a reading: min, average and max per bucket
    CUMULATIVE = "cumulative"  # an amount over time: summed per bucket


class Resolution(StrEnum):
    RAW = "raw"
    MINUTE = "minute"
    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"


_NUTRIENTS = (
    "biotin", "caffeine", "calcium", "carbohydrates", "chloride", "cholesterol", "chromium",
    "copper", "fiber", "folate", "iodine", "iron", "magnesium", "manganese", "molybdenum",
    "monounsaturated_fat", "niacin", "pantothenic_acid", "phosphorus", "polyunsaturated_fat",
    "potassium", "protein", "riboflavin", "saturated_fat", "selenium", "sodium", "sugar",
    "thiamin", "total_fat", "vitamin_a", "vitamin_b6", "vitamin_b12", "vitamin_c", "vitamin_d",
    "vitamin_e", "vitamin_k", "zinc",
)  # fmt: skip

#: the metrics HAE sends that are amounts over an interval, summed per bucket; every
#: other metric is a reading (documented in docs/dashboard.md, "Metric kinds")
CUMULATIVE = frozenset(
    {
        "active_energy",
        "apple_exercise_time",
        "apple_stand_hour",
        "apple_stand_time",
        "basal_energy_burned",
        "cycling_distance",
        "dietary_energy",
        "dietary_water",
        "distance_cycling",
        "distance_swimming",
        "distance_walking_running",
        "flights_climbed",
        "mindful_minutes",
        "number_of_times_fallen",
        "push_count",
        "step_count",
        "swimming_stroke_count",
        "time_in_daylight",
        "walking_running_distance",
        "wheelchair_distance",
        # HAE's names for the same amounts (hae.units.CANONICAL spells them so)
        "apple_move_time",
        "distance_downhill_snow_sports",
        "downhill_snow_sports",
        "swimming_distance",
        # what was eaten or drunk: amounts per entry, summed per day
        *(f"{prefix}{name}" for prefix in ("", "dietary_") for name in _NUTRIENTS),
    }
)

#: the field that stands for a metric when none is named, in this order of preference
#: (``qty`` and ``avg`` rank together: heart rate comes as min/avg/max from a watch and as
#: qty from other sources, and the field with more points stands for it)
MAIN_FIELDS = ("qty", "avg", "totalSleep", "asleep", "systolic", "segment")

# auto resolution: the finest whose buckets over the range stay under MAX_BUCKETS
MAX_BUCKETS = 2000
#: the fixed-width resolutions, finest first, with a bucket's width (a month has none)
WIDTHS = (
    (Resolution.MINUTE, timedelta(minutes=1)),
    (Resolution.HOUR, timedelta(hours=1)),
    (Resolution.DAY, timedelta(days=1)),
    (Resolution.WEEK, timedelta(weeks=1)),
)


#: the resolutions finer than a day
_SUB_DAY = frozenset({Resolution.MINUTE, Resolution.HOUR})
#: the resolutions read from the days the fold keeps summed (point_day_sums)
_BY_DAYS = frozenset({Resolution.DAY, Resolution.WEEK, Resolution.MONTH})


def kind_of(metric: str) -> Kind:
    return Kind.CUMULATIVE if metric in CUMULATIVE else Kind.DISCRETE


class UnknownName(HealthlogError):
    """No such metric, field or section in this account's data."""


class NotFound(HealthlogError):
    """No such workout, record or delivery."""


class TooHeavy(HealthlogError):
    """A read whose cost, known before it starts, is over its bound; the message says what
    to ask for instead (a coarser resolution, a narrower range)."""


# --- values ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetricInfo:
    """One metric field of an account: its unit, kind, sources and extent."""

    metric: str
    field: str
    unit: str
    kind: Kind
    points: int
    first: str  # UTC text
    last: str
    sources: tuple[str, ...]


@dataclass(slots=True)  # not frozen: a read of years makes one a day, and a frozen
class Sample:  # dataclass sets each field through object.__setattr__ (0.55 µs, not 0.2)
    """One row of a series: a bucket, or a raw point (count 1, min = max = value)."""

    t: str  # a bucket's local start, or a raw point's time with its offset
    value: float | None  # the sum (cumulative) or the average (discrete)
    min: float | None
    max: float | None
    count: int
    source: str | None = None  # raw points only


@dataclass(frozen=True, slots=True)
class Series:
    metric: str
    field: str
    unit: str
    kind: Kind
    resolution: Resolution
    samples: list[Sample]
    truncated: bool = False  # more rows than MAX_ROWS: the first MAX_ROWS are here

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "field": self.field,
            "unit": self.unit,
            "kind": self.kind.value,
            "resolution": self.resolution.value,
            "truncated": self.truncated,
            "samples": [
                {"t": s.t, "value": s.value, "min": s.min, "max": s.max, "count": s.count}
                | ({"source": s.source} if s.source is not None else {})
                for s in self.samples
            ],
        }


@dataclass(frozen=True, slots=True)
class Night:
    """One night's sleep: hours per stage, from one source."""

    night: str  # the local date the night ends on (YYYY-MM-DD)
    source: str
    stages: dict[str, float]  # deep, core, rem, awake, asleep (unstaged), in_bed
    start: str | None = None  # the first segment's time with its offset, when known
    end: str | None = None

    @property
    def asleep_h(self) -> float:
        return _asleep_h(self.stages)


@dataclass(frozen=True, slots=True)
class Gap:
    """Days in a row without data for a metric that has data on most days."""

    first: str  # YYYY-MM-DD, local
    last: str
    days: int


@dataclass(frozen=True, slots=True)
class Coverage:
    metric: str
    days: dict[str, int]  # local day -> points
    gaps: list[Gap]
    late: dict[str, int]  # local day -> points that arrived late
    daily: bool  # the metric has data on most days of its span: gaps are reported

    @property
    def first_day(self) -> str | None:
        return min(self.days) if self.days else None

    @property
    def last_day(self) -> str | None:
        return max(self.days) if self.days else None

    @property
    def late_points(self) -> int:
        return sum(self.late.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "first_day": self.first_day,
            "last_day": self.last_day,
            "days_with_data": len(self.days),
            "daily": self.daily,
            "days": self.days,
            "gaps": [{"first": g.first, "last": g.last, "days": g.days} for g in self.gaps],
            "late": self.late,
            "late_points": self.late_points,
        }


@dataclass(frozen=True, slots=True)
class RouteSummary:
    points: int
    distance_m: float
    elevation_gain_m: float
    bbox: tuple[float, float, float, float] | None  # min lon, min lat, max lon, max lat

    def as_dict(self) -> dict[str, Any]:
        return {
            "points": self.points,
            "distance_m": self.distance_m,
            "elevation_gain_m": self.elevation_gain_m,
            "bbox": list(self.bbox) if self.bbox else None,
        }


@dataclass(frozen=True, slots=True)
class Split:
    """One stretch of a route: its number, length, and time (when its fixes have times)."""

    number: int  # 1, 2, ...
    distance_m: float  # every_m, less for the last stretch
    duration_s: float | None  # None when the route's fixes have no times

    @property
    def pace_s_per_km(self) -> float | None:
        if self.duration_s is None or self.distance_m <= 0:
            return None
        return round(self.duration_s / self.distance_m * 1000, 1)


@dataclass(frozen=True, slots=True)
class HeartRateStats:
    samples: int
    min: float
    avg: float
    max: float
    unit: str | None


@dataclass(frozen=True)
class Workout:
    identity: str
    name: str | None
    start: str | None  # with the workout's offset
    end: str | None
    source: str | None
    body: dict[str, Any]
    series: dict[str, list[Item]] = field(default_factory=dict)
    utc_offset: int | None = None  # the workout's, minutes east of UTC: its items' clock

    def route(self) -> list[Item]:
        return [i for i in self.series.get("route", []) if i.lat is not None and i.lon is not None]

    def route_summary(self) -> RouteSummary:
        return summarise_route(self.route())

    def splits(self, every_m: float = 1000.0) -> list[Split]:
        """The route's splits of ``every_m`` metres (``route_splits``)."""
        return route_splits(self.route(), every_m)

    def heart_rate_stats(self, series: str = "heartRateData") -> HeartRateStats | None:
        """Min, average and max of a heart-rate series (the samples' ``qty``), or None.

        A v2 sample's ``qty`` is its ``Avg`` (its own Min and Max are in ``extra``): the
        average is of the samples, the min and max of their averages.
        """
        items = [i for i in self.series.get(series, []) if i.qty is not None]
        if not items:
            return None
        values = [i.qty for i in items if i.qty is not None]
        units = sorted({i.unit for i in items if i.unit})
        return HeartRateStats(
            samples=len(values),
            min=min(values),
            avg=round(sum(values) / len(values), 2),
            max=max(values),
            unit=units[0] if units else None,
        )


# --- the reads ------------------------------------------------------------------------------


_bound = clock.bound
local_text = clock.local_text


def _units(catalog: Sequence[MetricInfo], metric: str, field: str) -> list[MetricInfo]:
    """The catalog's rows of one field: one a unit it is stored in."""
    return [info for info in catalog if info.metric == metric and info.field == field]


def sample_time(t: str) -> datetime:
    """A sample's time on the phone's clock: a bucket's label, or a raw time, offset dropped."""
    return datetime.fromisoformat(t).replace(tzinfo=None)


def next_bucket(at: datetime, resolution: Resolution) -> datetime:
    """The start of the bucket after the one starting at ``at`` (not for raw points)."""
    if resolution is Resolution.MONTH:
        return at.replace(year=at.year + at.month // 12, month=at.month % 12 + 1, day=1)
    return at + dict(WIDTHS)[resolution]


def auto_resolution(
    start: datetime | None, end: datetime | None, max_buckets: int = MAX_BUCKETS
) -> Resolution:
    """The finest resolution whose buckets over [start, end) stay under ``max_buckets``."""
    if start is None or end is None:
        return Resolution.DAY
    span = end - start
    for resolution, width in WIDTHS:
        if span / width <= max_buckets:
            return resolution
    return Resolution.MONTH


def _span(info: MetricInfo, start: Moment | None, end: Moment | None) -> timedelta:
    """The time ``info``'s field has data over within [start, end), from the catalog."""
    first, last = from_text(info.first), from_text(info.last) + timedelta(minutes=1)
    low, high = _as_datetime(start), _as_datetime(end)
    if low is not None:  # a wall-clock bound read as UTC: hours off at most
        first = max(first, low)
    if high is not None:
        last = min(last, high)
    return max(timedelta(0), last - first)


def bucket_count(span: timedelta, resolution: Resolution) -> int:
    """How many buckets of ``resolution`` a series over ``span`` has at most (a month as
    28 days, so never fewer than there are)."""
    width = timedelta(days=28) if resolution is Resolution.MONTH else dict(WIDTHS)[resolution]
    return math.ceil(span / width)


def resolution_for(
    info: MetricInfo,
    start: Moment | None = None,
    end: Moment | None = None,
    max_buckets: int = MAX_BUCKETS,
) -> Resolution:
    """A series' default resolution for ``plot`` and the MCP tools: the finest whose
    buckets over the part of [start, end) where ``info``'s field has data stay under
    ``max_buckets`` (a picture wants fewer than a table). ``Reads.series`` without a
    resolution (the dashboard) chooses over the range as given: its zoom. A wall-clock
    bound is read as UTC here: it moves the span by hours at most."""
    first, last = from_text(info.first), from_text(info.last) + timedelta(minutes=1)
    low, high = _as_datetime(start), _as_datetime(end)
    if low is not None:
        first = max(first, low)
    if high is not None:
        last = min(last, high)
    return auto_resolution(first, max(first, last), max_buckets)


class Reads:
    """The reads of one account's data."""

    def __init__(
        self,
        journal: Journal,
        account: Account,
        priority: overlap.SourcePriority = overlap.DEFAULT,
    ) -> None:
        self.journal = journal
        self.account = account
        #: which source counts first where cumulative samples overlap (healthlog.overlap)
        self.priority = priority
        self._imported: frozenset[str] | None = None

    @classmethod
    def of(
        cls,
        journal: Journal,
        account_id: str | None = None,
        priority: overlap.SourcePriority = overlap.DEFAULT,
        *,
        choose: str = "--account NAME or --token -",
    ) -> Reads:
        """The reads of an account by id, or of the journal's only account (None).

        Raises AccountNotFound for an unknown id or a journal without accounts, and
        HealthlogError when there are several and none is named (saying to ``choose``
        one with the options given).
        """
        if account_id is not None:
            found = journal.get_account(account_id)
            if found is None:
                raise AccountNotFound("no such account")
            return cls(journal, found, priority)
        accounts = journal.accounts()
        if not accounts:
            raise AccountNotFound("no accounts yet: `healthlog account add NAME` makes one")
        if len(accounts) > 1:
            raise HealthlogError(f"this journal has several accounts: choose one with {choose}")
        return cls(journal, accounts[0], priority)

    # --- names --------------------------------------------------------------------------

    def catalog(self) -> list[MetricInfo]:
        """Every metric field the account has, with its unit, kind, sources and extent."""
        grouped: dict[tuple[str, str, str], list[CatalogEntry]] = defaultdict(list)
        for entry in self.journal.catalog(self.account.id):
            grouped[(entry.metric, entry.field, entry.unit)].append(entry)
        return [
            MetricInfo(
                metric=metric,
                field=field_,
                unit=unit,
                kind=kind_of(metric),
                points=sum(e.points for e in entries),
                first=min(e.first for e in entries),
                last=max(e.last for e in entries),
                sources=tuple(sorted({e.source for e in entries})),
            )
            for (metric, field_, unit), entries in sorted(grouped.items())
        ]

    def metric_fields(
        self, metric: str, catalog: Sequence[MetricInfo] | None = None
    ) -> list[MetricInfo]:
        """The fields of ``metric``; UnknownName (naming the nearest) if it has none.

        ``catalog``: the account's ``catalog()`` when the caller has read it already (a
        read that looks up several fields or metrics reads it once).
        """
        if catalog is None:
            catalog = self.catalog()
        found = [info for info in catalog if info.metric == metric]
        if not found:
            names = sorted({info.metric for info in catalog})
            raise UnknownName(unknown_name("metric", metric, names))
        return found

    def field_names(self, metric: str, catalog: Sequence[MetricInfo] | None = None) -> list[str]:
        """The names of ``metric``'s fields, each once (a field stored in two units is one
        field), in ``metric_fields``' order."""
        return list(dict.fromkeys(info.field for info in self.metric_fields(metric, catalog)))

    def main_field(
        self,
        metric: str,
        field_: str | None = None,
        *,
        catalog: Sequence[MetricInfo] | None = None,
    ) -> MetricInfo:
        """The field asked for, or the one that stands for the metric."""
        fields = self.metric_fields(metric, catalog)
        by_name: dict[str, MetricInfo] = {}
        for info in fields:  # a field sent in two units: the unit with more points
            if info.field not in by_name or info.points > by_name[info.field].points:
                by_name[info.field] = info
        if field_ is not None:
            if field_ not in by_name:
                raise UnknownName(unknown_name(f"field of {metric}", field_, sorted(by_name)))
            return by_name[field_]
        first = [by_name[name] for name in ("qty", "avg") if name in by_name]
        if first:
            return max(first, key=lambda info: info.points)  # qty wins a tie
        for name in MAIN_FIELDS:
            if name in by_name:
                return by_name[name]
        return fields[0]

    # --- one metric ---------------------------------------------------------------------

    def series(
        self,
        metric: str,
        *,
        field: str | None = None,
        start: Moment | None = None,
        end: Moment | None = None,
        resolution: Resolution | None = None,
        source: str | None = None,
        limit: int = MAX_ROWS,
        catalog: Sequence[MetricInfo] | None = None,
        info: MetricInfo | None = None,
    ) -> Series:
        """A metric field over [start, end) at a resolution (default: from the range).

        ``info``: the field as ``range_field`` gave it for these bounds and source, when
        the caller has it already (the unit is not chosen again).

        A field stored in more than one unit (one the phone's preferences change and no
        conversion relates, such as glucose in mg/dL and mmol/L) is read in one unit
        alone, the one ``range_field`` gives: a series never averages or sums two units
        (a range across the change shows the unit with more points there).

        The ``avg`` of a discrete metric sent as Min/Avg/Max (heart rate) has the lowest
        ``min`` and the highest ``max`` sent in each sample for its band, not the least
        and greatest of its averages (``_with_band``).
        """
        if catalog is None:
            catalog = self.catalog()
        if info is None:
            info = self.range_field(
                metric, field, start=start, end=end, source=source, catalog=catalog
            )
        if resolution is not None and resolution is not Resolution.RAW:
            self._within_bound(info, start, end, resolution, limit)
        found = self._series(info, start, end, resolution, source, limit, catalog)
        return self._with_band(found, start, end, source, limit, catalog)

    def _within_bound(
        self,
        info: MetricInfo,
        start: Moment | None,
        end: Moment | None,
        resolution: Resolution,
        limit: int,
    ) -> None:
        """TooHeavy, before any read, for a series of more buckets than ``limit``.

        The buckets a series can have are bounded by the span of its data in the range
        (the catalog's extent); where that bound is over ``limit``, by the days of the
        phone's clock that have data and their points (one row a day, kept by the fold):
        no more buckets than points, and no more than a day holds on each of those days.
        So minute buckets over a year of minute data are refused at once, and over a
        month of three days of data they are read.
        """
        span = _span(info, start, end)
        if bucket_count(span, resolution) <= limit:
            return
        day_from, day_to = _day_span(_bound(start), _bound(end))
        days = [
            points
            for metric, _, points in self.journal.metric_days(
                account_id=self.account.id, metric=info.metric, day_from=day_from, day_to=day_to
            )
            if metric == info.metric
        ]

        def most(r: Resolution) -> int:
            within_days = (
                len(days) * bucket_count(timedelta(days=1), r) if r in _SUB_DAY else len(days)
            )
            return min(bucket_count(span, r), within_days, sum(days))

        count = most(resolution)
        if count <= limit:
            return
        order = [r for r, _ in WIDTHS] + [Resolution.MONTH]
        fits = [r for r in order[order.index(resolution) + 1 :] if most(r) <= limit]
        instead = (
            f"use {fits[0].value} or coarser, or narrow the range" if fits else "narrow the range"
        )
        raise TooHeavy(
            f"resolution {resolution.value} gives up to {count} buckets over this range, more"
            f" than {limit} buckets in one read: {instead}"
        )

    def _with_band(
        self,
        series: Series,
        start: Moment | None,
        end: Moment | None,
        source: str | None,
        limit: int,
        catalog: Sequence[MetricInfo],
    ) -> Series:
        """``series`` with its samples' min and max from the metric's ``min`` and ``max``
        fields, where it is the ``avg`` of a discrete metric that has both in its unit."""
        if series.field != "avg" or series.kind is not Kind.DISCRETE:
            return series
        sent = {
            info.field
            for info in catalog
            if info.metric == series.metric and info.unit == series.unit
        }
        if not {"min", "max"} <= sent:
            return series
        raw = series.resolution is Resolution.RAW
        bounds = []
        for name in ("min", "max"):
            info = self.range_field(
                series.metric, name, start=start, end=end, source=source, catalog=catalog
            )
            found = self._series(info, start, end, series.resolution, source, limit, catalog)
            if found.unit != series.unit:
                return series  # its main unit is another: nothing to band with
            bounds.append(
                {
                    (s.t, s.source if raw else None): s.min if name == "min" else s.max
                    for s in found.samples
                }
            )
        lows, highs = bounds
        for s in series.samples:
            key = (s.t, s.source if raw else None)
            low, high = lows.get(key), highs.get(key)
            if low is not None and (s.min is None or low < s.min):
                s.min = low
            if high is not None and (s.max is None or high > s.max):
                s.max = high
        return series

    def range_field(
        self,
        metric: str,
        field: str | None = None,
        *,
        start: Moment | None = None,
        end: Moment | None = None,
        source: str | None = None,
        catalog: Sequence[MetricInfo] | None = None,
    ) -> MetricInfo:
        """``main_field``, in the unit a read of [start, end) takes: for a field stored in
        several units, the one with the most points there (a week of mmol/L after years
        of mg/dL reads in mmol/L), so what says the unit and what reads the values agree."""
        if catalog is None:
            catalog = self.catalog()
        main = self.main_field(metric, field, catalog=catalog)
        units = _units(catalog, metric, main.field)
        if len(units) == 1:
            return main
        chosen = self._range_unit(main, units, start, end, source)
        return next(i for i in units if i.unit == chosen)

    def _range_unit(
        self,
        main: MetricInfo,
        infos: list[MetricInfo],
        start: Moment | None,
        end: Moment | None,
        source: str | None,
    ) -> str:
        """Of a field's units, the one with the most points in [start, end); ``main``'s
        where none has any."""
        counts = {
            info.unit: sum(
                row.count
                for row in self.journal.point_buckets(
                    account_id=self.account.id,
                    metric=main.metric,
                    field=main.field,
                    bucket="month",
                    start_from=_bound(start),
                    start_to=_bound(end),
                    source=source,
                    unit=info.unit,
                )
            )
            for info in infos
        }
        best = max(infos, key=lambda info: (counts[info.unit], info is main, info.points))
        return best.unit if counts[best.unit] else main.unit

    def _series(
        self,
        info: MetricInfo,
        start: Moment | None,
        end: Moment | None,
        resolution: Resolution | None,
        source: str | None,
        limit: int,
        catalog: Sequence[MetricInfo],
    ) -> Series:
        """``series`` of the field ``info`` (``range_field``'s), without the band of its
        Min and Max."""
        metric = info.metric
        several = len(_units(catalog, metric, info.field)) > 1
        unit = info.unit if several else None  # no filter where the field has one unit
        if resolution is None:  # the dashboard's rule: its zoom is the range
            resolution = auto_resolution(_as_datetime(start), _as_datetime(end))
        kind = info.kind
        # the kept days sum every unit of a field together: not for a field of several
        by_days = source is None and unit is None and resolution in _BY_DAYS
        # by days, the kept days say day by day where the rule applies: no read beforehand
        ruled = not by_days and self.overlaps_possible(info, source, start=start, end=end)
        if resolution is Resolution.RAW:
            samples: list[Sample] = []
            truncated = False
            points = self.counted_points(
                metric, info.field, start=start, end=end, source=source, ruled=ruled, unit=unit
            )
            for found in points:
                if len(samples) >= limit:
                    truncated = True
                    # end the stream now: its snapshot is not held until collected
                    points.close()
                    break
                p = found.item.point
                t = local_text(p.start, p.utc_offset)
                assert t is not None
                value = found.counted
                samples.append(Sample(t, value, value, value, 1, p.source))
            return Series(metric, info.field, info.unit, kind, resolution, samples, truncated)
        if by_days:
            kept = self._by_days(metric, info, start, end, resolution)
            return Series(
                metric, info.field, info.unit, kind, resolution, kept[:limit], len(kept) > limit
            )
        if ruled:
            counted = self.counted_points(
                metric, info.field, start=start, end=end, source=source, unit=unit
            )
            rows = overlap.buckets(counted, resolution.value)
        else:
            rows = self.journal.point_buckets(
                account_id=self.account.id,
                metric=metric,
                field=info.field,
                bucket=resolution.value,  # type: ignore[arg-type]
                start_from=_bound(start),
                start_to=_bound(end),
                source=source,
                unit=unit,
            )
        samples = [_sample(row, kind) for row in rows[:limit]]
        return Series(metric, info.field, info.unit, kind, resolution, samples, len(rows) > limit)

    def _by_days(
        self,
        metric: str,
        info: MetricInfo,
        start: Moment | None,
        end: Moment | None,
        resolution: Resolution,
    ) -> list[Sample]:
        """Days, weeks or months from the days the fold keeps summed (point_day_sums).

        A kept day counts as it is when the range holds all of it and the overlap rule
        cannot count it otherwise (one source, or a discrete metric; one origin). The
        other days the range reaches (cut by its ends, or where sources or origins
        overlap) are summed from their points, as any other read does: so the cost
        follows the days, and the numbers are the points' own.
        """
        low, high = _bound(start), _bound(end)
        day_from, day_to = _day_span(low, high)
        may = self._may_overlap(info)
        by_day = resolution is Resolution.DAY
        cumulative = info.kind is Kind.CUMULATIVE
        rows: dict[str, Sample] = {}  # by_day: the samples themselves
        days: dict[str, overlap.Sums] = {}
        rest: list[DaySum] = []
        for kept in self.journal.day_sums(
            account_id=self.account.id,
            metric=metric,
            field=info.field,
            day_from=day_from,
            day_to=day_to,
        ):
            # a read of years makes this loop its hot path: the row unpacked once
            day, points, valued, total, least, most, earliest, latest, _, _ = kept
            reached = _day_in(day, earliest, latest, low, high)
            if reached is None:
                continue  # none of the day's points is in the range
            if reached and not (may and _mixed(kept, info)):
                if by_day:  # the day's sample itself, no sums to add up
                    value = total if cumulative or total is None else total / valued
                    rows[day] = Sample(day, value, least, most, points)
                else:
                    days[day] = overlap.Sums(points, valued, total, least, most)
            else:
                rest.append(kept)
        for run in runs_of_days(rest, lambda kept: date.fromisoformat(kept.day)):
            # each run of consecutive days on its own: a range cut at both ends reads
            # the points of its first and last days, not of every day between
            wanted = {kept.day for kept in run}
            lowest = min(kept.first for kept in run)
            latest = max(kept.last for kept in run)
            after = _moved(from_text(latest), timedelta(microseconds=1))
            counted = self.counted_points(
                metric,
                info.field,
                start=_tighter(low, lowest, run[0].day, later=False),
                end=_tighter(high, after, run[-1].day, later=True),
                ruled=may and any(_mixed(kept, info) for kept in run),
            )
            for day, sums in overlap.sums_by(counted, "day").items():
                if day in wanted:
                    if by_day:
                        rows[day] = _sample(sums.row(day), info.kind)
                    else:
                        days[day] = sums
        if by_day:
            return [rows[day] for day in sorted(rows)]
        return [_sample(row, info.kind) for row in overlap.roll_up(days, resolution.value)]

    # --- one truth where sources overlap -------------------------------------------------

    def imported(self) -> frozenset[str]:
        """The ids of the account's imports of the Health app's export (read once)."""
        if self._imported is None:
            self._imported = self.journal.imported_deliveries(self.account.id)
        return self._imported

    def overlaps_possible(
        self,
        info: MetricInfo,
        source: str | None = None,
        *,
        start: Moment | None = None,
        end: Moment | None = None,
    ) -> bool:
        """Whether the overlap rule can change a read of ``info`` (else: plain SQL).

        Only a day with points of an import and of HAE (rule 1), or, for a cumulative
        metric read without a source filter, a day with several sources (rule 2), can be
        counted otherwise; the days the fold keeps summed say whether the range has one.
        """
        if not self._may_overlap(info, source):
            return False  # neither can happen here, whatever the days hold
        day_from, day_to = _day_span(_bound(start), _bound(end))
        return any(
            _mixed(kept, info, source)
            for kept in self.journal.day_sums(
                account_id=self.account.id,
                metric=info.metric,
                field=info.field,
                day_from=day_from,
                day_to=day_to,
            )
        )

    def _may_overlap(self, info: MetricInfo, source: str | None = None) -> bool:
        """Whether any day of ``info`` could be counted otherwise: an account with imports
        (rule 1), or a cumulative metric of several sources read whole (rule 2)."""
        if self.imported():
            return True
        return info.kind is Kind.CUMULATIVE and source is None and len(info.sources) > 1

    def counted_points(
        self,
        metric: str,
        field: str | None = None,
        *,
        start: Moment | None = None,
        end: Moment | None = None,
        source: str | None = None,
        ruled: bool = True,
        unit: str | None = None,
    ) -> Generator[overlap.Candidate[StoredPoint], None, None]:
        """The stored points of ``metric`` in [start, end) that count, with how much.

        ``ruled=False``: every point, counted whole (a read the rule cannot change).
        ``unit``: only the points stored in it (a field stored in several).
        """
        low, high = (_bound(start), _bound(end))
        if ruled:
            low, high = widened(low, high)
        stored = self.journal.export_points(
            account_id=self.account.id,
            metric=metric,
            field=field,
            source=source,
            unit=unit,
            start_from=low,
            start_to=high,
        )
        try:
            if ruled:
                # the caller found the rule can apply: no second look for imports and
                # sources (counted_stream's, for an export of many metrics and accounts)
                cumulative = kind_of(metric) is Kind.CUMULATIVE
                within = (_bound(start), _bound(end))
                yield from _ruled(stored, self.imported(), cumulative, self.priority, within=within)
            else:
                yield from (_candidate(p, frozenset()) for p in stored)
        finally:
            close = getattr(stored, "close", None)
            if close is not None:
                close()  # end the stream now: its snapshot is not held until collected

    def daily(
        self,
        metrics: Sequence[str],
        *,
        start: Moment | None = None,
        end: Moment | None = None,
        catalog: Sequence[MetricInfo] | None = None,
    ) -> list[dict[str, Any]]:
        """A day a row: for each metric its day's value (sum or average), in day order."""
        days: dict[str, dict[str, Any]] = {}
        if catalog is None:
            catalog = self.catalog()
        for metric in metrics:
            series = self.series(
                metric, start=start, end=end, resolution=Resolution.DAY, catalog=catalog
            )
            for sample in series.samples:
                days.setdefault(sample.t, {"day": sample.t})[metric] = sample.value
        return [days[day] for day in sorted(days)]

    def day_totals(self) -> Iterator[tuple[str, str, str, str, str, float | None, int]]:
        """Every metric's days as ``daily`` gives them, for the SQL tool's ``my_daily``:
        (metric, field, unit, value_is, day, value, points). ``value`` is what the other
        tools count: a cumulative metric's day sum with overlapping sources counted once,
        a discrete one's average."""
        catalog = self.catalog()
        for metric in sorted({info.metric for info in catalog}):
            series = self.series(
                metric, resolution=Resolution.DAY, catalog=catalog, limit=1_000_000
            )
            value_is = "sum" if series.kind is Kind.CUMULATIVE else "average"
            for s in series.samples:
                yield metric, series.field, series.unit, value_is, s.t, s.value, s.count

    # --- sleep --------------------------------------------------------------------------

    def sleep_nights(
        self, *, start: Moment | None = None, end: Moment | None = None
    ) -> list[Night]:
        """Sleep per night: aggregated nights as sent, segments summed per stage.

        A night is labelled by the local date of its start plus twelve hours (a night
        that starts at 23:00 or at 02:00 belongs to the morning after). Where several
        sources report one night, the one with the most sleep is kept; a source that sent
        the night both as segments and aggregated counts once (the shape with more sleep).
        A segment sent without ``qty`` counts for its ``end`` minus its start; an
        aggregated night that has only ``totalSleep`` counts it as ``asleep``.

        A range ``[start, end)`` holds the nights whose label's midnight (on the bound's
        own clock) is in it, each whole: its segments are read from two days either side
        of the range (a night's label is within a day of its segments' starts, on any
        offset), so a night is never cut where the range begins or ends.
        """
        low, high = _as_given(start), _as_given(end)
        nights: dict[tuple[str, str, bool], dict[str, Any]] = {}
        for stored in self.journal.export_points(
            account_id=self.account.id,
            metric="sleep_analysis",
            start_from=_moved(_as_datetime(low), -_NIGHT_REACH),
            start_to=_moved(_as_datetime(high), _NIGHT_REACH),
        ):
            p = stored.point
            local = clock.local_of(p.start, p.utc_offset)
            label = (local + timedelta(hours=12)).date().isoformat()
            segment = p.field == "segment"
            night = nights.setdefault(
                (label, p.source, segment),
                {"stages": defaultdict(float), "start": None, "end": None, "total": 0.0},
            )
            span = (p.start, p.end or p.start, p.utc_offset) if segment else _night_span(p.extra)
            if span is not None:
                first, last, offset = span
                if night["start"] is None or first < night["start"][0]:
                    night["start"] = (first, offset)
                if night["end"] is None or last > night["end"][0]:
                    night["end"] = (last, offset)
            hours = p.qty
            if hours is None and segment and p.end is not None:
                hours = (from_text(p.end) - from_text(p.start)).total_seconds() / 3600
            if p.field == "totalSleep" and hours is not None:
                night["total"] += hours
            stage = _stage(p.field, p.text)
            if stage is not None and hours is not None:
                night["stages"][stage] += hours
        best: dict[str, Night] = {}
        for (label, source, _), night in sorted(nights.items()):
            if not _night_within(label, low, high):
                continue
            stages = night["stages"]
            if night["total"] > 0 and not _asleep_h(stages):
                stages["asleep"] += night["total"]
            candidate = Night(
                label,
                source,
                {k: round(v, 4) for k, v in sorted(stages.items())},
                None if night["start"] is None else local_text(*night["start"]),
                None if night["end"] is None else local_text(*night["end"]),
            )
            kept = best.get(label)
            if kept is None or (candidate.asleep_h, source) > (kept.asleep_h, kept.source):
                best[label] = candidate
        return [best[label] for label in sorted(best)]

    # --- records ------------------------------------------------------------------------

    def workouts(self, *, start: Moment | None = None, end: Moment | None = None) -> list[Workout]:
        """The workouts in [start, end), without their series."""
        return [
            _workout(stored.record)
            for stored in self.journal.export_records(
                account_id=self.account.id,
                section="workouts",
                start_from=_bound(start),
                start_to=_bound(end),
                with_items=False,
            )
        ]

    def workout(self, identity: str) -> Workout:
        """One workout with its series (route, heart rate, ...)."""
        found = list(
            self.journal.export_records(
                account_id=self.account.id, section="workouts", identity=identity
            )
        )
        if not found:
            raise NotFound("no such workout")
        return _workout(found[0].record)

    def records(
        self,
        section: str,
        *,
        start: Moment | None = None,
        end: Moment | None = None,
        with_items: bool = False,
    ) -> list[dict[str, Any]]:
        """The records of a section other than metrics, as dicts a page or a model reads."""
        return [
            record_dict(stored.record)
            for stored in self.journal.export_records(
                account_id=self.account.id,
                section=section,
                start_from=_bound(start),
                start_to=_bound(end),
                with_items=with_items,
            )
        ]

    def sections(self) -> dict[str, int]:
        """The sections other than metrics that the account has, with their records."""
        return dict(sorted(self.journal.summary(self.account.id).records.items()))

    def require_section(self, section: str) -> int:
        """The records of ``section``; UnknownName (naming the nearest) if it has none."""
        have = self.sections()
        if section not in have:
            raise UnknownName(unknown_name("section", section, sorted(have)))
        return have[section]

    # --- the truth about the data and the deliveries -------------------------------------

    def coverage(
        self,
        *,
        metric: str | None = None,
        start: Moment | None = None,
        end: Moment | None = None,
    ) -> list[Coverage]:
        """Per metric: points per local day, the gaps, and the points that came late.

        Whole days of the phone's clock: from the day ``start`` falls on up to the last
        day ``end`` reaches into (each read on its own clock).
        """
        if metric is not None:
            self.metric_fields(metric)  # an unknown name is an error, not an empty list
        bounds = {"day_from": _first_day(start), "day_to": _day_after(end)}
        days: dict[str, dict[str, int]] = defaultdict(dict)
        for name, day, count in self.journal.metric_days(
            account_id=self.account.id, metric=metric, **bounds
        ):
            days[name][day] = count
        late: dict[str, dict[str, int]] = defaultdict(dict)
        for name, day, count in self.journal.late_points(
            account_id=self.account.id, metric=metric, **bounds
        ):
            late[name][day] = count
        result = []
        for name in sorted(days):
            gaps, daily = find_gaps(days[name])
            result.append(Coverage(name, days[name], gaps, late.get(name, {}), daily))
        return result

    def status(self) -> Summary:
        return self.journal.summary(self.account.id)

    def deliveries(self, *, limit: int = 100) -> list[Delivery]:
        return self.journal.deliveries(account_id=self.account.id, limit=limit, newest_first=True)

    def delivery(self, delivery_id: str) -> Delivery:
        found = self.journal.get_delivery(delivery_id)
        if found is None or found.account_id != self.account.id:
            raise NotFound("no such delivery")
        return found


# --- rules ----------------------------------------------------------------------------------

#: a metric is *daily* when at least this share of the days of its span have data; only
#: then is a day without data a gap (a weekly weigh-in has no gaps between weigh-ins)
DAILY_SHARE = 0.5


def _mixed(kept: DaySum, info: MetricInfo, source: str | None = None) -> bool:
    """Whether the overlap rule can count a kept day otherwise than its sums: points of an
    import and of HAE (rule 1), or several sources of a cumulative metric (rule 2)."""
    several = info.kind is Kind.CUMULATIVE and source is None and kept.sources > 1
    return 0 < kept.imported < kept.points or several


def _day_span(low: At | None, high: At | None) -> tuple[str, str]:
    """The days of the phone's clock [low, high) can reach (``clock.day_from``/``day_to``),
    the calendar's ends where there is no bound or it leaves the calendar."""
    # text bounds past any day
    return clock.day_from(low) or "0000-01-01", clock.day_to(high) or "9999-99-99"


def _day_in(day: str, earliest: str, latest: str, low: At | None, high: At | None) -> bool | None:
    """How a kept day of the phone's clock meets [low, high): None when none of its
    points can be in it, True when all of them are, False when it is cut."""
    whole = True
    for edge, after in ((low, True), (high, False)):
        if edge is None:
            continue
        if isinstance(edge, Wall):
            midnight = datetime.fromisoformat(day)
            first, last = midnight, midnight + timedelta(days=1)
            if (last <= edge.at) if after else (first >= edge.at):
                return None
            whole = whole and ((first >= edge.at) if after else (last <= edge.at))
        else:
            if (latest < edge) if after else (earliest >= edge):
                return None
            whole = whole and ((earliest >= edge) if after else (latest < edge))
    return whole


def _tighter(edge: At | None, own: str | None, day: str, *, later: bool) -> At | None:
    """A run of cut days' bound: its own UTC end (``own``, from its points) or the range's
    ``edge``, whichever cuts more; a wall-clock edge where the run reaches its day."""
    if edge is None:
        return own
    if isinstance(edge, Wall):
        reaches = day >= edge.day().isoformat() if later else day <= edge.day().isoformat()
        return edge if reaches else own
    if own is None:
        return edge
    return min(edge, own) if later else max(edge, own)


def widened(low: At | None, high: At | None) -> tuple[At | None, At | None]:
    """Bounds a day wider on each side: the overlap rule decides each day whole.

    A day of the phone's clock reaches up to a day (``clock.REACH``) past its UTC day, so the
    points read from a day before ``low`` to a day after ``high`` hold every day that
    [low, high) touches; ``counted_stream(within=...)`` cuts them back once decided.
    """
    return _shifted(low, -timedelta(days=1)), _shifted(high, timedelta(days=1))


def _shifted(at: At | None, by: timedelta) -> At | None:
    if isinstance(at, Wall):
        try:
            return Wall(at.at + by)
        except OverflowError:
            return None
    return _moved(_as_datetime(at), by)


#: how far from a range's ends the segments of a night it holds may start: a night's
#: label is the local date twelve hours after a segment's start, and an offset is under a
#: day, so two days holds every segment of every night labelled in the range
_NIGHT_REACH = timedelta(days=2)


def _night_within(label: str, first: datetime | None, last: datetime | None) -> bool:
    """Whether the night labelled ``label`` (``yyyy-MM-dd``) is in ``[first, last)``: its
    label's midnight, on each bound's own clock (the phone's for a naive bound)."""
    day = date.fromisoformat(label)
    for bound, after in ((first, True), (last, False)):
        if bound is None:
            continue
        midnight = datetime(day.year, day.month, day.day, tzinfo=bound.tzinfo)
        if (midnight < bound) if after else (midnight >= bound):
            return False
    return True


def _moved(at: datetime | None, by: timedelta) -> str | None:
    """``at`` moved ``by``, as stored text; None (no bound) past the calendar's ends."""
    if at is None:
        return None
    try:
        return to_text(at + by)
    except OverflowError:
        return None


def counted_stream(
    journal: Journal,
    stored: Iterable[StoredPoint],
    priority: overlap.SourcePriority = overlap.DEFAULT,
    *,
    keep_all: bool = False,
    within: tuple[At | None, At | None] = (None, None),
) -> Iterator[overlap.Candidate[StoredPoint]]:
    """Stored points in export order (account, metric, start), as the overlap rule counts them.

    Each account's imports are looked up once. ``within``: only points that start in
    [low, high) come out (read them ``widened``, so their days are decided whole).
    """
    low, high = within
    imported: dict[str, frozenset[str]] = {}
    several: dict[str, set[str]] = {}  # per account: cumulative metrics of several sources
    for (account_id, metric), group in itertools.groupby(
        stored, key=lambda p: (p.account_id, p.point.metric)
    ):
        if account_id not in imported:
            imported[account_id] = ids = journal.imported_deliveries(account_id)
            if not ids:
                sources: dict[str, set[str]] = defaultdict(set)
                for entry in journal.catalog(account_id):
                    sources[entry.metric].add(entry.source)
                several[account_id] = {m for m, found in sources.items() if len(found) > 1}
        ids = imported[account_id]
        cumulative = kind_of(metric) is Kind.CUMULATIVE
        if not ids and not (cumulative and metric in several[account_id]):
            # nothing the rules could change: every point counts whole, as it comes
            for p in group:
                point = p.point
                if meets(point.start, point.utc_offset, low, high):
                    yield _candidate(p, ids)
            continue
        yield from _ruled(group, ids, cumulative, priority, keep_all=keep_all, within=within)


def _ruled(
    stored: Iterable[StoredPoint],
    imported: frozenset[str],
    cumulative: bool,
    priority: overlap.SourcePriority,
    *,
    keep_all: bool = False,
    within: tuple[At | None, At | None] = (None, None),
) -> Iterator[overlap.Candidate[StoredPoint]]:
    """One metric's stored points (in start order) as the rule counts them, those that
    start in ``within`` ([low, high)); ``imported``: the account's imports."""
    low, high = within
    for found in overlap.counted(
        (_candidate(p, imported) for p in stored),
        cumulative=cumulative,
        priority=priority,
        keep_all=keep_all,
    ):
        if meets(found.start, found.utc_offset, low, high):
            yield found


def _candidate(p: StoredPoint, imported: frozenset[str]) -> overlap.Candidate[StoredPoint]:
    point = p.point
    return overlap.Candidate(
        point.field,
        point.start,
        point.end,
        point.utc_offset,
        point.source,
        point.qty,
        p.delivery_id,
        p.delivery_id in imported,
        p,
        point.qty,
    )


def find_gaps(days: dict[str, int]) -> tuple[list[Gap], bool]:
    """The runs of days without data between a metric's first and last day with data.

    Reported only for a *daily* metric (``DAILY_SHARE``); returns (gaps, daily).
    """
    if not days:
        return [], False
    have = sorted(date.fromisoformat(day) for day in days)
    span = (have[-1] - have[0]).days + 1
    daily = len(have) / span >= DAILY_SHARE
    if not daily:
        return [], False
    gaps = []
    for before, after in itertools.pairwise(have):
        missing = (after - before).days - 1
        if missing > 0:
            first, last = before + timedelta(days=1), after - timedelta(days=1)
            gaps.append(Gap(first.isoformat(), last.isoformat(), missing))
    return gaps, True


def summarise_route(route: Iterable[Item]) -> RouteSummary:
    """Distance (great circle, m), elevation gain (m) and bounding box of a route."""
    fixes = [i for i in route if i.lat is not None and i.lon is not None]
    distance = gain = 0.0
    for a, b in itertools.pairwise(fixes):
        distance += _haversine_m(a.lat, a.lon, b.lat, b.lon)  # type: ignore[arg-type]
        if a.alt is not None and b.alt is not None and b.alt > a.alt:
            gain += b.alt - a.alt
    if not fixes:
        return RouteSummary(0, 0.0, 0.0, None)
    lons = [i.lon for i in fixes if i.lon is not None]
    lats = [i.lat for i in fixes if i.lat is not None]
    bbox = (min(lons), min(lats), max(lons), max(lats))
    return RouteSummary(len(fixes), round(distance, 1), round(gain, 1), bbox)


def route_splits(route: Sequence[Item], every_m: float = 1000.0) -> list[Split]:
    """The route cut every ``every_m`` metres of great-circle distance, in order.

    A split's duration is read off the fixes' times, each boundary placed between the two
    fixes that straddle it in proportion to the distance (None when a fix has no time);
    the last split is what is left, when anything is. No fixes, or a route that does not
    move: no splits.
    """
    fixes = [i for i in route if i.lat is not None and i.lon is not None]
    timed = all(i.t is not None for i in fixes)
    seconds = [from_text(i.t).timestamp() if i.t is not None else 0.0 for i in fixes]
    splits: list[Split] = []
    done = 0.0  # the distance up to the last boundary
    at = 0.0  # the distance up to the current fix
    boundary_s = seconds[0] if fixes else 0.0
    for n in range(1, len(fixes)):
        a, b = fixes[n - 1], fixes[n]
        step = _haversine_m(a.lat, a.lon, b.lat, b.lon)  # type: ignore[arg-type]
        while step > 0 and at + step >= done + every_m:
            share = (done + every_m - at) / step
            crossed = seconds[n - 1] + share * (seconds[n] - seconds[n - 1])
            duration = round(crossed - boundary_s, 1) if timed else None
            splits.append(Split(len(splits) + 1, every_m, duration))
            done += every_m
            boundary_s = crossed
        at += step
    rest = at - done
    if rest >= 0.5:  # less than half a metre left is rounding, not a stretch
        duration = round(seconds[-1] - boundary_s, 1) if timed else None
        splits.append(Split(len(splits) + 1, round(rest, 1), duration))
    return splits


def _haversine_m(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    radius = 6_371_008.8  # the mean Earth radius
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * radius * math.asin(math.sqrt(min(1.0, h)))


_STAGES = {
    "deep": "deep",
    "core": "core",
    "rem": "rem",
    "awake": "awake",
    "asleep": "asleep",
    "inbed": "in_bed",
    "in bed": "in_bed",
    "in_bed": "in_bed",
    "asleepunspecified": "asleep",
}


def _asleep_h(stages: dict[str, float]) -> float:
    """The hours of sleep among a night's stages: all but awake and in bed."""
    return sum(v for k, v in stages.items() if k not in ("awake", "in_bed"))


def _stage(field_: str, text: str | None) -> str | None:
    """The stage a sleep point stands for (None: a total, counted by its stages)."""
    if field_ == "segment":
        return _STAGES.get((text or "").strip().lower())
    if field_ == "totalSleep":
        return None
    return _STAGES.get(field_.lower())


def _sample(row: BucketRow, kind: Kind) -> Sample:
    value = row.sum if kind is Kind.CUMULATIVE else row.avg
    return Sample(row.start, value, row.min, row.max, row.count)


def _zone(offset_min: int | None) -> timezone:
    return UTC if offset_min is None else timezone(timedelta(minutes=offset_min))


def _night_span(extra: str | None) -> tuple[str, str, int | None] | None:
    """An aggregated night's sleepStart and sleepEnd (kept in ``extra`` as sent) as UTC
    text, with sleepStart's offset; None when it did not send both."""
    if extra is None:
        return None
    from healthlog.hae import dates

    sent = orjson.loads(extra)
    try:
        first, offset = dates.instant(sent["sleepStart"])
        last = dates.instant(sent["sleepEnd"])[0]
    except (KeyError, TypeError, ValueError):
        return None
    return first, last, offset


def _as_given(at: Moment | None) -> datetime | None:
    """A bound as a datetime: naive (on the phone's clock) or aware as given; text as
    the aware instant it names."""
    return at if at is None or isinstance(at, datetime) else _as_datetime(at)


def _as_datetime(at: Moment | None) -> datetime | None:
    """A bound as an aware datetime: the port's text, or a prefix of it (``2024-01``)."""
    if isinstance(at, Wall):
        at = at.at
    if at is None or isinstance(at, datetime):
        return at if at is None or at.tzinfo is not None else at.replace(tzinfo=UTC)
    try:
        parsed = from_text(at)
    except ValueError:
        return first_at_or_after(at)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _first_day(at: Moment | None) -> str | None:
    """The day a range's start falls on, on its own clock: coverage counts whole days."""
    found = _as_datetime(at)
    return None if found is None else found.date().isoformat()


def _day_after(at: Moment | None) -> str | None:
    """The first day a range's (exclusive) end leaves out: a day it reaches into is in."""
    found = _as_datetime(at)
    if found is None:
        return None
    day = found.date()
    if found.time() != time():
        day += timedelta(days=1)
    return day.isoformat()


def unknown_name(what: str, name: str, known: Sequence[str]) -> str:
    near = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    listing = "" if near or not known else f"; known: {', '.join(known[:20])}"
    return f"no {what} named {name!r} in this account's data{hint}{listing}"


def _workout(record: Record) -> Workout:
    series: dict[str, list[Item]] = defaultdict(list)
    for item in record.items:
        series[item.series].append(item)
    return Workout(
        identity=record.identity,
        name=record.name,
        start=local_text(record.start, record.utc_offset),
        end=local_text(record.end, record.utc_offset),
        source=record.source,
        body=orjson.loads(record.body),
        series=dict(series),
        utc_offset=record.utc_offset,
    )


def record_dict(record: Record) -> dict[str, Any]:
    """A record as plain values: times with their offset, the body as JSON, items by series."""
    out: dict[str, Any] = {
        "section": record.section,
        "identity": record.identity,
        "name": record.name,
        "start": local_text(record.start, record.utc_offset),
        "end": local_text(record.end, record.utc_offset),
        "source": record.source,
        "body": orjson.loads(record.body),
    }
    if record.items:
        grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for item in record.items:
            grouped[item.series].append(
                {
                    k: v
                    for k, v in (
                        ("t", local_text(item.t, record.utc_offset)),
                        ("qty", item.qty),
                        ("lat", item.lat),
                        ("lon", item.lon),
                        ("alt", item.alt),
                        ("unit", item.unit),
                    )
                    if v is not None
                }
            )
        out["series"] = dict(grouped)
    return out
