"""The figures over nights of sleep (``reads.sleep_figures``): bedtime and wake time on the
phone's clock, time in bed, the 7-day average, and the 7- and 30-day windows' averages
and spread (docs/dashboard.md, "Sleep figures")."""

from __future__ import annotations

import statistics
from datetime import date, datetime, timedelta, timezone

import pytest
from healthlog.reads.shapes import sleep_dict
from healthlog.reads.sleep_figures import (
    clock_text,
    figures,
    minutes_from_midnight,
    spread,
)
from healthlog.reads.values import Night
from hypothesis import given
from hypothesis import strategies as st

CET = timezone(timedelta(hours=1))


def night(
    label: str,
    bedtime_min: float,
    hours: float = 7.5,
    *,
    stages: dict[str, float] | None = None,
    tz: timezone = CET,
) -> Night:
    """A night labelled ``label`` that starts ``bedtime_min`` minutes from its midnight
    and lasts ``hours`` (7 h asleep in it, half an hour awake, unless ``stages``)."""
    day = date.fromisoformat(label)
    start = datetime(day.year, day.month, day.day, tzinfo=tz) + timedelta(minutes=bedtime_min)
    end = start + timedelta(hours=hours)
    given_stages = stages if stages is not None else {"core": hours - 0.5, "awake": 0.5}
    return Night(label, "Watch", given_stages, start.isoformat(), end.isoformat())


def test_bedtime_and_wake_time_are_minutes_from_the_nights_midnight() -> None:
    assert minutes_from_midnight("2026-03-01T23:30:00+01:00", "2026-03-02") == -30
    assert minutes_from_midnight("2026-03-02T00:15:00+01:00", "2026-03-02") == 15
    assert minutes_from_midnight("2026-03-02T06:45:00-05:00", "2026-03-02") == 405  # its clock
    assert minutes_from_midnight(None, "2026-03-02") is None
    assert clock_text(-30) == "23:30" and clock_text(405) == "06:45" and clock_text(None) is None
    assert clock_text(1439.6) == "00:00"


def test_spread_is_the_population_standard_deviation() -> None:
    assert spread([]) is None and spread([5.0]) is None
    assert spread([-30.0, 30.0]) == 30.0  # 23:30 and 00:30: an hour apart, not 23
    assert spread([10.0, 10.0, 10.0]) == 0.0


def test_a_week_of_nights_across_midnight() -> None:
    bedtimes = {"2026-09-01": -60, "2026-09-02": -30, "2026-09-04": 30, "2026-09-05": -60,
                "2026-09-07": -90}  # fmt: skip
    nights = [night(label, minutes) for label, minutes in bedtimes.items()]
    found = figures([night("2026-08-20", 60), *nights])
    week, month = found.windows
    assert (week.days, week.first, week.last, week.nights) == (7, "2026-09-01", "2026-09-07", 5)
    assert week.bedtime == "23:18"  # the mean of -60, -30, 30, -60, -90: -42
    assert week.bedtime_sd_min == round(statistics.pstdev([-60, -30, 30, -60, -90]), 1) == 40.7
    assert week.wake_time == "06:48" and week.wake_time_sd_min == 40.7
    assert week.asleep_h == 7.0 and week.in_bed_h == 7.5
    assert week.stages == {"awake": 0.5, "core": 7.0}
    assert (month.days, month.first, month.nights) == (30, "2026-08-09", 6)
    assert month.bedtime_sd_min == round(statistics.pstdev([60, -60, -30, 30, -60, -90]), 1)
    each = {f.night.night: f for f in found.nights}
    assert each["2026-09-04"].bedtime == "00:30" and each["2026-09-04"].wake_time == "08:00"
    assert each["2026-08-20"].in_bed_h == 7.5  # no in-bed hours sent: bedtime to wake time


def test_in_bed_is_what_was_sent_else_bedtime_to_wake_time() -> None:
    sent = night("2026-03-02", -60, 8.0, stages={"core": 6.0, "in_bed": 8.25})
    unknown = Night("2026-03-03", "Watch", {"asleep": 6.0})  # an aggregated night, no times
    first, second = figures([sent, unknown]).nights
    assert first.in_bed_h == 8.25
    assert second.in_bed_h is None and second.bedtime is None and second.wake_time is None


def test_the_7_day_average_takes_the_nights_of_the_7_days_ending_on_each() -> None:
    nights = [
        night("2026-03-01", -60, stages={"core": 6.0}),
        night("2026-03-07", -60, stages={"core": 8.0}),  # 6 days later: the same window
        night("2026-03-08", -60, stages={"core": 4.0}),  # 7 days after the first: not it
        night("2026-04-01", -60, stages={"core": 5.0}),  # alone in its window
    ]
    averages = [f.asleep_7d_h for f in figures(nights).nights]
    assert averages == [6.0, 7.0, 6.0, 5.0]


def test_no_nights_no_figures() -> None:
    found = figures([])
    assert found.nights == []
    assert [(w.days, w.nights, w.asleep_h, w.bedtime, w.bedtime_sd_min) for w in found.windows] == [
        (7, 0, None, None, None),
        (30, 0, None, None, None),
    ]


def test_the_json_of_the_figures() -> None:
    shaped = sleep_dict(figures([night("2026-03-02", -45)]))
    (one,) = shaped["nights"]
    assert (one["bedtime"], one["wake_time"], one["in_bed_h"], one["asleep_7d_h"]) == (
        "23:15", "06:45", 7.5, 7.0,
    )  # fmt: skip
    assert one["asleep_h"] == 7.0 and one["stages"] == {"core": 7.0, "awake": 0.5}
    week = shaped["windows"][0]
    assert week == {
        "days": 7, "first": "2026-02-24", "last": "2026-03-02", "nights": 1, "asleep_h": 7.0,
        "in_bed_h": 7.5, "stages": {"awake": 0.5, "core": 7.0}, "bedtime": "23:15",
        "wake_time": "06:45", "bedtime_sd_min": None, "wake_time_sd_min": None,
    }  # fmt: skip


labels = st.lists(
    st.integers(0, 120).map(lambda n: (date(2026, 1, 1) + timedelta(days=n)).isoformat()),
    min_size=2,
    max_size=40,
    unique=True,
).map(sorted)
#: a bedtime between 20:00 and 03:00, in minutes from the night's midnight
bedtimes = st.integers(-240, 180)
offsets = st.integers(-11, 12).map(lambda h: timezone(timedelta(hours=h)))


@given(labels=labels, bedtime=bedtimes, hours=st.floats(3, 11), tz=offsets)
def test_identical_nights_have_no_spread(
    labels: list[str], bedtime: int, hours: float, tz: timezone
) -> None:
    """Nights alike in bedtime and length, on any clock: spread 0, the averages theirs."""
    found = figures([night(label, bedtime, hours, tz=tz) for label in labels])
    for w in found.windows:
        if w.nights >= 2:
            assert w.bedtime_sd_min == 0.0 and w.wake_time_sd_min == 0.0
        assert w.bedtime == clock_text(bedtime)
        assert w.asleep_h == pytest.approx(hours - 0.5, abs=1e-3)
    assert all(f.asleep_7d_h == pytest.approx(hours - 0.5, abs=1e-3) for f in found.nights)


@given(labels=labels, data=st.data(), shift=st.integers(-60, 60))
def test_the_spread_does_not_move_with_the_clock(
    labels: list[str], data: st.DataObject, shift: int
) -> None:
    """Moving every bedtime by the same minutes (across midnight too) moves the average
    bedtime by them and leaves the spread as it was; the spread is at most half the
    range of the bedtimes."""
    times = [data.draw(bedtimes) for _ in labels]
    before = figures([night(label, t) for label, t in zip(labels, times, strict=True)])
    after = figures([night(label, t + shift) for label, t in zip(labels, times, strict=True)])
    for b, a in zip(before.windows, after.windows, strict=True):
        assert a.nights == b.nights
        if b.bedtime_sd_min is None:
            continue
        assert a.bedtime_sd_min == pytest.approx(b.bedtime_sd_min, abs=0.11)
        held = [
            t
            for label, t in zip(labels, times, strict=True)
            if b.first <= label <= b.last  # type: ignore[operator]
        ]
        assert 0 <= b.bedtime_sd_min <= (max(held) - min(held)) / 2 + 0.05
        assert b.wake_time_sd_min == b.bedtime_sd_min  # the same length every night


@given(labels=labels, data=st.data())
def test_the_7_day_average_lies_among_its_nights(labels: list[str], data: st.DataObject) -> None:
    asleep = [data.draw(st.floats(0, 12)) for _ in labels]
    nights = [
        night(label, -60, stages={"core": h}) for label, h in zip(labels, asleep, strict=True)
    ]
    for f in figures(nights).nights:
        end = date.fromisoformat(f.night.night)
        held = [
            h
            for label, h in zip(labels, asleep, strict=True)
            if 0 <= (end - date.fromisoformat(label)).days < 7
        ]
        assert min(held) - 1e-3 <= f.asleep_7d_h <= max(held) + 1e-3
        assert f.asleep_7d_h == pytest.approx(sum(held) / len(held), abs=1e-3)
