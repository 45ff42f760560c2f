"""healthlog.reads on a real SQLite journal: every read, and the same numbers as export."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from healthlog import ids, reads
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.journal.port import Journal
from healthlog.journal.rows import to_text
from healthlog.model import Account, Item, NewDelivery, ParseStatus, Point, Record
from healthlog.reads import (
    CUMULATIVE,
    Gap,
    Kind,
    NotFound,
    Reads,
    Resolution,
    TooHeavy,
    UnknownName,
    auto_resolution,
    find_gaps,
    kind_of,
    local_text,
    resolution_for,
    summarise_route,
)

from tests.conftest import SAMPLES, Phone, metrics_body

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hae"
CET = 60  # minutes east of UTC
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


# --- writing the showcase the way the fold does -----------------------------------------


class Deliveries:
    """Journals deliveries and writes their outcomes, one second apart."""

    def __init__(self, journal: Journal, account: Account) -> None:
        self.journal = journal
        self.account = account
        self.clock = T0

    def send(self, points: Iterable[Point] = (), records: Sequence[Record] = ()) -> str:
        self.clock += timedelta(seconds=1)
        delivery_id = ids.new_delivery_id(self.clock)
        self.journal.insert_delivery(
            NewDelivery(
                id=delivery_id,
                account_id=self.account.id,
                received_at=self.clock,
                archive_key=f"{self.account.id}/x/{delivery_id}.json",
                size=1,
                content_type="application/json",
            )
        )
        self.journal.write_outcome(
            delivery_id,
            expected=ParseStatus.PENDING,
            status=ParseStatus.PARSED,
            uncovered=(),
            failure=None,
            points=list(points),
            records=records,
        )
        return delivery_id


def utc(local: str, offset: int | None = CET) -> str:
    """The port's UTC text of a time on the phone's clock (``2026-03-02 08:00``)."""
    zone = UTC if offset is None else timezone(timedelta(minutes=offset))
    return to_text(datetime.fromisoformat(local).replace(tzinfo=zone))


def pt(
    metric: str,
    local: str,
    qty: float | None,
    *,
    field: str = "qty",
    source: str = "Watch",
    offset: int | None = CET,
    unit: str = "count",
    end: str | None = None,
    text: str | None = None,
    extra: str | None = None,
) -> Point:
    stop = None if end is None else utc(end, offset)
    return Point(metric, field, source, utc(local, offset), offset, stop, qty, text, unit, extra)


def hr(local: str, low: float, avg: float, high: float, **kw: Any) -> list[Point]:
    return [
        pt("heart_rate", local, v, field=f, unit="count/min", **kw)
        for f, v in (("min", low), ("avg", avg), ("max", high))
    ]


@pytest.fixture
def account(journal: Journal) -> Account:
    return journal.add_account("alice", "hash-of-alice")


@pytest.fixture
def send(journal: Journal, account: Account) -> Deliveries:
    return Deliveries(journal, account)


@pytest.fixture
def read(journal: Journal, account: Account) -> Reads:
    return Reads(journal, account)


# --- catalog ----------------------------------------------------------------------------


def test_catalog_names_every_field_with_its_kind_sources_and_extent(
    send: Deliveries, read: Reads
) -> None:
    send.send(
        [
            pt("step_count", "2026-03-02 08:00", 100),
            pt("step_count", "2026-03-03 09:00", 50, source="Phone"),
            *hr("2026-03-02 10:00", 50, 60, 70),
        ]
    )
    catalog = {(i.metric, i.field): i for i in read.catalog()}
    assert sorted(catalog) == [
        ("heart_rate", "avg"), ("heart_rate", "max"), ("heart_rate", "min"),
        ("step_count", "qty"),
    ]  # fmt: skip
    steps = catalog[("step_count", "qty")]
    assert (steps.unit, steps.kind, steps.points) == ("count", Kind.CUMULATIVE, 2)
    assert steps.sources == ("Phone", "Watch")
    assert (steps.first, steps.last) == (utc("2026-03-02 08:00"), utc("2026-03-03 09:00"))
    assert catalog[("heart_rate", "avg")].kind is Kind.DISCRETE
    assert catalog[("heart_rate", "avg")].unit == "count/min"


def test_kinds_sum_amounts_and_summarise_readings() -> None:
    assert kind_of("step_count") is Kind.CUMULATIVE
    assert kind_of("dietary_energy") is Kind.CUMULATIVE
    assert kind_of("protein") is Kind.CUMULATIVE
    assert kind_of("heart_rate") is Kind.DISCRETE
    assert kind_of("weight_body_mass") is Kind.DISCRETE
    # physical effort is a rate (kcal/hr·kg): a day of it is an average, not a sum
    assert kind_of("physical_effort") is Kind.DISCRETE
    assert kind_of("no_such_metric") is Kind.DISCRETE
    assert all(kind_of(name) is Kind.CUMULATIVE for name in CUMULATIVE)


# --- series -----------------------------------------------------------------------------


@pytest.fixture
def steps_and_hr(send: Deliveries) -> None:
    send.send(
        [
            pt("step_count", "2026-03-02 00:30", 10),  # 23:30 UTC the day before
            pt("step_count", "2026-03-02 08:00", 100),
            # another source in the same minute, not at the same time: it counts too
            pt("step_count", "2026-03-02 08:00:30", 5, source="Phone"),
            pt("step_count", "2026-03-02 08:01", 20),
            pt("step_count", "2026-03-02 23:30", 40),  # 22:30 UTC, still the 2nd locally
            pt("step_count", "2026-03-09 12:00", 7),  # the next week (a Monday)
            pt("step_count", "2026-04-01 12:00", 1),  # the next month
            *hr("2026-03-02 09:00", 50, 60, 90),
            *hr("2026-03-02 21:00", 40, 70, 80),
            *hr("2026-03-03 09:00", 55, 65, 75),
        ]
    )


@pytest.mark.usefixtures("steps_and_hr")
def test_cumulative_series_sum_per_bucket_on_the_phones_clock(read: Reads) -> None:
    def values(resolution: Resolution) -> list[tuple[str, float | None, int]]:
        series = read.series("step_count", resolution=resolution)
        assert series.kind is Kind.CUMULATIVE and series.resolution is resolution
        assert (series.field, series.unit, series.truncated) == ("qty", "count", False)
        return [(s.t, s.value, s.count) for s in series.samples]

    assert values(Resolution.DAY) == [
        ("2026-03-02", 175.0, 5), ("2026-03-09", 7.0, 1), ("2026-04-01", 1.0, 1),
    ]  # fmt: skip
    assert values(Resolution.HOUR) == [
        ("2026-03-02T00:00", 10.0, 1), ("2026-03-02T08:00", 125.0, 3),
        ("2026-03-02T23:00", 40.0, 1), ("2026-03-09T12:00", 7.0, 1),
        ("2026-04-01T12:00", 1.0, 1),
    ]  # fmt: skip
    assert values(Resolution.MINUTE)[1:3] == [
        ("2026-03-02T08:00", 105.0, 2), ("2026-03-02T08:01", 20.0, 1),
    ]  # fmt: skip
    assert values(Resolution.WEEK) == [
        ("2026-03-02", 175.0, 5), ("2026-03-09", 7.0, 1), ("2026-03-30", 1.0, 1),
    ]  # fmt: skip
    assert values(Resolution.MONTH) == [("2026-03-01", 182.0, 6), ("2026-04-01", 1.0, 1)]


@pytest.mark.usefixtures("steps_and_hr")
def test_one_source_and_a_range(read: Reads) -> None:
    phone = read.series("step_count", resolution=Resolution.DAY, source="Phone")
    assert [(s.t, s.value) for s in phone.samples] == [("2026-03-02", 5.0)]
    march_2nd = read.series(
        "step_count",
        start=datetime(2026, 3, 2, 7, 0, tzinfo=UTC),
        end="2026-03-03",
        resolution=Resolution.DAY,
    )
    assert [(s.t, s.value) for s in march_2nd.samples] == [("2026-03-02", 165.0)]


@pytest.mark.usefixtures("steps_and_hr")
def test_discrete_series_give_min_average_and_max(read: Reads) -> None:
    """The average's band is the lowest Min and the highest Max the phone sent in each
    bucket (50/60/90 and 40/70/80 on one day), not the least and greatest average."""
    series = read.series("heart_rate", resolution=Resolution.DAY)
    assert (series.field, series.kind) == ("avg", Kind.DISCRETE)
    assert [(s.t, s.min, s.value, s.max, s.count) for s in series.samples] == [
        ("2026-03-02", 40.0, 65.0, 90.0, 2),
        ("2026-03-03", 55.0, 65.0, 75.0, 1),
    ]
    for resolution in (Resolution.RAW, Resolution.HOUR):  # each point its own Min and Max
        band = read.series("heart_rate", resolution=resolution)
        assert [(s.min, s.value, s.max) for s in band.samples] == [
            (50.0, 60.0, 90.0), (40.0, 70.0, 80.0), (55.0, 65.0, 75.0)
        ]  # fmt: skip
    assert [
        (s.min, s.max) for s in read.series("heart_rate", resolution=Resolution.MONTH).samples
    ] == [(40.0, 90.0)]
    highs = read.series("heart_rate", field="max", resolution=Resolution.DAY)
    assert [s.max for s in highs.samples] == [90.0, 75.0]
    assert highs.as_dict()["samples"][0] == {
        "t": "2026-03-02", "value": 85.0, "min": 80.0, "max": 90.0, "count": 2,
    }  # fmt: skip


@pytest.mark.usefixtures("steps_and_hr")
def test_raw_series_are_points_with_their_offset_and_source(read: Reads) -> None:
    series = read.series("step_count", resolution=Resolution.RAW)
    first = series.samples[0]
    assert (first.t, first.value, first.min, first.max, first.count, first.source) == (
        "2026-03-02T00:30:00+01:00", 10.0, 10.0, 10.0, 1, "Watch",
    )  # fmt: skip
    assert len(series.samples) == 7 and not series.truncated
    assert series.as_dict()["samples"][0]["source"] == "Watch"


@pytest.mark.usefixtures("steps_and_hr")
def test_a_series_at_its_limit_says_it_is_truncated(read: Reads) -> None:
    exact = read.series("step_count", resolution=Resolution.RAW, limit=7)
    assert len(exact.samples) == 7 and not exact.truncated
    cut = read.series("step_count", resolution=Resolution.RAW, limit=3)
    assert len(cut.samples) == 3 and cut.truncated
    assert [s.t[:16] for s in cut.samples] == [
        "2026-03-02T00:30", "2026-03-02T08:00", "2026-03-02T08:00",
    ]  # fmt: skip
    # buckets over the limit are not cut but refused, before the read (test_read_cost.py)
    with pytest.raises(TooHeavy, match=r"up to 7 buckets over this range, .*: use month"):
        read.series("step_count", resolution=Resolution.HOUR, limit=2)


def test_auto_resolution_is_the_finest_under_the_bucket_cap() -> None:
    t = datetime(2026, 1, 1, tzinfo=UTC)
    assert auto_resolution(t, t + timedelta(hours=30)) is Resolution.MINUTE
    assert auto_resolution(t, t + timedelta(days=30)) is Resolution.HOUR
    assert auto_resolution(t, t + timedelta(days=800)) is Resolution.DAY
    assert auto_resolution(t, t + timedelta(weeks=1500)) is Resolution.WEEK
    assert auto_resolution(t, t + timedelta(weeks=2500)) is Resolution.MONTH
    assert auto_resolution(None, t) is Resolution.DAY


@pytest.mark.usefixtures("steps_and_hr")
def test_a_series_picks_its_resolution_from_the_range(read: Reads) -> None:
    day = read.series("step_count", start="2026-03-02", end="2026-03-03")
    assert day.resolution is Resolution.MINUTE
    month = read.series(
        "step_count",
        start=datetime(2026, 3, 1, tzinfo=UTC),
        end=datetime(2026, 4, 1, tzinfo=UTC),
    )
    assert month.resolution is Resolution.HOUR
    # a prefix as export takes it, and no range at all
    assert read.series("step_count", start="2026-03", end="2027").resolution is Resolution.DAY
    assert read.series("step_count").resolution is Resolution.DAY
    # plot's and the MCP tools' rule: the part of the range with data (a month here)
    info = read.range_field("step_count", None)
    assert resolution_for(info) is Resolution.HOUR
    assert resolution_for(info, max_buckets=400) is Resolution.DAY  # a picture's fewer bars
    assert resolution_for(info, "2026-03-02", "2026-03-03") is Resolution.MINUTE


@pytest.mark.usefixtures("steps_and_hr")
def test_unknown_names_are_errors_that_suggest_the_nearest(read: Reads) -> None:
    with pytest.raises(UnknownName, match="did you mean step_count"):
        read.series("step_cont")
    with pytest.raises(UnknownName, match="known: heart_rate, step_count"):
        read.series("zzz")
    with pytest.raises(UnknownName, match=r"field of heart_rate.*did you mean avg"):
        read.series("heart_rate", field="avgg")
    with pytest.raises(UnknownName):
        read.coverage(metric="step_cont")


def test_the_field_with_more_points_stands_for_heart_rate(send: Deliveries, read: Reads) -> None:
    send.send(
        [
            *hr("2026-03-02 09:00", 50, 60, 90),
            *hr("2026-03-02 10:00", 50, 62, 90),
            pt("heart_rate", "2026-03-02 11:00", 64, source="Oura", unit="count/min"),
        ]
    )
    assert read.main_field("heart_rate").field == "avg"
    assert read.main_field("heart_rate", "qty").points == 1


@pytest.mark.usefixtures("steps_and_hr")
def test_daily_puts_several_metrics_side_by_side(read: Reads) -> None:
    rows = read.daily(["step_count", "heart_rate"], end="2026-03-05")
    assert rows == [
        {"day": "2026-03-02", "step_count": 175.0, "heart_rate": 65.0},
        {"day": "2026-03-03", "heart_rate": 65.0},
    ]


# --- sleep ------------------------------------------------------------------------------


def segment(local: str, end: str, stage: str, hours: float | None, **kw: Any) -> Point:
    return pt("sleep_analysis", local, hours, field="segment", end=end, text=stage, unit="hr", **kw)


def night(local: str, source: str = "Watch", **stages: float) -> list[Point]:
    extra = orjson.dumps(
        {"sleepStart": "2026-03-04 23:00:00 +0100", "sleepEnd": "2026-03-05 07:00:00 +0100"}
    ).decode()
    return [
        pt("sleep_analysis", local, v, field=k, source=source, unit="hr", extra=extra)
        for k, v in stages.items()
    ]


def test_sleep_segments_are_summed_per_stage_and_labelled_by_the_morning(
    send: Deliveries, read: Reads
) -> None:
    send.send(
        [
            segment("2026-03-02 23:00", "2026-03-03 01:00", "Core", 2.0),
            segment("2026-03-03 01:00", "2026-03-03 02:30", "Deep", 1.5),
            segment("2026-03-03 02:30", "2026-03-03 02:45", "Awake", 0.25),
            segment("2026-03-03 02:45", "2026-03-03 04:45", "REM", None),  # no qty: 2 h
            segment("2026-03-03 02:00", "2026-03-03 06:00", "Core", 4.0, source="Phone"),
            # a nap after noon belongs to the next night
            segment("2026-03-03 13:00", "2026-03-03 13:30", "Asleep", 0.5),
        ]
    )
    found = read.sleep_nights()
    assert [n.night for n in found] == ["2026-03-03", "2026-03-04"]
    first = found[0]
    assert first.source == "Watch"  # 5.5 h asleep against the phone's 4
    assert first.stages == {"awake": 0.25, "core": 2.0, "deep": 1.5, "rem": 2.0}
    assert first.asleep_h == pytest.approx(5.5)
    assert (first.start, first.end) == ("2026-03-02T23:00:00+01:00", "2026-03-03T04:45:00+01:00")
    assert found[1].stages == {"asleep": 0.5}
    assert read.sleep_nights(start="2026-03-03T06") == [found[1]]


@pytest.mark.parametrize("resolution", list(Resolution))
def test_a_field_stored_in_two_units_is_read_in_the_main_one_alone(
    send: Deliveries, read: Reads, resolution: Resolution
) -> None:
    """Glucose sent in mg/dL, then in mmol/L after the phone's preference changed: kept as
    sent (no conversion relates them), and a series never averages the two."""
    mg = [
        pt("blood_glucose", f"2026-03-02 0{h}:00", v, unit="mg/dL") for h, v in ((7, 100), (8, 140))
    ]
    send.send([*mg, pt("blood_glucose", "2026-03-02 19:00", 5.5, unit="mmol/L")])
    series = read.series("blood_glucose", resolution=resolution)
    assert series.unit == "mg/dL"  # the unit with more points
    assert sum(s.count for s in series.samples) == 2
    assert [s.value for s in series.samples] == (
        [100.0, 140.0] if resolution in (Resolution.RAW, Resolution.MINUTE, Resolution.HOUR)
        else [120.0]
    )  # fmt: skip
    assert read.daily(["blood_glucose"]) == [{"day": "2026-03-02", "blood_glucose": 120.0}]
    # a range that holds only the other unit's points reads them, in their unit
    evening = read.series("blood_glucose", start="2026-03-02T12", resolution=resolution)
    assert (evening.unit, [s.value for s in evening.samples]) == ("mmol/L", [5.5])


def test_a_range_holds_whole_nights_by_their_label(send: Deliveries, read: Reads) -> None:
    """A night that starts before the range, or runs past its end, is neither cut nor
    split: the range holds the nights whose label's midnight is in it, each whole."""
    send.send(
        [
            segment("2026-03-02 23:00", "2026-03-03 01:00", "Core", 2.0),  # night of 03-03
            segment("2026-03-03 01:00", "2026-03-03 03:00", "Deep", 2.0),
            segment("2026-03-03 03:00", "2026-03-03 07:00", "REM", 4.0),
            segment("2026-03-03 23:30", "2026-03-04 01:30", "Core", 2.0),  # night of 03-04
            segment("2026-03-04 01:30", "2026-03-04 06:30", "REM", 5.0),
        ]
    )
    clock = timezone(timedelta(hours=1))  # the phone's, as the MCP tool and the API ask
    whole = read.sleep_nights()
    assert [(n.night, n.asleep_h) for n in whole] == [("2026-03-03", 8.0), ("2026-03-04", 7.0)]
    day = [datetime(2026, 3, d, tzinfo=clock) for d in (3, 4, 5)]
    assert read.sleep_nights(start=day[0], end=day[1]) == [whole[0]]
    assert read.sleep_nights(start=day[1], end=day[2]) == [whole[1]]
    assert read.sleep_nights(start=day[0], end=day[2]) == whole
    assert read.sleep_nights(start=day[1]) == [whole[1]]
    assert read.sleep_nights(end=day[1]) == [whole[0]]
    assert read.sleep_nights(start=day[2]) == []


def test_aggregated_nights_keep_the_source_with_the_most_sleep(
    send: Deliveries, read: Reads
) -> None:
    send.send(
        night("2026-03-05 00:00", totalSleep=7.0, core=4.0, deep=1.0, rem=2.0, awake=0.5)
        + night("2026-03-05 00:00", source="Ring", totalSleep=6.0, asleep=6.0, inBed=7.0)
        # a source that sent only the total
        + night("2026-03-06 00:00", source="Ring", totalSleep=6.5)
    )
    first, second = read.sleep_nights()
    assert (first.night, first.source) == ("2026-03-05", "Watch")
    assert first.stages == {"awake": 0.5, "core": 4.0, "deep": 1.0, "rem": 2.0}
    assert (first.start, first.end) == ("2026-03-04T23:00:00+01:00", "2026-03-05T07:00:00+01:00")
    assert (second.night, second.source, second.asleep_h) == ("2026-03-06", "Ring", 6.5)


def test_a_night_sent_as_segments_and_aggregated_counts_once(send: Deliveries, read: Reads) -> None:
    send.send(
        [
            segment("2026-03-04 23:00", "2026-03-05 05:00", "Core", 6.0),
            *night("2026-03-05 00:00", totalSleep=6.0, core=6.0),
        ]
    )
    (only,) = read.sleep_nights()
    assert only.asleep_h == 6.0


# --- workouts and other records ---------------------------------------------------------


def fix(seq: int, lat: float, lon: float, alt: float | None) -> Item:
    t = utc(f"2026-03-07 08:{seq:02d}")
    return Item("route", seq, t, None, lat=lat, lon=lon, alt=alt)


RUN = Record(
    "workouts",
    "RUN-1",
    utc("2026-03-07 08:00"),
    utc("2026-03-07 08:30"),
    CET,
    "Outdoor Run",
    "Watch",
    orjson.dumps({"distance": {"qty": 0.2, "units": "km"}}).decode(),
    (
        fix(0, 0.0, 0.0, 10.0),
        fix(1, 0.001, 0.0, 15.0),
        fix(2, 0.001, 0.001, 12.0),
        fix(3, 0.0, 0.001, 20.0),
        Item("heartRateData", 0, utc("2026-03-07 08:01"), 120.0, unit="count/min"),
    ),
)
WALK = RUN._replace(
    identity="WALK-1", name="Walk", start=utc("2026-03-08 09:00"), end=None, items=()
)


def test_workouts_are_listed_without_series_and_read_one_with_its_route(
    send: Deliveries, read: Reads
) -> None:
    send.send(records=[RUN, WALK])
    listed = read.workouts()
    assert [(w.identity, w.name, w.start) for w in listed] == [
        ("RUN-1", "Outdoor Run", "2026-03-07T08:00:00+01:00"),
        ("WALK-1", "Walk", "2026-03-08T09:00:00+01:00"),
    ]
    assert listed[0].series == {} and listed[0].body["distance"]["units"] == "km"
    assert [w.identity for w in read.workouts(start="2026-03-08")] == ["WALK-1"]

    run = read.workout("RUN-1")
    assert run.end == "2026-03-07T08:30:00+01:00"
    assert [i.qty for i in run.series["heartRateData"]] == [120.0]
    assert len(run.route()) == 4
    summary = run.route_summary()
    side = 6_371_008.8 * math.radians(0.001)  # a thousandth of a degree at the equator
    assert summary.points == 4
    assert summary.distance_m == pytest.approx(3 * side, abs=0.2)
    assert summary.elevation_gain_m == 13.0  # +5, then -3, then +8
    assert summary.bbox == (0.0, 0.0, 0.001, 0.001)
    with pytest.raises(NotFound):
        read.workout("no-such-workout")


def test_route_summary_of_no_route() -> None:
    assert summarise_route([]) == reads.RouteSummary(0, 0.0, 0.0, None)
    lone = summarise_route([Item("route", 0, None, None, lat=1.0, lon=2.0)])
    assert (lone.points, lone.distance_m, lone.bbox) == (1, 0.0, (2.0, 1.0, 2.0, 1.0))


def test_records_of_another_section_are_plain_dicts(send: Deliveries, read: Reads) -> None:
    symptom = Record(
        "symptoms",
        "Headache|x",
        utc("2026-03-07 20:00"),
        None,
        CET,
        "Headache",
        "Phone",
        orjson.dumps({"severity": "Mild"}).decode(),
    )
    send.send(records=[symptom, RUN])
    (found,) = read.records("symptoms")
    assert found == {
        "section": "symptoms", "identity": "Headache|x", "name": "Headache",
        "start": "2026-03-07T20:00:00+01:00", "end": None, "source": "Phone",
        "source_name": "Phone", "body": {"severity": "Mild"},
        "fields": [{"field": "severity", "label": "Severity", "value": "Mild"}],
    }  # fmt: skip
    (run,) = read.records("workouts", with_items=True)
    assert run["series"]["route"][0] == {
        "t": "2026-03-07T08:00:00+01:00", "lat": 0.0, "lon": 0.0, "alt": 10.0,
    }  # fmt: skip
    assert read.records("workouts", start="2026-03-08") == []
    assert read.sections() == {"symptoms": 1, "workouts": 1}


# --- coverage ---------------------------------------------------------------------------


def days_of(points_per_day: dict[str, int], metric: str = "step_count") -> list[Point]:
    return [
        pt(metric, f"{day} {8 + i:02d}:00", 1.0)
        for day, n in points_per_day.items()
        for i in range(n)
    ]


def test_coverage_counts_days_finds_gaps_of_daily_metrics_only(
    send: Deliveries, read: Reads
) -> None:
    steps = {"2026-03-01": 2, "2026-03-02": 1, "2026-03-05": 1, "2026-03-06": 3, "2026-03-08": 1}
    weighings = {"2026-03-01": 1, "2026-03-08": 1, "2026-03-15": 1}
    send.send(days_of(steps) + days_of(weighings, "weight_body_mass"))
    steps_cov, weight_cov = read.coverage()
    assert steps_cov.metric == "step_count" and steps_cov.daily
    assert steps_cov.days == steps
    assert steps_cov.gaps == [
        Gap("2026-03-03", "2026-03-04", 2), Gap("2026-03-07", "2026-03-07", 1),
    ]  # fmt: skip
    assert steps_cov.late == {}
    assert weight_cov.metric == "weight_body_mass"
    assert not weight_cov.daily and weight_cov.gaps == []  # 3 days of 15: no gaps
    as_dict = steps_cov.as_dict()
    assert (as_dict["first_day"], as_dict["last_day"], as_dict["days_with_data"]) == (
        "2026-03-01", "2026-03-08", 5,
    )  # fmt: skip
    assert as_dict["gaps"][0] == {"first": "2026-03-03", "last": "2026-03-04", "days": 2}
    only = read.coverage(metric="weight_body_mass", start="2026-03-08")
    assert [(c.metric, c.days) for c in only] == [
        ("weight_body_mass", {"2026-03-08": 1, "2026-03-15": 1})
    ]


def test_late_points_are_those_older_than_what_an_earlier_delivery_brought(
    send: Deliveries, read: Reads
) -> None:
    send.send(days_of({"2026-03-01": 1, "2026-03-02": 1, "2026-03-03": 1}))
    # the next sync: the 4th, and two points of the 2nd that the watch synced late
    send.send(
        [
            *days_of({"2026-03-04": 1}),
            pt("step_count", "2026-03-02 15:00", 3),
            pt("step_count", "2026-03-02 16:00", 4),
        ]
    )
    # a re-send of the newest point is not late: nothing newer came before it
    send.send([pt("step_count", "2026-03-04 08:00", 1)])
    (cov,) = read.coverage()
    assert cov.late == {"2026-03-02": 2}
    assert cov.as_dict()["late_points"] == 2
    # an old point sent again (a manual export of that range, a window that re-sends
    # the last days) keeps the verdict of its first arrival: on time
    send.send([pt("step_count", "2026-03-01 08:00", 1)])
    (cov,) = read.coverage()
    assert cov.late == {"2026-03-02": 2}
    # one never seen before, that old, is late
    send.send([pt("step_count", "2026-03-01 09:00", 1)])
    (cov,) = read.coverage()
    assert cov.late == {"2026-03-01": 1, "2026-03-02": 2}


def test_a_late_point_in_a_window_that_resends_the_newest_point_is_late(
    send: Deliveries, read: Reads
) -> None:
    send.send(days_of({"2026-03-01": 1, "2026-03-03": 1}))  # brought up to the 3rd
    # the next window re-sends the 3rd and brings a point of the 2nd written since
    send.send(days_of({"2026-03-02": 1, "2026-03-03": 1}))
    (cov,) = read.coverage()
    assert cov.late == {"2026-03-02": 1}  # against what the first brought, not holds


@pytest.mark.parametrize(
    ("days", "gaps", "daily"),
    [
        ({}, [], False),
        (["2026-01-01"], [], True),
        (["2026-01-01", "2026-01-03"], [Gap("2026-01-02", "2026-01-02", 1)], True),  # 2 of 3
        (["2026-01-01", "2026-01-04"], [Gap("2026-01-02", "2026-01-03", 2)], True),  # 2 of 4
        (["2026-01-01", "2026-01-05"], [], False),  # 2 of 5: not daily
        (["2026-01-01", "2026-01-02", "2026-01-03"], [], True),
    ],
)
def test_the_gap_rule(days: list[str], gaps: list[Gap], daily: bool) -> None:
    assert find_gaps(dict.fromkeys(days, 1)) == (gaps, daily)


# --- status -----------------------------------------------------------------------------


def test_status_and_deliveries_are_the_accounts_own(
    journal: Journal, send: Deliveries, read: Reads
) -> None:
    mine = send.send([pt("step_count", "2026-03-02 08:00", 1)])
    other = Deliveries(journal, journal.add_account("bob", "hash-of-bob"))
    theirs = other.send([pt("step_count", "2026-03-02 08:00", 1)])
    assert read.status().points == 1
    assert [d.id for d in read.deliveries()] == [mine]
    assert read.delivery(mine).status is ParseStatus.PARSED
    with pytest.raises(NotFound):
        read.delivery(theirs)


def test_local_text_reads_utc_on_the_phones_clock() -> None:
    assert local_text("2026-03-01T23:30:00.000000Z", 90) == "2026-03-02T01:00:00+01:30"
    assert local_text("2026-03-01T23:30:00.000000Z", None) == "2026-03-01T23:30:00+00:00"
    assert local_text(None, 60) is None


# --- the same numbers as export ---------------------------------------------------------


def realistic_body() -> dict[str, object]:
    """Nine days around the start of summer time in Berlin (29 March 2026, +0100 -> +0200)
    and a flight to New York (-0400): steps every 10 minutes, heart rate every 20."""
    t = datetime(2026, 3, 25, tzinfo=UTC)
    steps, beats = [], []
    i = 0
    while t < datetime(2026, 4, 3, tzinfo=UTC):
        offset = 60 if t < datetime(2026, 3, 29, 1, tzinfo=UTC) else 120
        if t >= datetime(2026, 4, 1, 14, tzinfo=UTC):
            offset = -240
        local = t.astimezone(timezone(timedelta(minutes=offset)))
        when = local.strftime("%Y-%m-%d %H:%M:%S %z")
        if i % 7 != 3:  # some minutes without steps
            steps.append({"date": when, "qty": (i * 37) % 113 + 0.5, "source": "Watch"})
        if i % 2 == 0:
            low = 48 + (i * 11) % 30
            beats.append({"date": when, "Min": low, "Avg": low + 9.25, "Max": low + 31})
        t += timedelta(minutes=10)
        i += 1
    return metrics_body(("step_count", "count", steps), ("heart_rate", "count/min", beats))


def fold_all(phone: Phone, journal: Journal, archive: Any) -> None:
    report = FoldPass(journal, Player(journal, archive)).pass_once()
    assert report.tally.classes == {"parsed": report.selected}


def by_local_day(journal: Journal, account: Account, metric: str, field: str) -> dict[str, Any]:
    """Per local day (start + utc_offset): count, sum, min, mean, max, from export."""
    values: dict[str, list[float]] = defaultdict(list)
    for stored in journal.export_points(account_id=account.id, metric=metric, field=field):
        p = stored.point
        start = datetime.fromisoformat(p.start) + timedelta(minutes=p.utc_offset or 0)
        assert p.qty is not None
        values[start.date().isoformat()].append(p.qty)
    return {
        day: (len(v), sum(v), min(v), sum(v) / len(v), max(v)) for day, v in sorted(values.items())
    }


def test_day_buckets_give_the_same_numbers_as_export(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    phone.send(realistic_body())
    phone.send((FIXTURES / "metrics_heart_rate.json").read_bytes())
    phone.send((SAMPLES / "metrics_step-count_minute-agg_2021_ivailop7-sample.json").read_bytes())
    fold_all(phone, journal, archive)
    read = Reads(journal, phone.account)
    checked = 0
    # an average's band is its day's lowest Min and highest Max, where the phone sent them
    lows = by_local_day(journal, phone.account, "heart_rate", "min")
    highs = by_local_day(journal, phone.account, "heart_rate", "max")
    for metric, field in (("step_count", "qty"), ("heart_rate", "avg"), ("heart_rate", "max")):
        expected = by_local_day(journal, phone.account, metric, field)
        series = read.series(metric, field=field, resolution=Resolution.DAY)
        got = {s.t: s for s in series.samples}
        assert sorted(got) == sorted(expected)
        for day, (count, total, low, mean, high) in expected.items():
            sample = got[day]
            assert sample.count == count
            if field == "avg":
                low = min(low, lows[day][2]) if day in lows else low
                high = max(high, highs[day][4]) if day in highs else high
            assert (sample.min, sample.max) == (low, high)
            value = total if series.kind is Kind.CUMULATIVE else mean
            assert sample.value == pytest.approx(value, rel=1e-12)
            checked += 1
    assert checked > 25
    # the days of coverage are the days export has, with the same number of rows
    coverage = {c.metric: c for c in read.coverage()}
    assert coverage["step_count"].days == {
        day: n for day, (n, *_) in by_local_day(journal, phone.account, "step_count", "qty").items()
    }
    # 2021-03-14 (the sample) and 2026-03-25..2026-04-02: two stretches of data, the five
    # years between them a break, not a gap; the recent one is daily
    assert coverage["step_count"].daily and coverage["step_count"].gaps == []
    # the summer-time change: 23 hours in Berlin that Sunday, so 23 hourly buckets
    sunday = read.series(
        "step_count", start="2026-03-28T23", end="2026-03-29T22", resolution=Resolution.HOUR
    )
    assert len({s.t[:10] for s in sunday.samples}) == 1 and len(sunday.samples) == 23
    assert date.fromisoformat(sunday.samples[0].t[:10]) == date(2026, 3, 29)


def test_docs_list_every_cumulative_metric_and_the_gap_rule() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "dashboard.md").read_text()
    kinds = text.split("## Metric kinds", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z0-9_]+)`", kinds))
    for name in CUMULATIVE:
        bare = name.removeprefix("dietary_")
        assert name in named or bare in named, name
    coverage = text.split("## Data coverage", 1)[1]
    assert f"`healthlog.reads.DAILY_SHARE` = {reads.DAILY_SHARE}" in coverage


def test_a_day_holds_a_sample_of_any_offset_the_parser_takes(send: Deliveries, read: Reads) -> None:
    """A day without an offset reaches as far as HAE's parser does (under a day), not
    only the 14 hours offsets in use reach: a +20:00 or -20:00 sample is on its own day."""
    send.send(
        [
            pt("step_count", "2026-03-02 00:30", 1, offset=20 * 60),  # 04:30 UTC on the 1st
            pt("step_count", "2026-03-02 23:30", 2, offset=-20 * 60),  # 19:30 UTC on the 3rd
            pt("step_count", "2026-03-03 00:30", 4, offset=20 * 60),  # another day
        ]
    )
    day = read.series(
        "step_count",
        start=datetime(2026, 3, 2),
        end=datetime(2026, 3, 3),
        resolution=Resolution.RAW,
    )
    assert sorted(s.value or 0 for s in day.samples) == [1, 2]
    (row,) = read.daily(["step_count"], start=datetime(2026, 3, 2), end=datetime(2026, 3, 3))
    assert row == {"day": "2026-03-02", "step_count": 3}
