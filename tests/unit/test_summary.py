"""The summary's cards (healthlog.reads.summary): today, the last 7 days, the sparkline
and the trend rule."""

from __future__ import annotations

import math
import random
from datetime import date, timedelta

from healthlog.reads import Kind
from healthlog.reads.summary import (
    RECENT_DAYS,
    SPARK_DAYS,
    TREND_MIN_DAYS,
    YEAR_DAYS,
    Direction,
    glance,
    trend,
)
from hypothesis import given
from hypothesis import strategies as st

TODAY = date(2026, 12, 3)


def year_of(value: float, recent: float | None = None, noise: float = 0.0) -> dict[date, float]:
    """A value a day for a year up to TODAY; ``recent`` for the last 90 days instead."""
    rng = random.Random(7)
    days = {}
    for n in range(YEAR_DAYS):
        day = TODAY - timedelta(days=n)
        base = recent if recent is not None and n < RECENT_DAYS else value
        days[day] = base + rng.gauss(0, noise)
    return days


def test_a_steady_year_has_no_arrow_and_a_shift_beyond_the_spread_has_one() -> None:
    steady = trend(year_of(8000, noise=2500), TODAY)
    assert steady is not None and steady.direction is Direction.STEADY
    up = trend(year_of(8000, recent=9500, noise=2500), TODAY)
    assert up is not None and up.direction is Direction.UP
    assert up.recent > up.year and up.recent - up.year > up.threshold
    down = trend(year_of(60, recent=55, noise=3), TODAY)
    assert down is not None and down.direction is Direction.DOWN


def test_the_threshold_is_two_standard_errors_of_the_days_spread() -> None:
    days = year_of(100, noise=10)
    found = trend(days, TODAY)
    assert found is not None
    values = list(days.values())
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    assert math.isclose(found.spread, sd)
    assert math.isclose(found.threshold, 2 * sd * math.sqrt(1 / RECENT_DAYS - 1 / YEAR_DAYS))


def test_too_few_days_say_nothing_of_a_trend() -> None:
    recent_only = {TODAY - timedelta(days=n): 5.0 for n in range(RECENT_DAYS)}
    assert trend(recent_only, TODAY) is None  # nothing before the last 90 days
    sparse = {d: v for d, v in year_of(10, noise=1).items() if d.day == 1}
    assert trend(sparse, TODAY) is None  # a day a month: 3 days in the last 90
    just = {TODAY - timedelta(days=n): float(n % 3) for n in range(TREND_MIN_DAYS)}
    just |= {TODAY - timedelta(days=RECENT_DAYS + n): 1.0 for n in range(TREND_MIN_DAYS)}
    assert trend(just, TODAY) is not None


@given(st.floats(-1e6, 1e6, allow_nan=False), st.integers(TREND_MIN_DAYS, 60))
def test_the_same_value_every_day_is_steady(value: float, gap_every: int) -> None:
    days = {TODAY - timedelta(days=n): value for n in range(YEAR_DAYS) if n % gap_every}
    found = trend(days, TODAY)
    assert found is not None and found.direction is Direction.STEADY


def test_a_cumulative_card_sums_the_week_and_a_discrete_one_weighs_its_points() -> None:
    days = {TODAY - timedelta(days=n): 1000.0 * (n + 1) for n in range(10)}
    steps = glance("step_count", "qty", "count", Kind.CUMULATIVE, days, TODAY)
    assert steps.today == 1000.0
    assert steps.week == sum(1000.0 * (n + 1) for n in range(7))
    assert steps.week_per_day == steps.week / 7 and steps.week_days == 7
    assert len(steps.spark) == SPARK_DAYS and steps.spark[-1] == (TODAY, 1000.0)
    assert steps.spark[0] == (TODAY - timedelta(days=SPARK_DAYS - 1), None)
    # a discrete metric's week: every point alike, so a day of 3 readings weighs 3
    hr = {TODAY: 60.0, TODAY - timedelta(days=1): 90.0}
    found = glance("heart_rate", "avg", "count/min", Kind.DISCRETE, hr, TODAY,
                   {TODAY: 3, TODAY - timedelta(days=1): 1})  # fmt: skip
    assert found.week == (60.0 * 3 + 90.0) / 4 and found.week_per_day is None


def test_a_weigh_in_a_while_ago_stands_beside_an_empty_today() -> None:
    ago = TODAY - timedelta(days=12)
    weight = glance("weight_body_mass", "qty", "kg", Kind.DISCRETE, {ago: 71.5}, TODAY)
    assert (weight.today, weight.week, weight.week_days) == (None, None, 0)
    assert (weight.last_day, weight.last_value) == (ago, 71.5)
    future = glance(
        "weight_body_mass", "qty", "kg", Kind.DISCRETE, {TODAY + timedelta(1): 1}, TODAY
    )
    assert future.last_day is None  # a day after today is not "the last day"


def test_the_text_says_each_card_in_a_persons_words() -> None:
    from healthlog.cli import summary_report

    days = {TODAY - timedelta(days=n): 1000.0 for n in range(3)}
    steps = glance("step_count", "qty", "count", Kind.CUMULATIVE, days, TODAY)
    weight = glance("weight_body_mass", "qty", "kg", Kind.DISCRETE,
                    {TODAY - timedelta(days=12): 71.54}, TODAY)  # fmt: skip
    said = summary_report.text([steps, weight], TODAY).splitlines()
    assert said[1].split() == ["Steps", "today", "1,000", "steps;", "7", "days", "3,000",
                               "steps", "(1,000", "steps", "a", "day)"]  # fmt: skip
    assert said[2].split()[1:] == ["last", "2026-11-21:", "71.5", "kg;", "nothing", "in", "the",
                                   "last", "7", "days"]  # fmt: skip
    assert summary_report.text([], TODAY) == "no data in the year up to 2026-12-03"
