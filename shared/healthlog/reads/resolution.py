"""Resolutions: which one a read takes, how many buckets it gives, where a bucket ends.

``auto_resolution`` (the dashboard's: the finest whose buckets over the range stay under
``MAX_BUCKETS``) and ``resolution_for`` (``plot``'s and the MCP tools': over the part of
the range that has data), ``bucket_count`` (a read's cost before it starts), and a
bucket's widths (``WIDTHS``), next start (``next_bucket``) and label (``sample_time``).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from healthlog.clock import Moment, from_text
from healthlog.reads.bounds import _as_datetime
from healthlog.reads.values import MetricInfo, Resolution

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
    return _finest(end - start, max_buckets)


def _finest(span: timedelta, max_buckets: int) -> Resolution:
    """The finest resolution whose buckets over ``span`` stay under ``max_buckets``."""
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
    ``max_buckets`` (a picture wants fewer than a table; ``Reads.ask``: the dashboard's
    chart chooses over the range as given instead, its zoom). A wall-clock bound is read
    as UTC here (``_span``): it moves the span by hours at most."""
    return _finest(_span(info, start, end), max_buckets)
