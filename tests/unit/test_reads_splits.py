"""A workout's splits and heart-rate numbers (``reads.route_splits``, ``Workout``)."""

from __future__ import annotations

import math

import pytest
from healthlog.model import Item
from healthlog.reads import Split, Workout, route_splits

#: metres per thousandth of a degree of latitude (reads' mean Earth radius)
MILLI_DEGREE_M = 6_371_008.8 * math.radians(0.001)


def fix(seq: int, lat: float, t: str | None) -> Item:
    return Item("route", seq, t, None, lat=lat, lon=0.0)


def test_a_straight_run_is_cut_every_kilometre_with_times_between_fixes() -> None:
    # due north, a fix every 0.004 degrees (445 m) and 100 s: 2.5 km-ish in 600 s
    route = [
        fix(n, 0.004 * n, f"2026-03-07T08:{n * 100 // 60:02d}:{n * 100 % 60:02d}Z")
        for n in range(7)
    ]
    total = 6 * 4 * MILLI_DEGREE_M
    splits = route_splits(route)
    assert [s.number for s in splits] == [1, 2, 3]
    assert [s.distance_m for s in splits[:2]] == [1000.0, 1000.0]
    assert splits[2].distance_m == pytest.approx(total - 2000, abs=0.1)
    speed = 4 * MILLI_DEGREE_M / 100  # metres per second, the same all along
    assert splits[0].duration_s == pytest.approx(1000 / speed, abs=0.1)
    assert splits[0].pace_s_per_km == pytest.approx(1000 / speed, abs=0.1)
    assert sum(s.duration_s or 0 for s in splits) == pytest.approx(600, abs=0.2)


def test_splits_without_times_have_lengths_only_and_no_route_has_none() -> None:
    route = [fix(n, 0.01 * n, None) for n in range(3)]  # 2.2 km
    splits = route_splits(route)
    assert [(s.distance_m, s.duration_s, s.pace_s_per_km) for s in splits[:2]] == [
        (1000.0, None, None),
        (1000.0, None, None),
    ]
    assert route_splits([]) == []
    assert route_splits([fix(0, 1.0, None), fix(1, 1.0, None)]) == []  # it did not move
    assert Split(1, 500.0, 150.0).pace_s_per_km == 300.0


def test_heart_rate_stats_of_a_workout() -> None:
    items = [
        Item("heartRateData", n, f"2026-03-07T08:0{n}:00Z", qty, unit="count/min")
        for n, qty in enumerate((120.0, 150.0, 141.0))
    ]
    run = Workout("RUN", "Run", None, None, None, {}, {"heartRateData": items})
    stats = run.heart_rate_stats()
    assert stats is not None
    assert (stats.samples, stats.min, stats.avg, stats.max, stats.unit) == (
        3,
        120.0,
        137.0,
        150.0,
        "count/min",
    )
    assert run.heart_rate_stats("heartRateRecovery") is None
    assert run.splits() == []
