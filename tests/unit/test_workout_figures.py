"""A workout's figures, splits, zones and weekly totals (``healthlog.reads.figures``) and
the conversions they use (``healthlog.reads.units``), on real bodies folded into a real journal:
the HAE 8.1.2 walk of ``tests/fixtures/hae/samples`` and the v2 run of
``tests/fixtures/hae/workouts_v2_outdoor_run.json``, among others (``tests.workout_data``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import Item
from healthlog.ops import accounts
from healthlog.reads import Figure, Figures, Reads, Workout, WorkoutDetail, units
from healthlog.reads.figures import figures, heart_rate_zones, weekly_totals

from tests.conftest import Phone
from tests.workout_data import RIDE_ID, RUN_HEART, RUN_ID, WALK_FILE, WALK_ID, build

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hae"


# --- conversions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("qty", "unit", "to", "expected"),
    [
        (1.0, "mi", "km", 1.609344),
        (5.0, "km", "mi", 3.10686),
        (1046.0, "kJ", "kcal", 250.0),
        (250.0, "kcal", "kJ", 1046.0),
        (300.0, "Cal", "kcal", 300.0),  # the Health app's export: a food calorie is a kcal
        (1200.0, "cm", "m", 12.0),  # the export's HKElevationAscended
        (10.0, "m", "ft", 32.8084),
        (18.799, "ft", "m", 5.730),
        (10.0, "km/hr", "mi/hr", 6.21371),
        (2.9363, "mi/hr", "km/hr", 4.7255),
        (79.61, "degF", "degC", 26.45),
        (14.5, "degC", "degF", 58.1),
        (1.0, "count/s", "count/min", 60.0),
    ],
)
def test_a_quantity_converts_between_the_units_of_its_dimension(
    qty: float, unit: str, to: str, expected: float
) -> None:
    assert units.convert(qty, unit, to) == pytest.approx(expected, rel=1e-4)


def test_units_of_two_dimensions_or_unknown_ones_do_not_convert() -> None:
    assert units.convert(1.0, "km", "kcal") is None
    assert units.convert(1.0, "furlongs", "km") is None
    assert units.convert(3.0, "spm", "spm") == 3.0  # the same spelling: as it is


def test_the_unit_systems_and_their_units() -> None:
    assert units.SYSTEMS == ("metric", "imperial") and units.DEFAULT == "metric"
    assert [units.target("metric", q) for q in ("distance", "elevation", "speed", "energy")] == [
        "km", "m", "km/hr", "kcal",
    ]  # fmt: skip
    assert [units.target("imperial", q) for q in ("distance", "elevation", "speed")] == [
        "mi", "ft", "mi/hr",
    ]  # fmt: skip
    assert (units.pace_unit("metric"), units.pace_unit("imperial")) == ("s/km", "s/mi")
    assert (units.split_m("metric"), units.split_m("imperial")) == (1000.0, 1609.344)
    assert [units.shown(u) for u in ("km/hr", "mi/hr", "degC", "degF", "km")] == [
        "km/h", "mph", "°C", "°F", "km",
    ]  # fmt: skip
    with pytest.raises(units.BadUnitSystem, match="metric or imperial"):
        units.check_system("furlongs")
    assert units.system_of(None) == "metric" and units.system_of("imperial") == "imperial"


# --- on real bodies ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteJournal]:
    where = tmp_path_factory.mktemp("workouts")
    build(where)
    journal = SqliteJournal(str(where / "journal.db"))
    yield journal
    journal.close()


def reads_of(journal: SqliteJournal, name: str) -> Reads:
    (account,) = [a for a in journal.accounts() if a.name == name]
    return Reads(journal, account)


def said(detail: WorkoutDetail) -> dict[str, tuple[float, str, str]]:
    f = detail.figures
    return {
        name: (value.value, value.unit, value.basis)
        for name in f.__dataclass_fields__
        if isinstance(value := getattr(f, name), Figure)
    }


def test_the_real_walk_in_metric_units(folded: SqliteJournal) -> None:
    """HAE 8.1.2's v1 walk: no duration (its end less its start), distance in mi, energy in
    kcal, elevation in ft, temperature in degF; the average heart rate is its series'."""
    body = json.loads(WALK_FILE.read_bytes())["workouts"][0]
    series = [p["qty"] for p in body["heartRateData"]]
    walk = reads_of(folded, "carol").workout_detail(WALK_ID)
    found = said(walk)
    assert found["duration"] == (725.0, "s", "computed")  # 20:38:38 to 20:50:43
    assert found["distance"] == (round(0.5915495370532968 * 1.609344, 3), "km", "sent")
    assert found["active_energy"] == (67.5, "kcal", "sent")
    assert found["total_energy"] == (133.5, "kcal", "sent")
    assert found["avg_heart_rate"] == (round(sum(series) / len(series), 1), "bpm", "series")
    assert found["avg_heart_rate"][0] != round(body["avgHeartRate"]["qty"], 1)  # not the summary
    assert found["max_heart_rate"] == (108.0, "bpm", "series")
    assert found["pace"] == (round(725 / found["distance"][0], 1), "s/km", "computed")
    assert "speed" not in found  # a walk has a pace
    assert found["elevation_gain"] == (5.73, "m", "sent")  # 18.8 ft
    assert found["temperature"] == (26.4, "°C", "sent")  # 79.61 °F
    assert found["humidity"] == (56.0, "%", "sent")
    assert found["step_cadence"] == (25.5, "spm", "sent")
    assert "swim_cadence" not in found  # sent as 0: a walk has none
    assert found["steps"] == (308, "steps", "sent")
    assert found["intensity"] == (4.2, "MET", "sent")
    assert walk.splits == []  # no route


def test_the_same_walk_in_imperial_units(folded: SqliteJournal) -> None:
    found = said(reads_of(folded, "dave").workout_detail(WALK_ID))
    assert found["distance"] == (0.592, "mi", "sent")
    assert found["elevation_gain"] == (18.8, "ft", "sent")
    assert found["temperature"] == (79.6, "°F", "sent")
    assert found["pace"][1] == "s/mi" and found["pace"][0] == pytest.approx(725 / 0.592, abs=0.2)
    assert found["active_energy"] == (67.5, "kcal", "sent")  # kcal in both systems


def test_a_summary_without_a_series_gives_the_heart_rate(phone: Phone) -> None:
    """The walk again without its heart-rate series: the phone's summary (avgHeartRate,
    maxHeartRate) gives the average and the maximum, and there are no zones."""
    body = json.loads(WALK_FILE.read_bytes())
    del body["workouts"][0]["heartRateData"]
    phone.send(body)
    from healthlog.fold.pass_ import FoldPass
    from healthlog.fold.player import Player

    FoldPass(phone.journal, Player(phone.journal, phone.archive)).pass_once()
    walk = Reads(phone.journal, phone.account).workout_detail(WALK_ID)
    found = said(walk)
    assert found["avg_heart_rate"] == (98.1, "bpm", "sent")  # 98.05344827586207
    assert found["max_heart_rate"] == (108.0, "bpm", "sent")
    assert walk.zones is None


def test_a_v2_summary_of_min_avg_max_in_count_per_minute(folded: SqliteJournal) -> None:
    ride = reads_of(folded, "carol").workout_detail(RIDE_ID)
    found = said(ride)
    assert found["avg_heart_rate"] == (152.0, "bpm", "sent")
    assert found["max_heart_rate"] == (181.0, "bpm", "sent")  # heartRate.max, count/min
    assert found["distance"] == (20.0, "km", "sent")  # 12.4274 mi
    assert found["speed"] == (20.0, "km/h", "computed")  # a ride has a speed
    assert "pace" not in found


def test_the_v2_run_fixture_energy_in_kj_and_heart_rate_from_its_series(phone: Phone) -> None:
    from healthlog.fold.pass_ import FoldPass
    from healthlog.fold.player import Player

    phone.send((FIXTURES / "workouts_v2_outdoor_run.json").read_bytes())
    FoldPass(phone.journal, Player(phone.journal, phone.archive)).pass_once()
    r = Reads(phone.journal, phone.account)
    found = said(r.workout_detail("DEADBEEF-1234-4ABC-8DEF-0123456789AB"))
    assert found["active_energy"] == (round(1450.2 / 4.184, 1), "kcal", "sent")
    assert found["avg_heart_rate"] == (round((120.5 + 142) / 2, 1), "bpm", "series")
    assert found["max_heart_rate"] == (150.0, "bpm", "series")  # the samples' Max
    assert found["duration"] == (1820.5, "s", "sent")
    assert found["pace"] == (round(1820.5 / 5.1, 1), "s/km", "computed")
    assert found["elevation_gain"] == (42.0, "m", "sent")
    assert found["temperature"] == (14.5, "°C", "sent")
    # the intensity sent as kcal/hr·kg is a MET
    assert found["intensity"] == (9.8, "MET", "sent")
    imperial = said(
        r.workout_detail("DEADBEEF-1234-4ABC-8DEF-0123456789AB", unit_system="imperial")
    )
    assert imperial["temperature"] == (58.1, "°F", "sent")
    assert imperial["distance"] == (3.169, "mi", "sent")


def test_the_health_apps_export_shape_cm_and_cal() -> None:
    """What ``healthlog import`` makes of a Workout element (its WorkoutStatistics and
    metadata): elevation in cm, energy in Cal, the activity type beside the name."""
    ride = Workout(
        "X", "Cycling", "2026-03-01T09:00:00+01:00", "2026-03-01T10:00:00+01:00", None,
        {"workoutActivityType": "HKWorkoutActivityTypeCycling", "duration": 3600.0,
         "distance": {"qty": 30.0, "units": "km"},
         "activeEnergyBurned": {"qty": 700, "units": "Cal"},
         "elevationUp": {"qty": 21400, "units": "cm"},
         "heartRate": {"avg": {"qty": 140, "units": "count/min"}},
         "avgSpeed": {"qty": 18.64, "units": "mi/hr"}},
    )  # fmt: skip
    f = figures(ride, "metric")
    assert f.elevation_gain == Figure(214.0, "m", "sent")
    assert f.active_energy == Figure(700.0, "kcal", "sent")
    assert f.avg_heart_rate == Figure(140.0, "bpm", "sent") and f.max_heart_rate is None
    assert f.speed == Figure(30.0, "km/h", "sent")  # its avgSpeed, 18.64 mph
    assert f.pace is None
    hike = Workout(
        "Y", "Hiking", None, None, None, {"workoutActivityType": "HKWorkoutActivityTypeHiking"}
    )
    assert figures(hike, "metric") == Figures("metric")  # nothing sent, nothing to show


# --- splits, zones, weeks ---------------------------------------------------------------------


def test_splits_per_kilometre_and_per_mile(folded: SqliteJournal) -> None:
    """The run is 3.2 km due north at an even 375 s a km."""
    metric = reads_of(folded, "carol").workout_detail(RUN_ID).splits
    assert [(s.number, s.distance, s.unit) for s in metric] == [
        (1, 1.0, "km"), (2, 1.0, "km"), (3, 1.0, "km"), (4, 0.2, "km"),
    ]  # fmt: skip
    assert all(s.pace == pytest.approx(375.0, abs=0.2) for s in metric)
    assert metric[3].duration_s == pytest.approx(75.0, abs=0.2)
    imperial = reads_of(folded, "dave").workout_detail(RUN_ID).splits
    assert [(s.distance, s.unit) for s in imperial] == [(1.0, "mi"), (0.988, "mi")]
    assert imperial[0].pace == pytest.approx(375.0 * 1.609344, abs=0.3)
    assert imperial[0].distance_m == pytest.approx(1609.3, abs=0.1)


def test_zones_are_shares_of_the_accounts_highest_heart_rate(folded: SqliteJournal) -> None:
    """carol's ride sent a maximum of 181 bpm: her run's zones are shares of it; dave has
    no such ride, and his run's own peak (143) is his maximum."""
    carol = reads_of(folded, "carol").workout_detail(RUN_ID).zones
    assert carol is not None and carol.max_bpm == 181.0
    assert [(z.low_bpm, z.high_bpm) for z in carol.zones] == [
        (None, 108.6), (108.6, 126.7), (126.7, 144.8), (144.8, 162.9), (162.9, None),
    ]  # fmt: skip
    # a reading a minute, 120 to 140: 120-126 in zone 2, 127-140 in zone 3; each counts
    # the 60 s to the next, the last (at 20:00, the run's end) nothing
    below = sum(1 for bpm in RUN_HEART if bpm < 126.7)
    above = len(RUN_HEART) - below - 1
    assert [z.seconds for z in carol.zones] == [0.0, below * 60.0, above * 60.0, 0.0, 0.0]
    assert sum(z.share for z in carol.zones) == pytest.approx(1.0)
    dave = reads_of(folded, "dave").workout_detail(RUN_ID).zones
    assert dave is not None and dave.max_bpm == 143.0  # the run's own highest Max


def test_a_sample_counts_for_at_most_a_minute() -> None:
    items = [
        Item("heartRateData", n, t, bpm)
        for n, (t, bpm) in enumerate(
            (("2026-03-01T09:00:00Z", 100.0), ("2026-03-01T09:00:10Z", 190.0),
             ("2026-03-01T09:30:00Z", 150.0))
        )
    ]  # fmt: skip
    w = Workout("Z", "Run", None, "2026-03-01T10:31:00+01:00", None, {}, {"heartRateData": items})
    zones = heart_rate_zones(w, 200.0)
    assert zones is not None
    # 100 bpm is zone 1 for 10 s; 190 zone 5 for 60 s (not the 29 min gap); 150 zone 3
    # (150/200 = 75 %) for the 60 s to the end
    assert [z.seconds for z in zones.zones] == [10.0, 0.0, 60.0, 0.0, 60.0]
    assert heart_rate_zones(w, None) is None


def test_weekly_totals_per_iso_week_on_the_phones_clock(folded: SqliteJournal) -> None:
    """The ride starts Sunday 23:30 (+02:00), the run on Monday: two ISO weeks, though both
    are on the same day in UTC."""
    listed = reads_of(folded, "carol").workout_list()
    assert listed.unit_system == "metric"
    weeks = {t.week: t for t in listed.weeks}
    assert sorted(weeks) == ["2023-W23", "2026-W11", "2026-W12"]
    ride, run = weeks["2026-W11"], weeks["2026-W12"]
    assert (ride.monday, ride.workouts, ride.duration_s, ride.distance, ride.active_energy) == (
        "2026-03-09", 1, 3600.0, 20.0, 500.0,
    )  # fmt: skip
    assert (run.monday, run.distance, run.distance_unit, run.active_energy) == (
        "2026-03-16", 3.2, "km", 250.0,
    )  # fmt: skip
    imperial = reads_of(folded, "carol").workout_list(unit_system="imperial")
    assert {t.week: t.distance for t in imperial.weeks}["2026-W11"] == pytest.approx(
        12.427, abs=0.001
    )
    assert weekly_totals([], "metric") == []


def test_a_week_without_distances_says_none() -> None:
    lifting = Workout("L", "Traditional Strength Training", "2026-03-02T18:00:00+01:00", None,
                      None, {"duration": 1800})  # fmt: skip
    (week,) = weekly_totals([(lifting, figures(lifting, "metric"))], "metric")
    assert (week.duration_s, week.distance, week.active_energy) == (1800.0, None, None)


# --- the account's setting ----------------------------------------------------------------------


def test_the_account_setting_is_kept_and_checked(phone: Phone) -> None:
    assert phone.account.unit_system == "metric"  # the default
    changed = accounts.set_unit_system(phone.journal, "alice", "imperial")
    assert changed.unit_system == "imperial" and changed.time_zone == phone.account.time_zone
    (stored,) = phone.journal.accounts()
    assert stored.unit_system == "imperial"
    assert Reads(phone.journal, stored).unit_system() == "imperial"
    assert Reads(phone.journal, stored).unit_system("metric") == "metric"
    with pytest.raises(units.BadUnitSystem):
        accounts.set_unit_system(phone.journal, "alice", "nautical")
    with pytest.raises(units.BadUnitSystem):
        Reads(phone.journal, stored).workout_list(unit_system="nautical")
