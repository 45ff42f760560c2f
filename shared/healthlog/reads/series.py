"""A metric's numbers: a field's series in the unit a range reads, a day's values.

``SeriesReads``, over the names (``catalog``) and the kept days (``days``): the unit a
range reads (``range_field``), a field's series at a resolution (``series``, or ``ask``
with a ``SeriesQuery``: raw points, buckets summed in the database, or the days the fold
keeps summed, each counted by the overlap rule where it can apply; refused before it
starts when over its bound), and a day a row (``daily``, ``day_totals``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from healthlog.clock import SPREAD_SPAN, Moment
from healthlog.reads import overlap
from healthlog.reads.bounds import (
    _as_datetime,
    _bound,
    _day_span,
    _shifted,
    local_text,
)
from healthlog.reads.days import DayReads, _sample
from healthlog.reads.resolution import (
    _BY_DAYS,
    _SUB_DAY,
    MAX_BUCKETS,
    WIDTHS,
    _span,
    auto_resolution,
    bucket_count,
    resolution_for,
)
from healthlog.reads.values import (
    MAX_ROWS,
    Kind,
    MetricInfo,
    Resolution,
    Sample,
    Series,
    TooHeavy,
    kind_of,
)
from healthlog.reads.windows import Span, Window, day_of, midnight, window


@dataclass(frozen=True, slots=True)
class SeriesQuery:
    """One question of a series, as every interface asks it (``SeriesReads.ask``): the
    command line's ``plot``, the dashboard's ``/api/series``, the MCP ``metric_series``
    tool and the Python API parse their input into one and render the answer.

    ``start`` and ``end`` are bounds as every read takes them (``healthlog.clock``,
    docs/time.md). Without a ``resolution``, the finest whose buckets stay under
    ``max_buckets`` (a picture wants fewer than a chart, a chart fewer than a table):
    over the field's data in the range, or, with ``over_range``, over the range as
    given (a chart's zoom: days for the whole history); ``limit`` bounds what one read
    gives (raw points, or buckets: more is ``TooHeavy``, at once).
    """

    metric: str
    field: str | None = None
    source: str | None = None
    start: Moment | None = None
    end: Moment | None = None
    resolution: Resolution | None = None
    max_buckets: int = MAX_BUCKETS
    limit: int = MAX_ROWS
    over_range: bool = False
    #: a range as the Health app offers it (``windows.Span``): its days replace
    #: ``start`` and ``end``, ending on ``anchor`` (default: the field's last day with
    #: data); a cumulative metric takes the span's resolution unless one is given
    span: Span | None = None
    anchor: date | None = None


@dataclass(frozen=True, slots=True)
class SeriesAnswer:
    """A series and what it was read with: the field in the unit the range reads (its
    sources and extent), and the catalog read once for it."""

    series: Series
    info: MetricInfo
    catalog: Sequence[MetricInfo]
    window: Window | None = None  # the span's days, when the query named a span


def _units(catalog: Sequence[MetricInfo], metric: str, field: str) -> list[MetricInfo]:
    """The catalog's rows of one field: one a unit it is stored in."""
    return [info for info in catalog if info.metric == metric and info.field == field]


class SeriesReads(DayReads):
    """The reads of metrics: names, series and days."""

    # --- one metric ---------------------------------------------------------------------

    def ask(self, query: SeriesQuery) -> SeriesAnswer:
        """The one place a series is chosen and read: the catalog once, the field and
        the unit the range reads (``range_field``), the resolution (the query's, else
        ``resolution_for`` over the field's data in the range), then ``series`` (the
        bound, the band, the cut to the range)."""
        catalog = self.catalog()
        start, end, source = query.start, query.end, query.source
        resolution = query.resolution
        chosen = None
        if query.span is not None:
            chosen = self.span_window(
                query.metric, query.span, query.anchor, field_=query.field, catalog=catalog
            )
            start, end = midnight(chosen.start), midnight(chosen.end)
            resolution = resolution or chosen.resolution(kind_of(query.metric))
        info = self.range_field(
            query.metric, query.field, start=start, end=end, source=source, catalog=catalog
        )
        if resolution is None and query.over_range:
            resolution = auto_resolution(_as_datetime(start), _as_datetime(end), query.max_buckets)
        elif resolution is None:
            resolution = resolution_for(info, start, end, query.max_buckets)
        found = self.series(
            query.metric,
            field=info.field,
            start=start,
            end=end,
            resolution=resolution,
            source=source,
            limit=query.limit,
            catalog=catalog,
            info=info,
        )
        return SeriesAnswer(found, info, catalog, chosen)

    def span_window(
        self,
        metric: str,
        span: Span,
        anchor: date | None = None,
        *,
        field_: str | None = None,
        catalog: Sequence[MetricInfo] | None = None,
        every_field: bool = False,
    ) -> Window:
        """The days ``span`` shows of ``metric`` (``windows.window``): ending on
        ``anchor``, by default the field's last day with data, and its arrows bounded by
        the field's first and last days (on the account's zone: the catalog keeps no
        offset); ``every_field``: those of all the metric's fields (sleep's nights come
        as stages, totals or segments). The one place a chart page's range becomes days
        (a metric, sleep)."""
        if every_field:
            infos = self.metric_fields(metric, catalog)
            first, latest = min(i.first for i in infos), max(i.last for i in infos)
        else:
            main = self.main_field(metric, field_, catalog=catalog)
            first, latest = main.first, main.last
        zone = self.account.time_zone
        last = day_of(latest, zone)
        return window(span, anchor or last, day_of(first, zone), last)

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
        spread = kind is Kind.CUMULATIVE  # a sample spread over the buckets it spans
        if ruled:
            low, high = _bound(start), _bound(end)
            counted = self.counted_points(
                metric,
                info.field,
                start=_shifted(low, -SPREAD_SPAN) if spread else low,
                end=high,
                source=source,
                unit=unit,
            )
            rows = overlap.buckets(counted, resolution.value, spread=spread, within=(low, high))
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
                spread=spread,
            )
        samples = [_sample(row, kind) for row in rows[:limit]]
        return Series(metric, info.field, info.unit, kind, resolution, samples, len(rows) > limit)

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
