"""HAE's CSV export (multipart/form-data, offset-less times in the account's zone)."""

from __future__ import annotations

import pytest
from healthlog.errors import UnreadableBody
from healthlog.hae import parse

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
    assert '"Duration":"00:17:16"' in walk.body


def test_a_part_that_is_neither_file_is_an_uncovered_key() -> None:
    body = multipart(("metrics", METRICS), ("notes", "hello,world\r\n1,2\r\n"))
    assert parse(body, content_type=CONTENT_TYPE).uncovered == ("csv:notes",)


def test_a_body_that_is_not_multipart_is_unreadable() -> None:
    with pytest.raises(UnreadableBody):
        parse(b"Date/Time,x\r\n", content_type="multipart/form-data")
