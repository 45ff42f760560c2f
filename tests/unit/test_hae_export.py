"""``healthlog export --section``: every section's records, workouts with their routes."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from healthlog import cli

from tests.conftest import SAMPLES
from tests.unit.test_cli import env, phone_for, run

__all__ = ["env"]  # the fixture, imported for this module's tests

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hae"
ROUTE = "workouts_v1_walking_route-latlon_elevation_2021_irvinlim-test.json"


@pytest.fixture
def folded(env: Path, capsys: Any) -> Path:
    phone = phone_for(env)
    phone.send((SAMPLES / ROUTE).read_bytes())
    phone.send((FIXTURES / "workouts_v2_outdoor_run.json").read_bytes())
    for name in ("symptoms", "ecg", "medications", "state_of_mind", "cycle_tracking"):
        phone.send((FIXTURES / f"{name}.json").read_bytes())
    phone.send((FIXTURES / "heart_rate_notifications_observed.json").read_bytes())
    phone.send((FIXTURES / "metrics_hrv_heartbeat_series.json").read_bytes())
    phone.journal.close()
    assert run(capsys, "fold", "--json")["parsed"] == 9
    return env


def test_workouts_export_as_geojson_line_strings_of_lon_lat_alt(folded: Path, capsys: Any) -> None:
    collection = json.loads(run(capsys, "export", "--section", "workouts", "--format", "geojson"))
    walk, run_ = collection["features"]
    assert walk["geometry"] == {
        "type": "LineString",
        "coordinates": [[-77.0364, 38.8951, 8.0276222229003906]],
    }
    assert walk["properties"]["identity"] == "Walking|2021-12-24T00:02:43.000000Z"
    assert walk["properties"]["times"] == ["2021-12-24T00:04:45.000000Z"]
    assert len(run_["geometry"]["coordinates"]) == 2


def test_workouts_export_as_gpx_tracks(folded: Path, capsys: Any) -> None:
    out = run(capsys, "export", "--section", "workouts", "--format", "gpx")
    ns = {"g": "http://www.topografix.com/GPX/1/1"}
    root = ElementTree.fromstring(out)  # noqa: S314  (our own output, not untrusted)
    tracks = root.findall("g:trk", ns)
    assert [t.findtext("g:name", namespaces=ns) for t in tracks] == ["Walking", "Outdoor Run"]
    point = tracks[0].find("g:trkseg/g:trkpt", ns)
    assert point is not None and point.attrib == {"lat": "38.8951", "lon": "-77.0364"}
    assert point.findtext("g:time", namespaces=ns) == "2021-12-24T00:04:45.000000Z"


@pytest.mark.parametrize(
    ("section", "count"),
    [("workouts", 2), ("symptoms", 2), ("ecg", 1), ("medications", 2), ("stateOfMind", 2),
     ("cycleTracking", 2), ("heartRateNotifications", 1), ("heartbeatSeries", 1)],
)  # fmt: skip
def test_every_section_exports_as_json_lines_with_items_and_as_csv(
    folded: Path, capsys: Any, section: str, count: int
) -> None:
    lines = run(capsys, "export", "--section", section, "--format", "jsonl").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == count
    assert {r["section"] for r in records} == {section}
    table = list(csv.DictReader(io.StringIO(run(capsys, "export", "--section", section))))
    assert [r["identity"] for r in table] == [r["identity"] for r in records]
    assert [int(r["items"]) for r in table] == [len(r["items"]) for r in records]


def test_ecg_jsonl_carries_every_voltage(folded: Path, capsys: Any) -> None:
    (line,) = run(capsys, "export", "--section", "ecg", "--format", "jsonl").splitlines()
    ecg = json.loads(line)
    assert ecg["body"]["classification"] == "Sinusrhythmus"
    assert [i["qty"] for i in ecg["items"]] == [-12.5, 3.25, 140.0]


def test_route_formats_are_for_workouts_only(env: Path, capsys: Any) -> None:
    assert cli.main(["export", "--section", "ecg", "--format", "gpx"]) == 2
    assert "--section workouts" in capsys.readouterr().err


def test_account_set_tz_stores_a_valid_zone_and_refuses_others(env: Path, capsys: Any) -> None:
    phone_for(env).journal.close()
    run(capsys, "account", "set-tz", "alice", "Europe/Berlin")
    assert cli.main(["account", "set-tz", "alice", "Mars/Olympus"]) == 2
    from healthlog.journal.sqlite import SqliteJournal

    journal = SqliteJournal(str(env / "journal.db"))
    assert [a.time_zone for a in journal.accounts()] == ["Europe/Berlin"]
    journal.close()
