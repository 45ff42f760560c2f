"""Figures over nights of sleep: time in bed, bedtime and wake time, 7-day averages and
how regular bedtime and wake time are (docs/dashboard.md, "Sleep figures").

Pure: computed from the ``Night``s ``SleepReads.sleep_nights`` gives, so the dashboard's
``/api/sleep`` and the MCP ``sleep_nights`` tool, which both call ``Reads.sleep_figures``,
say the same figures for the same range.

* A night's **bedtime** is its first segment's start (an aggregated night's
  ``sleepStart``), its **wake time** its last segment's end (``sleepEnd``), both on the
  phone's clock that night, as minutes from the midnight the night's label begins with
  (23:30 the evening before is -30, 06:45 is 405): a night is labelled by the morning it
  ends on, so bedtimes either side of midnight stay minutes apart, never a day.
* **In bed** is the in-bed hours the phone sent, else the time from bedtime to wake time.
* A **window** is the ``days`` days that end on the latest night given (7 and 30); its
  figures are over the nights with data in it (``nights`` says how many): the averages
  of hours asleep, in bed and per stage (a stage a night did not send counts 0), the
  average bedtime and wake time (``HH:MM``), and their **spread**: the population
  standard deviation in minutes, None with fewer than two nights that have the time.
* A night's **7-day average** (``asleep_7d_h``) is the average of hours asleep over the
  nights in the 7 days that end on it.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from healthlog.reads.values import Night

#: the windows the figures are given over, in days
WINDOWS = (7, 30)
#: the days a night's rolling average of hours asleep is taken over
ROLLING_DAYS = 7


@dataclass(frozen=True, slots=True)
class NightFigures:
    """One night and what is figured from it alone, with its 7-day average."""

    night: Night
    in_bed_h: float | None
    bedtime_min: float | None  # minutes from the label's midnight, phone's clock
    wake_min: float | None
    asleep_7d_h: float

    @property
    def bedtime(self) -> str | None:
        return clock_text(self.bedtime_min)

    @property
    def wake_time(self) -> str | None:
        return clock_text(self.wake_min)


@dataclass(frozen=True, slots=True)
class Window:
    """The figures over the nights in ``days`` days ending on ``last``."""

    days: int
    first: str | None  # the window's first and last day (YYYY-MM-DD); None: no nights
    last: str | None
    nights: int
    asleep_h: float | None
    in_bed_h: float | None
    stages: dict[str, float] = field(default_factory=dict)
    bedtime: str | None = None
    wake_time: str | None = None
    bedtime_sd_min: float | None = None
    wake_time_sd_min: float | None = None


@dataclass(frozen=True, slots=True)
class SleepFigures:
    nights: list[NightFigures]
    windows: list[Window]


def minutes_from_midnight(at: str | None, label: str) -> float | None:
    """A time with its offset (``2026-03-01T23:30:00+01:00``) as minutes from the
    midnight that begins the day ``label``, on the clock the time was written on."""
    if at is None:
        return None
    wall = datetime.fromisoformat(at).replace(tzinfo=None)
    day = date.fromisoformat(label)
    return (wall - datetime(day.year, day.month, day.day)).total_seconds() / 60


def clock_text(minutes: float | None) -> str | None:
    """Minutes from a midnight as the time of day they fall on (``-30`` is ``23:30``)."""
    if minutes is None:
        return None
    whole = round(minutes) % 1440
    return f"{whole // 60:02d}:{whole % 60:02d}"


def spread(values: list[float]) -> float | None:
    """The population standard deviation of ``values``, in their unit, to 0.1; None for
    fewer than two."""
    if len(values) < 2:
        return None
    return round(statistics.pstdev(values), 1)


def in_bed_hours(n: Night, bedtime: float | None, wake: float | None) -> float | None:
    sent = n.stages.get("in_bed")
    if sent:
        return sent
    if bedtime is None or wake is None or wake < bedtime:
        return None
    return round((wake - bedtime) / 60, 4)


def figures(nights: list[Night], windows: tuple[int, ...] = WINDOWS) -> SleepFigures:
    """The figures of ``nights`` (ordered by label, as ``sleep_nights`` gives them)."""
    each = []
    kept: deque[tuple[date, float]] = deque()  # the nights of the last ROLLING_DAYS days
    total = 0.0
    for n in nights:
        day = date.fromisoformat(n.night)
        kept.append((day, n.asleep_h))
        total += n.asleep_h
        while (day - kept[0][0]).days >= ROLLING_DAYS:
            total -= kept.popleft()[1]
        bedtime = minutes_from_midnight(n.start, n.night)
        wake = minutes_from_midnight(n.end, n.night)
        rolling = round(total / len(kept), 4)
        each.append(NightFigures(n, in_bed_hours(n, bedtime, wake), bedtime, wake, rolling))
    last = nights[-1].night if nights else None
    return SleepFigures(each, [_window(each, days, last) for days in windows])


def _within(day: str, last: str, days: int) -> bool:
    """Whether ``day`` is one of the ``days`` days that end on ``last``."""
    gap = (date.fromisoformat(last) - date.fromisoformat(day)).days
    return 0 <= gap < days


def _window(each: list[NightFigures], days: int, last: str | None) -> Window:
    if last is None:
        return Window(days, None, None, 0, None, None)
    first = (date.fromisoformat(last) - timedelta(days=days - 1)).isoformat()
    held = [f for f in each if _within(f.night.night, last, days)]
    stages: dict[str, float] = {}
    for name in sorted({s for f in held for s in f.night.stages}):
        stages[name] = _mean([f.night.stages.get(name, 0.0) for f in held]) or 0.0
    beds = [f.bedtime_min for f in held if f.bedtime_min is not None]
    wakes = [f.wake_min for f in held if f.wake_min is not None]
    return Window(
        days,
        first,
        last,
        len(held),
        _mean([f.night.asleep_h for f in held]),
        _mean([f.in_bed_h for f in held if f.in_bed_h is not None]),
        stages,
        clock_text(_mean(beds)),
        clock_text(_mean(wakes)),
        spread(beds),
        spread(wakes),
    )


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None
