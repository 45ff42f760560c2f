"""Gaps judged within stretches of data (issue 21, item 3; docs/dashboard.md, "Data
coverage"): a silence longer than ``STRETCH_BREAK_DAYS`` ends a stretch, each stretch is
daily when ``DAILY_SHARE`` of its days have data, and only a daily stretch has gaps."""

from __future__ import annotations

from datetime import date, timedelta

from healthlog.reads import DAILY_SHARE, STRETCH_BREAK_DAYS, Gap, find_gaps, stretches
from hypothesis import given
from hypothesis import strategies as st

DAY0 = date(2025, 1, 1)


def days(*offsets: int) -> list[str]:
    return [(DAY0 + timedelta(days=n)).isoformat() for n in offsets]


def gap(first: int, last: int) -> Gap:
    start, end = days(first, last)
    return Gap(start, end, last - first + 1)


def run(first: int, last: int, *, without: range = range(0)) -> list[int]:
    return [n for n in range(first, last + 1) if n not in without]


def test_a_year_imported_with_a_break_then_a_recent_gap_is_reported() -> None:
    """The issue's account: December and January every day, seven months of nothing,
    then September to November every day but three: under half the year's days have
    data, yet the three days are a gap; the seven months are none."""
    first, last = date(2025, 12, 1), date(2026, 11, 30)
    missing = (date(2026, 2, 1), date(2026, 8, 31))
    gap = (date(2026, 11, 10), date(2026, 11, 12))
    have, day = [], first
    while day <= last:
        if not (missing[0] <= day <= missing[1] or gap[0] <= day <= gap[1]):
            have.append(day.isoformat())
        day += timedelta(days=1)
    assert len(have) / ((last - first).days + 1) < DAILY_SHARE  # the old rule: not daily
    assert find_gaps(dict.fromkeys(have, 5)) == ([Gap("2026-11-10", "2026-11-12", 3)], True)
    found = stretches(have)
    assert [(s.first, s.last, s.daily) for s in found] == [
        ("2025-12-01", "2026-01-31", True),
        ("2026-09-01", "2026-11-30", True),
    ]


def test_a_silence_of_the_limit_is_a_gap_one_day_more_a_break() -> None:
    limit = STRETCH_BREAK_DAYS
    # 100 days, a silence of exactly the limit in the middle: one stretch, one gap
    near = run(0, 99 + limit, without=range(50, 50 + limit))
    assert find_gaps(days(*near))[0] == [gap(50, 49 + limit)]
    # one day more: two stretches, no gap
    far = run(0, 100 + limit, without=range(50, 51 + limit))
    assert find_gaps(days(*far)) == ([], True)
    assert len(stretches(days(*far))) == 2


def test_each_stretch_is_judged_on_its_own() -> None:
    """Old weekly weigh-ins (not daily: no gaps between them) and a recent daily stretch
    with a gap; and the other way round: daily is the latest stretch's."""
    weekly = list(range(0, 200, 7))
    recent = run(300, 360, without=range(320, 322))
    assert find_gaps(days(*weekly, *recent)) == ([gap(320, 321)], True)
    old = run(0, 60, without=range(10, 13))
    later = [n + 200 for n in weekly]
    assert find_gaps(days(*old, *later)) == ([gap(10, 12)], False)


day_sets = st.sets(st.integers(0, 800), max_size=120).map(sorted)


@given(offsets=day_sets)
def test_gaps_are_silences_inside_daily_stretches(offsets: list[int]) -> None:
    have = set(days(*offsets))
    gaps, daily = find_gaps(sorted(have))
    found = stretches(sorted(have))
    assert sum(s.days_with_data for s in found) == len(have)
    assert daily == (bool(found) and found[-1].daily)
    for gap in gaps:
        first, last = date.fromisoformat(gap.first), date.fromisoformat(gap.last)
        assert gap.days == (last - first).days + 1 <= STRETCH_BREAK_DAYS
        inside = {(first + timedelta(days=n)).isoformat() for n in range(gap.days)}
        assert not inside & have  # no day of a gap has data
        before, after = first - timedelta(days=1), last + timedelta(days=1)
        assert before.isoformat() in have and after.isoformat() in have  # both ends do
        (holding,) = [s for s in found if s.first < gap.first and gap.last < s.last]
        assert holding.daily
    # every silence inside a daily stretch is a gap, and only those
    silences = 0
    for s in found:
        if s.daily:
            silences += s.span - s.days_with_data
    assert sum(g.days for g in gaps) == silences


@given(old=day_sets, recent=day_sets, silence=st.integers(STRETCH_BREAK_DAYS + 1, 900))
def test_history_before_a_break_never_changes_the_recent_gaps(
    old: list[int], recent: list[int], silence: int
) -> None:
    """What the issue asks: data before a break longer than the limit (any amount of
    it, daily or not) leaves the gaps after the break as they were."""
    if not recent:
        return
    shift = (max(old) if old else 0) + silence + 1
    moved = [n + shift for n in recent]
    alone, alone_daily = find_gaps(days(*moved))
    together, daily = find_gaps(days(*old, *moved))
    assert together[len(together) - len(alone) :] == alone
    assert daily == alone_daily
