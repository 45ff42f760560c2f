"""The read side's values: kinds, resolutions and the errors of a read, and what reads return.

A metric's *kind* (``kind_of``: ``CUMULATIVE`` ones are summed per bucket, the others
summarised by min, average and max), the resolutions, the bound on a read's rows
(``MAX_ROWS``), the field that stands for a metric (``MAIN_FIELDS``); the errors a read
raises (``UnknownName``, ``NotFound``, ``TooHeavy``); and the values the reads return: a
metric field (``MetricInfo``), a series and its samples, a night, a coverage and its gaps,
and a workout's route summary, splits and heart-rate statistics (the ``Workout`` itself is
in ``workouts``, beside the route arithmetic its methods use).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from healthlog import kinds
from healthlog.errors import HealthlogError

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


CUMULATIVE = kinds.CUMULATIVE

#: the field that stands for a metric when none is named, in this order of preference
#: (``qty`` and ``avg`` rank together: heart rate comes as min/avg/max from a watch and as
#: qty from other sources, and the field with more points stands for it)
MAIN_FIELDS = ("qty", "avg", "totalSleep", "asleep", "systolic", "segment")


def kind_of(metric: str) -> Kind:
    return Kind.CUMULATIVE if metric in CUMULATIVE else Kind.DISCRETE


class UnknownName(HealthlogError):
    """No such metric, field or section in this account's data."""


class NotFound(HealthlogError):
    """No such workout, record or delivery."""


class TooHeavy(HealthlogError):
    """A read whose cost, known before it starts, is over its bound; the message says what
    to ask for instead (a coarser resolution, a narrower range)."""


def unknown_name(what: str, name: str, known: Sequence[str]) -> str:
    near = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    listing = "" if near or not known else f"; known: {', '.join(known[:20])}"
    return f"no {what} named {name!r} in this account's data{hint}{listing}"


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


def _asleep_h(stages: dict[str, float]) -> float:
    """The hours of sleep among a night's stages: all but awake and in bed."""
    return sum(v for k, v in stages.items() if k not in ("awake", "in_bed"))


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
