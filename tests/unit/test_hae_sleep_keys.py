"""A sleep night sent as a day alone keys like the same night sent with a full timestamp.

Issue #9, item 16: aggregated sleep's ``date`` is documented as a day (``2026-07-06``),
and HAE also stamps a day's bucket as its midnight with the phone's offset
(``2026-07-06 00:00:00 +0200``). Both forms of one night must be one key in the
showcase, so a re-send in the other form replaces the night instead of adding a second
one (docs/hae-format.md, "Sleep").
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.hae import parse
from healthlog.journal.port import Journal
from healthlog.model import Point

from tests.conftest import Phone, metrics_body

STAGES = {"core": 4.5, "deep": 1.0, "rem": 1.75, "awake": 0.25}
TIMES = {"sleepStart": "2026-07-05 23:10:00 +0200", "sleepEnd": "2026-07-06 06:40:00 +0200"}


def night(date: str, **fields: Any) -> dict[str, object]:
    return metrics_body(
        ("sleep_analysis", "hr", [{"date": date, "source": "Watch", **STAGES, **fields}])
    )


def keys(points: list[Point]) -> list[tuple[str, str, str, str, int | None]]:
    return [(p.metric, p.field, p.source, p.start, p.utc_offset) for p in points]


def test_a_night_re_sent_with_a_full_timestamp_replaces_the_date_only_one(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    phone.send(night("2026-07-06", **TIMES))
    phone.send(night("2026-07-06 00:00:00 +0200", **TIMES, core=4.75))
    report = FoldPass(journal, Player(journal, archive)).pass_once()
    assert report.tally.classes == {"parsed": 2}, report

    stored = [sp.point for sp in journal.export_points(metric="sleep_analysis")]
    assert sorted((p.field, p.start, p.utc_offset, p.qty) for p in stored) == [
        ("awake", "2026-07-05T22:00:00.000000Z", 120, 0.25),
        ("core", "2026-07-05T22:00:00.000000Z", 120, 4.75),  # the later send's value
        ("deep", "2026-07-05T22:00:00.000000Z", 120, 1.0),
        ("rem", "2026-07-05T22:00:00.000000Z", 120, 1.75),
    ]


@pytest.mark.parametrize(
    "times",
    [
        TIMES,
        {"sleepStart": "2026-07-05 23:10:00 +0200"},
        {"inBedStart": "2026-07-05 22:55:00 +0200", "sleepStart": None},
        {"sleepEnd": "2026-07-06 06:40:00 +0200"},
        # 9.x: a day's bucket also sends start and end
        {"start": "2026-07-06 00:00:00 +0200", "end": "2026-07-06 23:59:59 +0200"},
        # the first readable time decides: sleepStart cannot be read, sleepEnd can
        {"sleepStart": "not a time", "sleepEnd": "2026-07-06 06:40:00 +0200"},
    ],
)
def test_the_night_takes_its_clock_from_its_own_times(times: dict[str, object]) -> None:
    date_only = parse(orjson.dumps(night("2026-07-06", **times))).points
    full = parse(orjson.dumps(night("2026-07-06 00:00:00 +0200", **times))).points
    assert keys(date_only) == keys(full)
    assert {p.start for p in date_only} == {"2026-07-05T22:00:00.000000Z"}


def test_a_night_with_no_time_of_its_own_starts_at_midnight_in_the_account_zone() -> None:
    """As a CSV night of the same day is read (``tz``, the account's zone)."""
    sent = orjson.dumps(night("2026-07-06"))
    in_berlin = parse(sent, tz="Europe/Berlin").points
    assert {(p.start, p.utc_offset) for p in in_berlin} == {("2026-07-05T22:00:00.000000Z", 120)}
    full = parse(orjson.dumps(night("2026-07-06 00:00:00 +0200")), tz="Europe/Berlin").points
    assert keys(in_berlin) == keys(full)
    # in winter the same zone is an hour from UTC
    winter = parse(orjson.dumps(night("2026-01-06")), tz="Europe/Berlin").points
    assert {(p.start, p.utc_offset) for p in winter} == {("2026-01-05T23:00:00.000000Z", 60)}
    # an account in UTC (the default): midnight UTC, as before, and its offset 0
    assert {(p.start, p.utc_offset) for p in parse(sent).points} == {
        ("2026-07-06T00:00:00.000000Z", 0)
    }


CSV_NIGHT = (
    "Date,Sleep Analysis [Core] (hr),Sleep Analysis [Deep] (hr)\r\n2026-07-06 00:00:00,4.5,1\r\n"
)


def test_a_json_night_as_a_day_and_a_csv_night_of_that_day_are_one_key() -> None:
    boundary = "hl-boundary"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="metrics"; filename="m.csv"\r\n'
        f"Content-Type: text/csv\r\n\r\n{CSV_NIGHT}--{boundary}--\r\n"
    ).encode()
    csv_points = parse(
        body, content_type=f"multipart/form-data; boundary={boundary}", tz="Europe/Berlin"
    ).points
    json_points = parse(
        orjson.dumps(
            metrics_body(("sleep_analysis", "hr", [{"date": "2026-07-06", "core": 4.5, "deep": 1}]))
        ),
        tz="Europe/Berlin",
    ).points
    assert keys(csv_points) == keys(json_points)


@pytest.mark.parametrize(
    ("times", "tz"),
    [({"sleepStart": "0001-01-01 23:10:00 +0200"}, "UTC"), ({}, "Asia/Tokyo")],
)
def test_a_midnight_out_of_range_keeps_the_day_as_utc_midnight(
    times: dict[str, object], tz: str
) -> None:
    """The first day's midnight east of Greenwich is before the first instant there is."""
    points = parse(orjson.dumps(night("0001-01-01", **times)), tz=tz).points
    assert {(p.start, p.utc_offset) for p in points} == {("0001-01-01T00:00:00.000000Z", None)}


def test_a_full_timestamp_night_keeps_its_own_time() -> None:
    """Only a day alone is read as the night's midnight: a time the app sent stays."""
    sent = night("2021-12-18 09:03:36 +0800", **TIMES)
    assert {(p.start, p.utc_offset) for p in parse(orjson.dumps(sent)).points} == {
        ("2021-12-18T01:03:36.000000Z", 480)
    }
