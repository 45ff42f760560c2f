"""Every section other than metrics: workouts v1/v2, the event sections, HRV beats.

Fixtures in tests/fixtures/hae are written from docs/hae-format.md (no public sample body
exists for these shapes); the two real v1 workouts are in test_hae_samples.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from healthlog.errors import UnreadableBody
from healthlog.hae import parse
from healthlog.hae.parse import RECORD_SECTIONS
from healthlog.model import Item, ParseResult, Record
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hae"


def fixture(name: str) -> ParseResult:
    return parse((FIXTURES / name).read_bytes())


def only(result: ParseResult) -> Record:
    (record,) = result.records
    return record


def body_of(record: Record) -> dict[str, Any]:
    parsed: dict[str, Any] = orjson.loads(record.body)
    return parsed


def series(record: Record, name: str) -> list[Item]:
    return [i for i in record.items if i.series == name]


def extra(item: Item) -> dict[str, Any]:
    return orjson.loads(item.extra) if item.extra else {}


# --- workouts ------------------------------------------------------------------------------


def test_a_v2_workout_is_keyed_by_its_id_and_keeps_its_quantities_as_sent() -> None:
    result = fixture("workouts_v2_outdoor_run.json")
    run = only(result)
    assert result.uncovered == ()
    assert run[:7] == (
        "workouts",
        "DEADBEEF-1234-4ABC-8DEF-0123456789AB",
        "2025-05-04T06:00:00.000000Z",
        "2025-05-04T06:30:20.000000Z",
        60,
        "Outdoor Run",
        None,
    )
    body = body_of(run)
    assert body["duration"] == 1820.5
    assert body["distance"] == {"qty": 5.1, "units": "km"}
    assert body["metadata"] == {"HKWeatherCondition": "Cloudy"}
    assert (body["isIndoor"], body["location"]) == (False, "Outdoor")
    assert "maxHeartRate" not in body  # null carries nothing
    assert not {"route", "heartRateData", "heartRateRecovery", "activeEnergy"} & body.keys()


def test_a_v2_route_keeps_latitude_longitude_altitude_and_the_rest_in_extra() -> None:
    first, second = series(only(fixture("workouts_v2_outdoor_run.json")), "route")
    assert first[:9] == (
        "route", 0, "2025-05-04T06:00:01.000000Z", None, 51.5007, -0.1246, 21.4, None,
        '{"course":90.5,"courseAccuracy":5,"horizontalAccuracy":3.2,"speed":2.9,'
        '"speedAccuracy":0.4,"verticalAccuracy":2.1}',
    )  # fmt: skip
    assert (second.seq, second.lat, second.lon) == (1, 51.501, -0.124)


def test_v2_heart_rate_series_take_avg_as_qty_with_min_and_max_in_extra() -> None:
    run = only(fixture("workouts_v2_outdoor_run.json"))
    data = series(run, "heartRateData")
    assert [(i.qty, i.unit) for i in data] == [(120.5, "count/min"), (142.0, "count/min")]
    assert extra(data[0]) == {
        "Min": 98,
        "Max": 131,
        "sent_unit": "bpm",
        "source": "Simon's Apple Watch",
    }
    assert [i.qty for i in series(run, "heartRateRecovery")] == [150.0]


def test_workout_series_convert_to_their_canonical_unit_or_count_as_incomparable() -> None:
    result = fixture("workouts_v2_outdoor_run.json")
    energy = series(only(result), "activeEnergy")
    assert [(round(i.qty or 0, 9), i.unit) for i in energy] == [
        (10.0, "kcal"),
        (12.0, "kcal"),
        (3.0, "furlongs"),
    ]
    assert extra(energy[0])["sent_qty"] == 41.84
    assert result.incomparable == 1  # the furlongs, kept with their own unit


def test_v1_workouts_are_keyed_by_name_and_utc_start_and_keep_the_wiki_spellings() -> None:
    swim = only(fixture("workouts_v1_wiki_fields.json"))
    assert swim.identity == "Pool Swim|2022-08-09T20:30:00.000000Z"
    assert body_of(swim)["intesity"] == {"qty": 7.1, "units": "MET"}
    assert [(i.series, i.qty) for i in swim.items] == [
        ("heartRateData", 121.0),
        ("heartRateRecovery", 98.0),
    ]


def test_recovery_sent_as_heart_rate_data_is_stored_as_recovery_and_says_so() -> None:
    walk, cycling = fixture("workouts_v2_app_bugs.json").records
    assert {i.series for i in walk.items} == {"heartRateRecovery"}
    assert all(extra(i)["sent_as"] == "heartRateData" for i in walk.items)
    assert body_of(walk)["metadata"] == []  # empty metadata kept as sent (#45, #58)
    assert cycling.items == ()  # no route, no series (#36): nothing, and no failure


def test_real_heart_rate_data_during_the_workout_is_not_taken_for_recovery() -> None:
    run = only(fixture("workouts_v2_outdoor_run.json"))
    assert all("sent_as" not in extra(i) for i in run.items)


@pytest.mark.parametrize(
    "workout",
    [{"name": "Walking"}, {"end": "2021-12-24 08:02:43 +0800"}, {"name": "W", "start": "?"}],
)
def test_a_workout_without_id_or_readable_name_and_start_is_uncovered(
    workout: dict[str, Any],
) -> None:
    result = parse(orjson.dumps({"data": {"workouts": [workout]}}))
    assert (result.uncovered, result.records) == (("workouts",), [])


def test_unreadable_times_and_values_in_a_series_stay_in_extra() -> None:
    workout = {
        "id": "X",
        "heartRateData": [{"date": "soon", "qty": "fast", "units": "bpm"}],
    }
    (item,) = only(parse(orjson.dumps({"data": {"workouts": [workout]}}))).items
    assert (item.t, item.qty) == (None, None)
    assert extra(item) == {"date": "soon", "qty": "fast", "sent_unit": "bpm"}


# --- the event sections --------------------------------------------------------------------


def test_state_of_mind_is_keyed_by_id_else_kind_and_start_and_reads_iso_dates() -> None:
    daily, momentary = fixture("state_of_mind.json").records
    assert (daily.identity, daily.name) == ("5A7E0C1B-0000-4000-8000-000000000002", "daily_mood")
    assert body_of(daily)["labels"] == ["content", "grateful"]
    assert momentary.identity == "momentary_emotion|2025-01-11T07:15:00.000000Z"
    assert (momentary.start, momentary.utc_offset) == ("2025-01-11T07:15:00.000000Z", 60)
    assert body_of(momentary)["valenceClassification"] == "slightly_unpleasant"


def test_medications_keep_localized_status_and_are_keyed_by_scheduled_else_start() -> None:
    scheduled, logged = fixture("medications.json").records
    assert scheduled.identity == "Ibuprofen 200 mg|2025-10-01T06:00:00.000000Z"
    assert body_of(scheduled)["status"] == "Genommen"  # never translated
    assert logged.identity == "Ibuprofen 200 mg|2025-10-01T18:00:00.000000Z"
    # codings describe the medication: body, not a series
    assert body_of(logged)["codings"][0]["code"] == "5640"
    assert logged.items == ()


def test_symptoms_and_cycle_tracking_are_keyed_by_name_and_start_as_sent() -> None:
    headache, fatigue = fixture("symptoms.json").records
    assert headache.identity == "Kopfschmerzen|2025-01-10T08:00:00.000000Z"
    assert (body_of(headache)["severity"], headache.source) == ("Leicht", "Health")
    assert fatigue.source == ""
    flow, test = fixture("cycle_tracking.json").records
    assert flow.identity == "Menstrual Flow|2025-02-02T23:00:00.000000Z"
    assert body_of(test)["value"] == "Positivo"


def test_ecg_voltages_are_a_series_timed_by_their_epoch_floats() -> None:
    ecg = only(fixture("ecg.json"))
    assert (ecg.identity, ecg.name) == ("2025-03-01T10:00:00.000000Z", "Sinusrhythmus")
    assert [(i.series, i.seq, i.t, i.qty, i.unit) for i in ecg.items] == [
        ("voltage", 0, "2025-03-01T10:00:00.000000Z", -12.5, "mcV"),
        ("voltage", 1, "2025-03-01T10:00:00.001953Z", 3.25, "mcV"),
        ("voltage", 2, "2025-03-01T10:00:00.003906Z", 140.0, "mcV"),
    ]
    assert body_of(ecg)["numberOfVoltageMeasurements"] == 3


def test_an_ecg_of_fifteen_thousand_samples_keeps_every_one() -> None:
    voltages = [
        {"date": 1740823200 + n / 512, "voltage": (n % 97) - 48.5, "units": "mcV"}
        for n in range(15_360)
    ]
    reading = {"start": "2025-03-01 10:00:00 +0000", "voltageMeasurements": voltages}
    ecg = only(parse(orjson.dumps({"data": {"ecg": [reading]}})))
    assert len(ecg.items) == 15_360
    assert [i.seq for i in ecg.items] == list(range(15_360))


def test_observed_heart_rate_notifications_keep_the_source_object_as_json() -> None:
    note = only(fixture("heart_rate_notifications_observed.json"))
    assert note.identity == "high_heart_rate_notification|2025-04-01T14:00:00.000000Z"
    assert note.source == '{"bundleIdentifier":"com.apple.health.ABCD","name":"Apple Watch"}'
    assert [(i.series, i.t, i.qty) for i in note.items] == [
        ("heartRate", "2025-04-01T14:00:00.500000Z", 124.0),
        ("heartRate", "2025-04-01T14:05:00.250000Z", 127.0),
    ]


def test_documented_heart_rate_notifications_read_hr_and_timestamp_objects() -> None:
    note = only(fixture("heart_rate_notifications_documented.json"))
    assert note.identity == "|2025-04-02T03:00:00.000000Z"
    assert [(i.series, i.t, i.qty, i.unit) for i in note.items] == [
        ("heartRate", "2025-04-02T03:00:00.000000Z", 38.0, "count/min"),
        ("heartRateVariation", "2025-04-02T03:00:00.000000Z", 61.0, "ms"),
    ]
    assert extra(note.items[0])["timestamp"]["interval"] == {"duration": 300, "units": "s"}


def test_hrv_beats_are_a_record_keyed_by_the_points_source_and_start() -> None:
    beats = only(fixture("metrics_hrv_heartbeat_series.json"))
    assert [(i.series, i.t, i.qty, i.extra) for i in beats.items] == [
        ("heartbeat", "2024-06-01T02:12:40.125000Z", 0.0, '{"precededByGap":false}'),
        ("heartbeat", "2024-06-01T02:12:41.031000Z", 0.906, '{"precededByGap":false}'),
    ]


def test_an_hrv_beat_series_that_is_not_a_list_of_objects_stays_uncovered() -> None:
    point = {"date": "2024-06-01 03:12:40 +0100", "qty": 41.2, "heartbeatSeries": [1, 2]}
    metric = {"name": "heart_rate_variability", "units": "ms", "data": [point]}
    result = parse(orjson.dumps({"data": {"metrics": [metric]}}))
    assert result.uncovered == ("metrics.heart_rate_variability.heartbeatSeries",)
    assert len(result.points) == 1  # the SDNN is kept


@pytest.mark.parametrize("section", RECORD_SECTIONS)
@pytest.mark.parametrize("value", [42, "x", {"a": 1}, [1], [None]])
def test_a_section_that_is_not_a_list_of_objects_is_its_key(section: str, value: object) -> None:
    assert parse(orjson.dumps({"data": {section: value}})).uncovered == (section,)


# --- units of metrics ----------------------------------------------------------------------


def metric(name: str, units: str, *qty: float) -> bytes:
    data = [{"date": f"2024-06-0{n + 1} 08:00:00 +0000", "qty": q} for n, q in enumerate(qty)]
    return orjson.dumps({"data": {"metrics": [{"name": name, "units": units, "data": data}]}})


@pytest.mark.parametrize(
    ("name", "units", "sent", "stored", "unit"),
    [
        # to the decimals the sent value justifies: 154.3 lb is 69.98930269 kg, known to
        # 0.045 kg, kept to 0.001 (hae.units.justified)
        ("weight_body_mass", "lb", 154.3, 69.989, "kg"),
        ("walking_running_distance", "mi", 3.1, 4.99, "km"),
        ("body_temperature", "degF", 98.6, 37.0, "degC"),
        ("dietary_water", "fl_oz_us", 8, 237.0, "mL"),
        ("walking_speed", "mi/hr", 3, 4.8, "km/hr"),
        ("height", "in", 70, 177.8, "cm"),
        ("active_energy", "kcal", 12.5, 12.5, "kcal"),
    ],
)
def test_metric_points_are_stored_in_their_metrics_canonical_unit(
    name: str, units: str, sent: float, stored: float, unit: str
) -> None:
    result = parse(metric(name, units, sent))
    (point,) = result.points
    assert (point.qty, point.unit) == (stored, unit)
    if units != unit:
        assert orjson.loads(point.extra or "{}") == {"sent_qty": sent, "sent_unit": units}
    assert result.incomparable == 0


def test_a_unit_that_does_not_convert_is_kept_and_counted_incomparable() -> None:
    result = parse(metric("weight_body_mass", "stone-ish", 11, 12))
    assert [(p.qty, p.unit) for p in result.points] == [(11.0, "stone-ish"), (12.0, "stone-ish")]
    assert result.incomparable == 2


def test_metrics_without_a_canonical_unit_are_stored_as_sent() -> None:
    result = parse(metric("step_count", "count", 5))
    assert [(p.qty, p.unit, p.extra) for p in result.points] == [(5.0, "count", None)]


# --- any JSON under any section ------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(-(2**53), 2**53) | st.text(max_size=8)
    | st.sampled_from(["2025-01-10 08:00:00 +0000", "2024-01-02T03:04:05Z"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["id", "name", "start", "end", "date", "qty", "units", "route",
                         "lat", "latitude", "heartRateData", "voltageMeasurements", "kind",
                         "displayText", "scheduledDate", "source", "timestamp", "Avg"]),
        inner, max_size=6),
    max_leaves=25,
)  # fmt: skip


@pytest.mark.slow  # seconds: 150 bodies of any JSON through the parser
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(section=st.sampled_from(RECORD_SECTIONS), value=json_values)
def test_any_json_under_any_section_key_parses_or_is_unreadable(
    section: str, value: object
) -> None:
    try:
        result = parse(orjson.dumps({"data": {section: value}}))
    except UnreadableBody:
        return
    assert set(result.uncovered) <= {section}
    assert all(r.section == section for r in result.records)
