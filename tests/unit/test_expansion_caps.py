"""What one delivery may expand into is capped: a record keeps its first Items up to the
cap, the delivery is partial with a key naming the series, and the readers of an
export's files stop building at the cap (issue "The read side as hard as the write
side", item 4). The caps are ``records.Caps``, given small here through the readers' and
the parser's own ``caps`` parameter; tests/integration/test_import.py meets the default
ones.
"""

from __future__ import annotations

import functools
import io
from pathlib import Path
from typing import Any

import orjson
import pytest
from healthlog.applehealth import read_export, series
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.hae import parse
from healthlog.hae.records import CAPS, Caps
from healthlog.journal.port import Journal
from healthlog.model import ParseStatus, Record, status_for

from tests import export_gen
from tests.conftest import Phone
from tests.unit.test_applehealth_mapping import WATCH

T0, T1 = "2024-03-30 08:02:10 +0100", "2024-03-30 08:32:31 +0100"
GPX_NAME = "route.gpx"
ROUTE_KEY, ECG_KEY = "workouts.route:capped", "ecg.voltage:capped"


def gpx(fixes: int) -> bytes:
    points = "".join(
        f'<trkpt lon="13.{i:06d}" lat="52.{i:06d}"><ele>34.1</ele>'
        f"<time>2024-03-30T07:{i // 60 % 60:02d}:{i % 60:02d}Z</time>"
        "<extensions><speed>2.9</speed></extensions></trkpt>"
        for i in range(fixes)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1">'
        f"<trk><trkseg>{points}</trkseg></trk></gpx>\n"
    ).encode()


def ecg_csv(voltages: int, *, header: str = "") -> bytes:
    lines = [
        "Name,Ada Example",
        "Recorded Date,2024-03-30 10:15:02 +0100",
        "Classification,Sinus Rhythm",
        "Sample Rate,512 hertz",
        header,
        "Unit,µV",
        "",
        *(f"{i * 0.5:.3f}" for i in range(voltages)),
    ]
    return ("\n".join(lines) + "\n").encode()


def workout(inner: str) -> str:
    return (
        '<Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="30.35" '
        f'durationUnit="min" sourceName="{WATCH}" startDate="{T0}" endDate="{T1}">'
        f"{inner}</Workout>"
    )


def named_route(name: str = GPX_NAME) -> str:
    return f'<WorkoutRoute><FileReference path="/workout-routes/{name}"/></WorkoutRoute>'


def location(i: int) -> str:
    return f'<Location date="{T0}" latitude="52.{i:04d}" longitude="13.{i:04d}" altitude="34"/>'


def folder(
    tmp_path: Path,
    *elements: str,
    routes: dict[str, bytes] | None = None,
    ecgs: dict[str, bytes] | None = None,
) -> Path:
    """An unzipped export: ``export.xml`` of ``elements``, its route and ECG files."""
    (tmp_path / "export.xml").write_bytes(export_gen.export_xml(elements))
    for sub, files in (("workout-routes", routes), ("electrocardiograms", ecgs)):
        if files:
            (tmp_path / sub).mkdir()
            for name, data in files.items():
                (tmp_path / sub / name).write_bytes(data)
    return tmp_path


def read_all(path: Path, **kw: Any) -> tuple[list[Record], dict[str, int], list[int]]:
    """The records, the uncovered counts, and each non-empty batch's points and Items."""
    found: list[Record] = []
    sizes: list[int] = []
    with read_export(path, **kw) as reading:
        for batch in reading.batches():
            found += batch.records
            size = len(batch.points) + sum(len(r.items) for r in batch.records)
            if size:
                sizes.append(size)
    assert not reading.unreadable
    return found, dict(reading.uncovered), sizes


def body_of(record: Record) -> dict[str, Any]:
    found: dict[str, Any] = orjson.loads(record.body)
    return found


def series_of(record: Record, name: str) -> list[Any]:
    return [item for item in record.items if item.series == name]


# --- the GPX reader -----------------------------------------------------------------------


def test_the_gpx_reader_builds_the_first_fixes_up_to_its_limit_and_counts_the_rest() -> None:
    whole = series.route(io.BytesIO(gpx(12)))
    cut = series.route(io.BytesIO(gpx(12)), limit=5)
    assert (len(whole.fixes), whole.sent) == (12, 12)
    assert cut.fixes == whole.fixes[:5]  # built no further than the limit
    assert cut.sent == 12  # the rest streamed and counted


def test_a_long_text_in_a_track_point_is_left_out_not_held(tmp_path: Path) -> None:
    split = "<!-- -->".join(["9" * 600] * 4)  # one text of 2 400 characters, in parts
    data = gpx(2).replace(b"<ele>34.1</ele>", f"<ele>{split}</ele>".encode(), 1)
    path = folder(tmp_path, workout(named_route()), routes={GPX_NAME: data})
    (mine,), _, _ = read_all(path)
    first, second = series_of(mine, "route")
    assert (first.lat, first.alt, first.extra) == (52.0, None, '{"speed":2.9}')
    assert second.alt == 34.1


# --- routes of an export ------------------------------------------------------------------


def test_a_route_file_over_the_cap_keeps_its_first_fixes_and_says_so(tmp_path: Path) -> None:
    path = folder(tmp_path, workout(named_route()), routes={GPX_NAME: gpx(12)})
    (whole,), uncovered, _ = read_all(path)
    assert uncovered == {}
    (mine,), uncovered, _ = read_all(path, caps=Caps(items=5))
    assert series_of(mine, "route") == series_of(whole, "route")[:5]
    assert uncovered == {ROUTE_KEY: 1}
    assert body_of(mine)["items_capped"] == {"route": 12}


def test_workouts_that_each_name_a_large_file_each_keep_the_cap_one_step_each(
    tmp_path: Path,
) -> None:
    starts = ("2024-03-30 08:02:10 +0100", "2024-03-31 08:02:10 +0100", "2024-04-01 08:02:10 +0100")
    workouts = [workout(named_route()).replace(T0, start) for start in starts]
    path = folder(tmp_path, *workouts, routes={GPX_NAME: gpx(40)})
    found, uncovered, sizes = read_all(path, caps=Caps(items=5), batch_points=3)
    assert [len(r.items) for r in found] == [5, 5, 5]
    assert uncovered == {ROUTE_KEY: 3}
    assert sizes == [5, 5, 5]  # each workout's Items close its step


def test_an_inline_route_and_a_file_share_the_workouts_cap(tmp_path: Path) -> None:
    inline = "".join(location(i) for i in range(3))
    route = named_route().replace("<WorkoutRoute>", f"<WorkoutRoute>{inline}")
    path = folder(tmp_path, workout(route), routes={GPX_NAME: gpx(12)})
    (mine,), uncovered, _ = read_all(path, caps=Caps(items=5))
    fixes = series_of(mine, "route")
    assert [f.lat for f in fixes] == [52.0, 52.0001, 52.0002, 52.0, 52.000001]
    assert uncovered == {ROUTE_KEY: 1}
    assert body_of(mine)["items_capped"] == {"route": 15}


def test_an_element_keeps_at_most_the_cap_of_children_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    inline = "".join(location(i) for i in range(8))
    path = folder(tmp_path, workout(f"<WorkoutRoute>{inline}</WorkoutRoute>"))
    (mine,), uncovered, _ = read_all(path, caps=Caps(items=5))
    # the parser's target built five Locations; the three after them were never built
    assert [f.lat for f in series_of(mine, "route")] == [52.0, 52.0001, 52.0002, 52.0003, 52.0004]
    assert uncovered == {"Workout:capped": 1}


def test_a_steps_size_counts_the_heartbeats_of_its_hrv_samples(tmp_path: Path) -> None:
    starts = ("2024-03-30 08:02:10 +0100", "2024-03-30 09:02:10 +0100", "2024-03-30 10:02:10 +0100")
    path = folder(tmp_path, *(export_gen.hrv_with_beats(s, beats=4) for s in starts))
    found, uncovered, sizes = read_all(path, batch_points=4)
    assert [len(r.items) for r in found] == [4, 4, 4] and uncovered == {}
    assert sizes == [5, 5, 5]  # one SDNN point and its four beats per step


# --- ECGs ---------------------------------------------------------------------------------


def test_the_ecg_reader_keeps_the_first_voltages_up_to_its_limit_and_counts_them_all() -> None:
    element = series.ecg(io.BytesIO(ecg_csv(20)), "e.csv", limit=5)
    voltages = element["voltageMeasurements"]
    assert isinstance(voltages, list)
    assert [v["voltage"] for v in voltages] == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert element["numberOfVoltageMeasurements"] == 20
    assert element["end"] == "2024-03-30T09:15:02.039062+00:00"  # 20 samples at 512 Hz


def test_an_ecg_over_the_cap_keeps_its_first_voltages_and_says_so(tmp_path: Path) -> None:
    path = folder(tmp_path, ecgs={"ecg_2024-03-30.csv": ecg_csv(20)})
    (mine,), uncovered, _ = read_all(path, caps=Caps(items=3, ecg=5))
    assert [i.qty for i in mine.items] == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert uncovered == {ECG_KEY: 1}
    assert body_of(mine)["items_capped"] == {"voltage": 20}
    assert body_of(mine)["numberOfVoltageMeasurements"] == 20


def test_an_ecg_line_too_long_to_be_a_header_or_a_voltage_is_skipped() -> None:
    element = series.ecg(io.BytesIO(ecg_csv(3, header="X" * 10_000 + ",y")), "e.csv")
    assert all(len(key) < 100 for key in element)
    assert element["numberOfVoltageMeasurements"] == 3
    assert element["classification"] == "Sinus Rhythm"


# --- a Health Auto Export body ------------------------------------------------------------


def hae_workout(n: int, ident: str = "W", **series_: int) -> dict[str, object]:
    """A v2 workout with a route of ``n`` fixes and other series of the given lengths."""
    element: dict[str, object] = {
        "id": ident,
        "name": "Outdoor Run",
        "start": T0,
        "end": T1,
        "route": [
            {"latitude": 52.0 + i / 1e4, "longitude": 13.0, "timestamp": T0} for i in range(n)
        ],
    }
    for name, count in series_.items():
        element[name] = [{"date": T0, "Avg": 120 + i, "units": "count/min"} for i in range(count)]
    return element


def hae_body(**sections: object) -> bytes:
    return orjson.dumps({"data": sections})


def test_a_bodys_route_over_the_cap_keeps_its_first_fixes_and_is_partial() -> None:
    body = hae_body(workouts=[hae_workout(12)])
    (whole,) = parse(body).records
    result = parse(body, caps=Caps(items=5))
    (mine,) = result.records
    assert mine.items == whole.items[:5]
    assert result.uncovered == (ROUTE_KEY,)
    assert status_for(failed=False, uncovered=result.uncovered) is ParseStatus.PARTIAL
    assert body_of(mine)["items_capped"] == {"route": 12}


def test_a_records_cap_holds_for_all_its_series_together() -> None:
    result = parse(hae_body(workouts=[hae_workout(4, heartRateData=4)]), caps=Caps(items=5))
    (mine,) = result.records
    assert (len(series_of(mine, "route")), len(series_of(mine, "heartRateData"))) == (4, 1)
    assert result.uncovered == ("workouts.heartRateData:capped",)


def test_a_bodys_records_share_the_bodys_cap() -> None:
    body = hae_body(workouts=[hae_workout(4, ident) for ident in ("A", "B", "C")])
    result = parse(body, caps=Caps(items=5, body=10))
    assert [len(r.items) for r in result.records] == [4, 4, 2]
    assert result.uncovered == (ROUTE_KEY,)


def test_a_bodys_ecg_has_its_own_cap() -> None:
    voltages = [{"date": 1711790102.0 + i / 512, "voltage": i, "units": "mcV"} for i in range(8)]
    reading = {"start": T0, "classification": "Sinus Rhythm", "voltageMeasurements": voltages}
    result = parse(hae_body(ecg=[reading]), caps=Caps(items=3, ecg=5))
    (mine,) = result.records
    assert [i.qty for i in mine.items] == [0, 1, 2, 3, 4]
    assert result.uncovered == (ECG_KEY,)


def test_a_bodys_heartbeats_over_the_cap_keep_the_sdnn_and_the_first_beats() -> None:
    beats = [{"date": 1717207960.0 + i, "timeSinceStart": float(i)} for i in range(7)]
    point = {"date": "2024-06-01 03:12:40 +0100", "qty": 41.2, "heartbeatSeries": beats}
    metrics = [{"name": "heart_rate_variability", "units": "ms", "data": [point]}]
    result = parse(hae_body(metrics=metrics), caps=Caps(items=5))
    assert [p.qty for p in result.points] == [41.2]
    (mine,) = result.records
    assert [i.qty for i in mine.items] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert result.uncovered == ("heartbeatSeries.heartbeat:capped",)


def route_items(journal: Journal) -> list[int]:
    return [
        len([i for i in r.record.items if i.series == "route"])
        for r in journal.export_records(section="workouts")
    ]


def test_a_delivery_over_the_cap_ends_partial_with_the_key_and_keeps_the_cap(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    delivery = phone.send(hae_body(workouts=[hae_workout(12)]))
    capped = functools.partial(parse, caps=Caps(items=5))
    FoldPass(journal, Player(journal, archive, parse=capped)).pass_once()
    stored = journal.get_delivery(delivery)
    assert stored is not None and stored.status is ParseStatus.PARTIAL
    assert stored.uncovered == (ROUTE_KEY,)
    assert route_items(journal) == [5]


@pytest.mark.slow
def test_the_folds_default_cap_holds_for_a_body(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    # the smallest route element there is, many of them: a body built to expand
    fixes = b",".join([b"{}"] * (CAPS.items + 1))
    body = b'{"data":{"workouts":[{"id":"W","name":"Run","start":"%s","route":[%s]}]}}' % (
        T0.encode(),
        fixes,
    )
    delivery = phone.send(body)
    FoldPass(journal, Player(journal, archive)).pass_once()
    stored = journal.get_delivery(delivery)
    assert stored is not None and stored.status is ParseStatus.PARTIAL
    assert stored.uncovered == (ROUTE_KEY,)
    assert route_items(journal) == [CAPS.items]
