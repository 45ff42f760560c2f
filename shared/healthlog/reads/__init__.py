"""The read side: what the showcase holds, summed up for a person, a plot or a page.

One read model over the journal's reads, used by ``healthlog plot``, ``healthlog
coverage``, ``healthlog export``, the dashboard and its ``/api`` and the MCP tools: a
metric's series at a resolution, a daily summary of several metrics, sleep per night,
workouts with their series and route, the other sections' records, data coverage (days,
gaps, late samples) and the deliveries' status. ``Reads`` is one class for its callers,
made of one mixin per question, each in its module:

* ``values``: kinds, resolutions, the errors, and the values the reads return;
* ``bounds``: how a range's bounds meet the stored times and the phone's days;
* ``resolution``: which resolution a read takes and how many buckets it gives;
* ``base``: one account of one journal (``Reads.of``), its imports read once;
* ``counting``: the overlap rule's plumbing (``counted_points``, ``counted_stream``);
* ``catalog``: the catalog of metric fields, a metric's fields, its main field;
* ``days``: a field by the days the fold keeps summed, and the count of the days the
  overlap rule counts otherwise (``count_days``, kept by the fold);
* ``series``: a field's series, a day a row;
* ``sleep``, ``workouts``, ``records``, ``coverage``, ``deliveries``: those questions;
* ``windows``: the ranges D, W, M, 6M, Y and All, as days and a resolution;
* ``summary``: today, the last 7 days, a month's sparkline and a trend per metric;
* ``sleep_figures``: bedtime, wake time, time in bed, 7-day averages and the spread of
  bedtime and wake time over nights (``Reads.sleep_figures``);
* ``figures``: a workout's figures (duration, energy, distance, heart rate, pace...),
  splits, heart-rate zones and weekly totals, in the account's unit system;
* ``shapes``: the JSON of a workout's head, a record and its fields, nights and their
  figures, and a delivery, for every interface.

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

from healthlog.reads.bounds import local_text, widened
from healthlog.reads.counting import counted_stream
from healthlog.reads.coverage import (
    DAILY_SHARE,
    STRETCH_BREAK_DAYS,
    CoverageReads,
    Stretch,
    find_gaps,
    range_days,
    stretches,
)
from healthlog.reads.deliveries import DeliveryReads
from healthlog.reads.figures import (
    Figure,
    FigureReads,
    Figures,
    UnitSplit,
    WeekTotal,
    WorkoutDetail,
    WorkoutList,
    Zone,
    Zones,
)
from healthlog.reads.records import RecordReads
from healthlog.reads.resolution import (
    MAX_BUCKETS,
    WIDTHS,
    auto_resolution,
    bucket_count,
    next_bucket,
    resolution_for,
    sample_time,
)
from healthlog.reads.series import SeriesAnswer, SeriesQuery, SeriesReads
from healthlog.reads.shapes import record_dict
from healthlog.reads.sleep import SleepReads
from healthlog.reads.summary import Direction, Glance, SummaryReads, Trend, trend
from healthlog.reads.values import (
    CUMULATIVE,
    MAIN_FIELDS,
    MAX_ROWS,
    Coverage,
    Gap,
    HeartRateStats,
    Kind,
    MetricInfo,
    Night,
    NotFound,
    Resolution,
    RouteSummary,
    Sample,
    Series,
    Split,
    TooHeavy,
    UnknownName,
    kind_of,
    unknown_name,
)
from healthlog.reads.windows import BadSpan, Span, Window, span_named, today, window
from healthlog.reads.workouts import Workout, route_splits, summarise_route

__all__ = [
    "CUMULATIVE",
    "DAILY_SHARE",
    "MAIN_FIELDS",
    "MAX_BUCKETS",
    "MAX_ROWS",
    "STRETCH_BREAK_DAYS",
    "WIDTHS",
    "BadSpan",
    "Coverage",
    "Direction",
    "Figure",
    "Figures",
    "Gap",
    "Glance",
    "HeartRateStats",
    "Kind",
    "MetricInfo",
    "Night",
    "NotFound",
    "Reads",
    "Resolution",
    "RouteSummary",
    "Sample",
    "Series",
    "SeriesAnswer",
    "SeriesQuery",
    "Span",
    "Split",
    "Stretch",
    "TooHeavy",
    "Trend",
    "UnitSplit",
    "UnknownName",
    "WeekTotal",
    "Window",
    "Workout",
    "WorkoutDetail",
    "WorkoutList",
    "Zone",
    "Zones",
    "auto_resolution",
    "bucket_count",
    "counted_stream",
    "find_gaps",
    "kind_of",
    "local_text",
    "next_bucket",
    "range_days",
    "record_dict",
    "resolution_for",
    "route_splits",
    "sample_time",
    "span_named",
    "stretches",
    "summarise_route",
    "today",
    "trend",
    "unknown_name",
    "widened",
    "window",
]


class Reads(
    SummaryReads, CoverageReads, SeriesReads, SleepReads, FigureReads, RecordReads, DeliveryReads
):
    """The reads of one account's data: ``Reads(journal, account, priority)``, or
    ``Reads.of(journal, account_id, priority)``."""
