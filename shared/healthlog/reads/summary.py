"""The summary: today and the last 7 days of each metric, a month's sparkline, a trend.

What the dashboard's home page shows (docs/dashboard.md, "Summary"), one card a metric
the account has data for in the last year, read from the same day series as every
other read (``SeriesReads.series`` at ``Resolution.DAY``: a cumulative metric's day
total with overlapping sources counted once, a discrete one's day average):

* **today**: the day's value (its total, or its average); for a discrete metric with
  nothing today, the last day with data stands beside it (a weigh-in a week ago);
* **the last 7 days** (today and the six before): a cumulative metric's total over them
  and its average per day with data; a discrete one's average of every point in them;
* **a sparkline**: the value of each of the last 30 days (None: no data that day);
* **a trend**, as the Health app's Trends: the average day of the last 90 days against
  the average day of the last 365 (``trend``).

Sleep is a card of its own (hours asleep per night, from ``SleepReads.sleep_nights``),
and so are workouts (this week's, Monday first, on the phone's clock).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import Any

from healthlog.reads.series import SeriesReads
from healthlog.reads.sleep import SleepReads
from healthlog.reads.values import Kind, MetricInfo, Resolution, kind_of
from healthlog.reads.windows import midnight
from healthlog.reads.windows import today as today_on
from healthlog.reads.workouts import WorkoutReads

#: the days a sparkline shows, and the two windows a trend compares
SPARK_DAYS = 30
RECENT_DAYS = 90
YEAR_DAYS = 365
#: the fewest days with data a trend needs in the last 90 days, and in the 275 before
TREND_MIN_DAYS = 20
#: how many standard errors of the difference make it a trend (about 95 % when the
#: days were independent; they are not quite, so a trend is a little easier to claim)
TREND_Z = 2.0

#: the metrics a person looks for first, in the order the Health app's Summary has
#: them; every other metric follows, by its name
FIRST = (
    "step_count",
    "active_energy",
    "apple_exercise_time",
    "apple_stand_hour",
    "resting_heart_rate",
    "heart_rate_variability",
    "sleep_analysis",
    "workouts",
    "weight_body_mass",
    "walking_running_distance",
    "heart_rate",
)
#: metrics with a card of their own (sleep), or none (a heartbeat's raw series)
NOT_CARDS = frozenset({"sleep_analysis"})


class Direction(StrEnum):
    UP = "up"
    DOWN = "down"
    STEADY = "steady"  # enough data, and no difference beyond the day-to-day spread


@dataclass(frozen=True, slots=True)
class Trend:
    """The last 90 days' average day against the last 365's (``trend``)."""

    recent: float
    year: float
    spread: float  # the standard deviation of the year's days
    threshold: float  # how far apart the two must be to be a trend
    recent_days: int
    year_days: int
    direction: Direction

    def as_dict(self) -> dict[str, Any]:
        return {
            "recent": _round(self.recent),
            "year": _round(self.year),
            "spread": _round(self.spread),
            "threshold": _round(self.threshold),
            "recent_days": self.recent_days,
            "year_days": self.year_days,
            "direction": self.direction.value,
        }


def trend(days: Mapping[date, float], today: date) -> Trend | None:
    """The last ``RECENT_DAYS`` against the last ``YEAR_DAYS``, both ending ``today``.

    ``recent`` and ``year`` are the averages of their days with data. The difference is
    a trend (up or down) when it is beyond what the day-to-day spread alone would give:
    more than ``TREND_Z`` standard errors, ``s * sqrt(1/n_recent - 1/n_year)``, where
    ``s`` is the standard deviation of the year's days (the recent days are part of the
    year, hence the minus). None without ``TREND_MIN_DAYS`` days with data in the recent
    window and as many in the year before it: too little to say anything.
    """
    year_from = today - timedelta(days=YEAR_DAYS - 1)
    recent_from = today - timedelta(days=RECENT_DAYS - 1)
    year = [v for d, v in days.items() if year_from <= d <= today]
    recent = [v for d, v in days.items() if recent_from <= d <= today]
    if len(recent) < TREND_MIN_DAYS or len(year) - len(recent) < TREND_MIN_DAYS:
        return None
    year_mean = math.fsum(year) / len(year)
    recent_mean = math.fsum(recent) / len(recent)
    spread = math.sqrt(math.fsum((v - year_mean) ** 2 for v in year) / (len(year) - 1))
    threshold = TREND_Z * spread * math.sqrt(1 / len(recent) - 1 / len(year))
    difference = recent_mean - year_mean
    # (a difference of rounding alone, when every day is alike, is no trend either)
    if abs(difference) <= max(threshold, 1e-9 * abs(year_mean)):
        direction = Direction.STEADY
    else:
        direction = Direction.UP if difference > 0 else Direction.DOWN
    return Trend(recent_mean, year_mean, spread, threshold, len(recent), len(year), direction)


@dataclass(frozen=True, slots=True)
class Glance:
    """One card of the summary: a metric's (or sleep's, or workouts') days at a glance."""

    metric: str
    field: str
    unit: str
    kind: Kind
    today: float | None  # today's total or average; None: nothing today
    last_day: date | None  # the last day with data up to today (within the year)
    last_value: float | None
    week: float | None  # the last 7 days: a total (cumulative) or an average (discrete)
    week_per_day: float | None  # a cumulative metric's average per day with data
    week_days: int  # the days with data among the last 7
    spark: list[tuple[date, float | None]]
    trend: Trend | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "field": self.field,
            "unit": self.unit,
            "kind": self.kind.value,
            "today": _round(self.today),
            "last_day": None if self.last_day is None else self.last_day.isoformat(),
            "last_value": _round(self.last_value),
            "week": _round(self.week),
            "week_per_day": _round(self.week_per_day),
            "week_days": self.week_days,
            "spark": [{"day": d.isoformat(), "value": _round(v)} for d, v in self.spark],
            "trend": None if self.trend is None else self.trend.as_dict(),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def glance(
    metric: str,
    field: str,
    unit: str,
    kind: Kind,
    days: Mapping[date, float],
    today: date,
    weights: Mapping[date, int] | None = None,
) -> Glance:
    """A card from ``days`` (a day's value: its total, or its average of ``weights[day]``
    points). A discrete metric's week is the average of every point in it: its days'
    averages weighted by their points (each day alike without ``weights``)."""
    week_from = today - timedelta(days=6)
    week = {d: v for d, v in days.items() if week_from <= d <= today}
    before = [d for d in days if today - timedelta(days=YEAR_DAYS - 1) <= d <= today]
    last_day = max(before, default=None)
    if not week:
        week_value = per_day = None
    elif kind is Kind.CUMULATIVE:
        week_value = sum(week.values())
        per_day = week_value / len(week)
    else:
        weight = {d: (weights or {}).get(d, 1) for d in week}
        week_value = sum(v * weight[d] for d, v in week.items()) / sum(weight.values())
        per_day = None
    spark = [
        (d, days.get(d)) for d in (today - timedelta(days=n) for n in range(SPARK_DAYS - 1, -1, -1))
    ]
    return Glance(
        metric,
        field,
        unit,
        kind,
        days.get(today),
        last_day,
        None if last_day is None else days[last_day],
        week_value,
        per_day,
        len(week),
        spark,
        trend(days, today),
    )


def _order(metric: str) -> tuple[int, str]:
    return (FIRST.index(metric), "") if metric in FIRST else (len(FIRST), metric)


class SummaryReads(SeriesReads, SleepReads, WorkoutReads):
    """The reads of the summary."""

    def summary(self, today: date | None = None) -> list[Glance]:
        """A card per metric with data in the year up to ``today`` (default: today on
        the account's zone), sleep's and workouts' among them, in ``FIRST``'s order."""
        if today is None:
            today = today_on(self.account.time_zone)
        start = _day_start(today - timedelta(days=YEAR_DAYS - 1))
        end = _day_start(today + timedelta(days=1))
        catalog = self.catalog()
        cards = [
            card
            for metric in sorted({i.metric for i in catalog} - NOT_CARDS)
            if (card := self._metric_card(metric, catalog, start, end, today)) is not None
        ]
        if any(i.metric == "sleep_analysis" for i in catalog):
            cards.append(self._sleep_card(start, end, today))
        if (workouts := self._workouts_card(today)) is not None:
            cards.append(workouts)
        return sorted(cards, key=lambda c: _order(c.metric))

    def _metric_card(
        self,
        metric: str,
        catalog: Sequence[MetricInfo],
        start: datetime,
        end: datetime,
        today: date,
    ) -> Glance | None:
        info = self.range_field(metric, start=start, end=end, catalog=catalog)
        series = self.series(
            metric, start=start, end=end, resolution=Resolution.DAY, catalog=catalog, info=info
        )
        days = {
            date.fromisoformat(s.t[:10]): s.value for s in series.samples if s.value is not None
        }
        if not days:
            return None
        weights = {date.fromisoformat(s.t[:10]): s.count for s in series.samples}
        return glance(metric, series.field, series.unit, series.kind, days, today, weights)

    def _sleep_card(self, start: datetime, end: datetime, today: date) -> Glance:
        """Hours asleep per night, a night labelled by the morning it ends on."""
        nights = {
            date.fromisoformat(n.night): n.asleep_h
            for n in self.sleep_nights(start=start, end=end)
            if n.asleep_h > 0
        }
        return glance("sleep_analysis", "asleep", "hr", kind_of("sleep_analysis"), nights, today)

    def _workouts_card(self, today: date) -> Glance | None:
        """Minutes of workouts per day (on the workout's own clock); the week's total."""
        start = _day_start(today - timedelta(days=YEAR_DAYS - 1))
        minutes: dict[date, float] = {}
        for w in self.workouts(start=start, end=_day_start(today + timedelta(days=1))):
            if w.start is None:
                continue
            begun = datetime.fromisoformat(w.start)
            took = 0.0
            if w.end is not None:
                took = max(0.0, (datetime.fromisoformat(w.end) - begun).total_seconds() / 60)
            day = begun.date()
            minutes[day] = minutes.get(day, 0.0) + took
        if not minutes:
            return None
        return glance("workouts", "duration", "min", Kind.CUMULATIVE, minutes, today)


def _day_start(day: date) -> datetime:
    found = midnight(day)
    assert found is not None
    return found
