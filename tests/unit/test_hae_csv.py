"""HAE's CSV export (multipart/form-data, offset-less times in the account's zone)."""

from __future__ import annotations

import orjson
import pytest
from healthlog.errors import UnreadableBody
from healthlog.hae import parse
from healthlog.model import Point

BOUNDARY = "hae-boundary-1"
CONTENT_TYPE = f"multipart/form-data; boundary={BOUNDARY}"

METRICS = (
    "Date/Time,Active Energy (kcal),Heart Rate [Min] (count/min),Weight & Body Mass (lb)\r\n"
    "2023-01-02 00:00:00,512.3,48,154.3\r\n"
    "2023-07-02 00:00:00,498.1,,\r\n"
)
WORKOUTS = (
    "Workout Type,Start,End,Duration,Active Energy (kcal),Distance (mi)\r\n"
    "Walking,2023-06-20 17:40,2023-06-20 17:57,00:17:16,67.5,0.59\r\n"
)


def multipart(*files: tuple[str, str]) -> bytes:
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"; '
        f'filename="{name}.csv"\r\nContent-Type: text/csv\r\n\r\n{text}\r\n'
        for name, text in files
    ]
    return ("".join(parts) + f"--{BOUNDARY}--\r\n").encode()


def test_csv_metrics_are_points_of_the_json_metric_names_in_the_accounts_zone() -> None:
    result = parse(multipart(("metrics", METRICS)), content_type=CONTENT_TYPE, tz="Europe/Berlin")
    assert result.uncovered == ()
    got = [(p.metric, p.field, p.start, p.utc_offset, p.unit) for p in result.points]
    assert got == [
        ("active_energy", "qty", "2023-01-01T23:00:00.000000Z", 60, "kcal"),
        ("heart_rate", "min", "2023-01-01T23:00:00.000000Z", 60, "count/min"),
        ("weight_body_mass", "qty", "2023-01-01T23:00:00.000000Z", 60, "kg"),
        ("active_energy", "qty", "2023-07-01T22:00:00.000000Z", 120, "kcal"),  # summer time
    ]
    assert result.points[2].extra == '{"sent_qty":154.3,"sent_unit":"lb"}'


def test_csv_workouts_are_records_keyed_like_v1_workouts() -> None:
    result = parse(multipart(("workouts", WORKOUTS)), content_type=CONTENT_TYPE, tz="UTC")
    (walk,) = result.records
    assert (walk.identity, walk.end, walk.utc_offset) == (
        "Walking|2023-06-20T17:40:00.000000Z",
        "2023-06-20T17:57:00.000000Z",
        0,
    )
    body = orjson.loads(walk.body)
    # the JSON workouts' shape: json_extract(body, '$.distance.qty') works for both forms
    assert body["duration"] == 17 * 60 + 16
    assert body["distance"] == {"qty": 0.59, "units": "mi"}
    assert body["activeEnergyBurned"] == {"qty": 67.5, "units": "kcal"}


def test_hae_s_own_workouts_csv_names_the_activity_type_and_keeps_odd_cells_as_sent() -> None:
    csv = (
        "Type,Start,End,Duration,Distance (mi),Max Heart Rate (bpm),Location\r\n"
        "Running,2023-06-20 07:00,2023-06-20 07:45,00:45:00,5.12,171,Outdoor\r\n"
        "Cycling,2023-06-20 07:00,2023-06-20 08:00,01:00:00,12.5,150,Outdoor\r\n"
    )
    result = parse(multipart(("workouts", csv)), content_type=CONTENT_TYPE, tz="UTC")

    run, ride = result.records
    assert (run.name, run.identity) == ("Running", "Running|2023-06-20T07:00:00.000000Z")
    assert ride.identity == "Cycling|2023-06-20T07:00:00.000000Z"  # same minute, not merged
    body = orjson.loads(run.body)
    assert body["distance"] == {"qty": 5.12, "units": "mi"}
    assert body["maxHeartRate"] == {"qty": 171.0, "units": "bpm"}
    assert body["Location"] == "Outdoor"


def test_csv_fields_are_the_json_parsers_fields_for_the_same_keys() -> None:
    """One mapping: a CSV night, heart rate or sexual activity keys like its JSON form."""
    csv = (
        "Date/Time,Sleep Analysis [In Bed] (hr),Sleep Analysis [REM] (hr),"
        "Sleep Analysis [Total Sleep] (hr),Heart Rate [Max] (count/min),"
        "Sexual Activity [Protection Used] (count),Blood Pressure [Systolic] (mmHg)\r\n"
        "2024-06-01 00:00:00,8.1,1.2,7.0,88,1,121\r\n"
    )
    json_body = orjson.dumps({"data": {"metrics": [
        {"name": "sleep_analysis", "units": "hr", "data": [
            {"date": "2024-06-01 00:00:00 +0000", "inBed": 8.1, "rem": 1.2, "totalSleep": 7.0}]},
        {"name": "heart_rate", "units": "count/min", "data": [
            {"date": "2024-06-01 00:00:00 +0000", "Max": 88}]},
        {"name": "sexual_activity", "units": "count", "data": [
            {"date": "2024-06-01 00:00:00 +0000", "Protection Used": 1}]},
        {"name": "blood_pressure", "units": "mmHg", "data": [
            {"date": "2024-06-01 00:00:00 +0000", "systolic": 121}]},
    ]}})  # fmt: skip

    from_csv = parse(multipart(("metrics", csv)), content_type=CONTENT_TYPE, tz="UTC")
    from_json = parse(json_body)

    def keys(points: list[Point]) -> list[tuple[str, str, str]]:
        return sorted((p.metric, p.field, p.start) for p in points)

    assert keys(from_csv.points) == keys(from_json.points)
    assert ("sleep_analysis", "inBed") in {(p.metric, p.field) for p in from_csv.points}


def test_a_unit_with_parentheses_is_read_whole() -> None:
    csv = "Date/Time,VO2 Max (ml/(kg·min))\r\n2024-06-01 00:00:00,41.5\r\n"
    (point,) = parse(multipart(("metrics", csv)), content_type=CONTENT_TYPE, tz="UTC").points
    assert (point.metric, point.field, point.unit, point.qty) == (
        "vo2_max", "qty", "ml/(kg·min)", 41.5
    )  # fmt: skip


def test_a_part_that_is_neither_file_is_an_uncovered_key() -> None:
    body = multipart(("metrics", METRICS), ("notes", "hello,world\r\n1,2\r\n"))
    assert parse(body, content_type=CONTENT_TYPE).uncovered == ("csv:notes",)


def test_a_body_that_is_not_multipart_is_unreadable() -> None:
    with pytest.raises(UnreadableBody):
        parse(b"Date/Time,x\r\n", content_type="multipart/form-data")


def test_a_csv_time_before_the_first_instant_in_the_zone_is_not_understood() -> None:
    """0001-01-01 00:00 in Tokyo is before 0001-01-01 00:00 UTC: its row is uncovered,
    the other rows fold (it used to end the parse with an OverflowError)."""
    early = "Date/Time,Active Energy (kcal)\r\n0001-01-01 00:00:00,5\r\n2023-01-02 00:00:00,7\r\n"
    result = parse(multipart(("metrics", early)), content_type=CONTENT_TYPE, tz="Asia/Tokyo")
    assert result.uncovered == ("csv:metrics",)
    assert [(p.start, p.qty) for p in result.points] == [("2023-01-01T15:00:00.000000Z", 7.0)]
