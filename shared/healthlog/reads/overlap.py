"""One truth when sources overlap: which stored points a read counts, and how much.

The showcase keeps every point it was sent, one per key (account, metric, field,
source, start). Two things still make the same stretch of time arrive twice under
different keys, and a read that summed every point would count it twice:

* **Two origins for one day.** The Health app's export (``healthlog import``) brings
  each device's raw samples; HAE brings what the app computed from them (minute or hour
  aggregates, or raw samples too), and the first HAE days usually overlap the export's
  last ones. Rule 1: on each day of the phone's clock, a metric field's points of *one*
  origin count: the origin of the newest layer among that day's points (the layer order
  the showcase itself uses, received_at then id; delivery ids are UUIDv7 built from
  received_at, so the id alone orders them). An import made after months of HAE
  deliveries wins those days with its complete samples; HAE deliveries after an import
  win the days they re-send.
* **Two devices at once.** An iPhone and a Watch both count the same walk. Rule 2, for
  cumulative metrics (sums: steps, energy, distance...): a sample counts only for the
  part of its time that no sample of a source *before* it in priority covers; a sample
  wholly covered counts nothing, one half covered counts half its amount (HealthKit's
  own statistics split overlapping samples the same way). A sample without a duration
  (HAE's aggregates carry one time) is covered when a source before it has a sample at
  the same time or one spanning it. Priority: the fragments of
  ``HEALTHLOG_SOURCE_PRIORITY`` (default ``watch,iphone``), matched case-insensitively
  in the source's name, first fragment first; sources that match none come after, and
  sources of equal rank in name order, so exactly one source counts at any moment.
  HAE's merged sources (``"Irvin's iPhone|Irvin's Apple Watch"``) rank by their best
  part: they are the app's own deduplication already.

Discrete metrics (heart rate, weight...) get rule 1 only: two devices measuring at
once are two measurements, which an average does not double.

The rules work a day at a time on points in start order, so a read streams: a day is
decided once no later point can fall on it (a day of the phone's clock spans at most
the UTC day before and after it).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Generic, TypeVar

from healthlog.clock import REACH, At, meets, spans, utc_of
from healthlog.clock import spread as split
from healthlog.journal.port import BucketRow
from healthlog.priority import DEFAULT, SourcePriority

#: a day of the phone's clock holds UTC starts up to this far beyond its UTC day
DAY_REACH = REACH

T = TypeVar("T")


@dataclass(slots=True)
class Candidate(Generic[T]):
    """A stored point as the rules see it, carrying what the caller needs back."""

    field: str
    start: str  # UTC text, fixed width (as stored)
    end: str | None
    utc_offset: int | None
    source: str
    qty: float | None
    layer: str  # the delivery id of the layer that won the point
    imported: bool  # brought by an import of the Health app's export
    item: T
    #: what the rules count of ``qty``: all of it, a share, or 0 (None: no value)
    counted: float | None = None


def local_day(start: str, utc_offset: int | None) -> str:
    """The day ``YYYY-MM-DD`` a UTC start has on the phone's clock."""
    minutes = int(start[11:13]) * 60 + int(start[14:16]) + (utc_offset or 0)
    if 0 <= minutes < 1440:
        return start[:10]
    try:
        return (_instant(start) + timedelta(minutes=utc_offset or 0)).date().isoformat()
    except OverflowError:  # before the calendar's first day, or after its last
        return start[:10]


def counted(
    points: Iterable[Candidate[T]],
    *,
    cumulative: bool,
    priority: SourcePriority = DEFAULT,
    keep_all: bool = False,
) -> Iterator[Candidate[T]]:
    """The points that count, each with ``counted`` set.

    ``points``: one metric's, in start order (its fields interleaved, each decided on
    its own). Points that count nothing (another origin's on a day, a sample wholly
    covered by sources before it) are left out, or with ``keep_all`` given with
    ``counted`` 0. Out: a day at a time, each in start order.
    """
    days: dict[tuple[str, str], list[Candidate[T]]] = {}
    hour = ""
    for point in points:
        if point.start[:13] != hour:  # the horizon moves at most once an hour
            hour = point.start[:13]
            # a day of the phone's clock D holds starts below D + 1 day + its reach:
            # every day before the date of (this start - the reach) is complete
            horizon = _horizon(point.start)
            while days:
                first = min(days)
                if first[0] >= horizon:
                    break
                yield from _decide(days.pop(first), cumulative, priority, keep_all)
        key = (local_day(point.start, point.utc_offset), point.field)
        days.setdefault(key, []).append(point)
    for key in sorted(days):
        yield from _decide(days[key], cumulative, priority, keep_all)


def _horizon(start: str) -> str:
    """The first day of the phone's clock a point starting at ``start`` may still join."""
    try:
        return (_instant(start) - DAY_REACH).date().isoformat()
    except OverflowError:  # the calendar's first day
        return "0001-01-01"


def _decide(
    day: list[Candidate[T]], cumulative: bool, priority: SourcePriority, keep_all: bool
) -> list[Candidate[T]]:
    for p in day:
        p.counted = None if p.qty is None else 0.0
    kept = _one_origin(day)
    if cumulative and len({p.source for p in kept}) > 1:
        kept = _by_priority(kept, priority)
    else:
        for p in kept:
            p.counted = p.qty
    out = day if keep_all else kept
    out.sort(key=lambda p: p.start)
    return out


def _one_origin(day: list[Candidate[T]]) -> list[Candidate[T]]:
    """Rule 1: the points of the origin of the day's newest layer."""
    origins = {p.imported for p in day}
    if len(origins) == 1:
        return day
    newest = max(day, key=lambda p: p.layer)
    return [p for p in day if p.imported == newest.imported]


def _by_priority(day: Sequence[Candidate[T]], priority: SourcePriority) -> list[Candidate[T]]:
    """Rule 2: each source counts the time no source before it covers."""
    by_source: dict[str, list[Candidate[T]]] = {}
    for p in day:
        by_source.setdefault(p.source, []).append(p)
    covered = _Cover()
    kept: list[Candidate[T]] = []
    for source in sorted(by_source, key=priority.rank):
        spans: list[tuple[float, float]] = []
        for p in by_source[source]:
            low = _instant(p.start).timestamp()
            high = _instant(p.end).timestamp() if p.end else low
            if high < low:
                high = low
            share = covered.free_share(low, high)
            if share <= 0.0:
                continue
            p.counted = None if p.qty is None else p.qty * share
            kept.append(p)
            spans.append((low, high))
        covered.add(spans)
    return kept


class _Cover:
    """The union of the spans of the sources counted so far, and their instants."""

    def __init__(self) -> None:
        self._starts: list[float] = []
        self._ends: list[float] = []
        self._instants: set[float] = set()

    def free_share(self, low: float, high: float) -> float:
        """The share of [low, high) (or of the instant ``low``) not covered yet."""
        i = bisect.bisect_right(self._ends, low)
        if high == low:
            if low in self._instants:
                return 0.0
            inside = i < len(self._starts) and self._starts[i] <= low
            return 0.0 if inside else 1.0
        taken = 0.0
        while i < len(self._starts) and self._starts[i] < high:
            taken += min(high, self._ends[i]) - max(low, self._starts[i])
            i += 1
        return max(0.0, 1.0 - taken / (high - low))

    def add(self, spans: list[tuple[float, float]]) -> None:
        merged: list[list[float]] = []
        every = sorted([*zip(self._starts, self._ends, strict=True), *spans])
        for low, high in every:
            if high == low:
                self._instants.add(low)
                continue
            if merged and low <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], high)
            else:
                merged.append([low, high])
        self._starts = [low for low, _ in merged]
        self._ends = [high for _, high in merged]


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


@dataclass(slots=True)
class Sums:
    """A bucket's numbers as they add up: points, valued points, sum, min, max."""

    points: int = 0
    valued: int = 0
    total: float | None = None
    low: float | None = None
    high: float | None = None

    def add(self, value: float | None) -> None:
        self.points += 1
        if value is not None:
            self.valued += 1
            self.total = value if self.total is None else self.total + value
            self.low = value if self.low is None or value < self.low else self.low
            self.high = value if self.high is None or value > self.high else self.high

    def merge(self, other: Sums) -> None:
        """Add a part (a day of a week, say) to these."""
        self.points += other.points
        self.valued += other.valued
        for name, pick in (("total", None), ("low", min), ("high", max)):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is None:
                continue
            if mine is None:
                setattr(self, name, theirs)
            else:
                setattr(self, name, mine + theirs if pick is None else pick(mine, theirs))

    def row(self, name: str) -> BucketRow:
        """The bucket as the journal's ``point_buckets`` gives it."""
        avg = None if self.total is None else self.total / self.valued
        return BucketRow(name, self.points, self.low, avg, self.high, self.total)


def sums_by(
    points: Iterable[Candidate[T]],
    bucket: str,
    *,
    spread: bool = False,
    within: tuple[At | None, At | None] | None = None,
) -> dict[str, Sums]:
    """The counted points summed up per bucket of the phone's clock (unordered); with
    ``spread`` (a cumulative metric), a sample that spans buckets counts in each its
    part of what it counts (``clock.spread``), as the journal's sums do, and with
    ``within`` only the parts that begin in that range (of samples that may begin
    before it)."""
    key = _bucket_key(bucket)
    found: dict[str, Sums] = {}
    for p in points:
        if spread and spans(p.start, p.end):
            for name, part, at in split(p.start, p.end, p.utc_offset, p.counted, bucket):
                if within is None or meets(utc_of(at, p.utc_offset), p.utc_offset, *within):
                    found.setdefault(name, Sums()).add(part)
            continue
        if within is not None and not meets(p.start, p.utc_offset, *within):
            continue
        name = key(p.start, p.utc_offset)
        sums = found.get(name)
        if sums is None:
            sums = found[name] = Sums()
        sums.add(p.counted)
    return found


def buckets(
    points: Iterable[Candidate[T]],
    bucket: str,
    *,
    spread: bool = False,
    within: tuple[At | None, At | None] | None = None,
) -> list[BucketRow]:
    """The counted points summed up per bucket of the phone's clock, in bucket order.

    The same buckets, keys and numbers as the journal's ``point_buckets`` gives for the
    same points counted whole (a test holds the two to it): a point's bucket is read on
    the clock its offset gives, its value is what the rules count of it.
    """
    found = sums_by(points, bucket, spread=spread, within=within)
    return [found[name].row(name) for name in sorted(found)]


def roll_up(days: dict[str, Sums], bucket: str) -> list[BucketRow]:
    """Days (``YYYY-MM-DD`` on the phone's clock) summed up into weeks or months."""
    key = _bucket_key(bucket)
    found: dict[str, Sums] = {}
    for day in sorted(days):
        name = key(f"{day}T12:00:00.000000Z", 0)  # noon: the day itself, on any clock
        found.setdefault(name, Sums()).merge(days[day])
    return [found[name].row(name) for name in sorted(found)]


def _bucket_key(bucket: str) -> Callable[[str, int | None], str]:
    """The bucket of a UTC start on the phone's clock, as the journal's SQL names it.

    Text arithmetic where the offset keeps the start on its UTC day (almost always),
    a datetime only for the rest; weeks and months from the day, memoised.
    """
    if bucket in ("minute", "hour"):
        hourly = bucket == "hour"

        def clock(start: str, offset: int | None) -> str:
            minutes = int(start[11:13]) * 60 + int(start[14:16]) + (offset or 0)
            if not 0 <= minutes < 1440:
                try:
                    local = _instant(start) + timedelta(minutes=offset or 0)
                except OverflowError:  # off the calendar's ends: its UTC time
                    local = _instant(start)
                return local.strftime("%Y-%m-%dT%H:00" if hourly else "%Y-%m-%dT%H:%M")
            hh, mm = divmod(minutes, 60)
            return f"{start[:10]}T{hh:02d}:00" if hourly else f"{start[:10]}T{hh:02d}:{mm:02d}"

        return clock
    if bucket == "day":
        return local_day
    if bucket == "month":
        return lambda start, offset: local_day(start, offset)[:7] + "-01"
    if bucket == "week":
        mondays: dict[str, str] = {}

        def week(start: str, offset: int | None) -> str:
            day = local_day(start, offset)
            monday = mondays.get(day)
            if monday is None:
                d = date.fromisoformat(day)
                monday = mondays[day] = (d - timedelta(days=d.weekday())).isoformat()
            return monday

        return week
    raise ValueError(f"no such bucket: {bucket}")
