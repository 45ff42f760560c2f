"""Real exports from the field: every distinct sample of each is kept, all the way.

The exports in tests/fixtures/applehealth/field/ were published in public repositories
(field/SOURCES.md: where each is from, its license, what it shows) and span iOS 9 to
iOS 16; tests/fixtures/applehealth/ios8/ is written by hand in iOS 8's spelling (no
public iOS 8 export has a license this project can take). For each, the samples are
counted from the file itself with lxml's tree (``expected``: every Record of a type the
reader maps, a correlation's sample where the export has no top-level copy), and that
count is what the reader gives, what ``healthlog import`` reports, what the journal
holds, what ``healthlog metrics`` lists and what ``healthlog export`` writes.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from healthlog.applehealth import types
from healthlog.applehealth.files import WithoutDoctype
from healthlog.journal.sqlite import SqliteJournal
from lxml import etree

from tests.unit.test_applehealth_reading import everything
from tests.unit.test_cli import env, phone_for, run  # noqa: F401 (env is a fixture)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "applehealth"
FIELD = FIXTURES / "field"
EXPORTS = [
    *sorted(p for p in FIELD.iterdir() if (p / "export.xml").is_file()),
    FIXTURES / "ios8",
]
#: what a file holds that the reader cannot read, as the reader counts it: said, not lost
UNREADABLE = {"ios14-opendroid-composite": {"WorkoutRoute": 2}}  # its GPX files unpublished
UNCOVERED = {"ios14-opendroid-composite": {"c": 1, "Audiogram": 1}}  # a typo'd type="c"
_THREE_FIELDS = {"heart_rate", "sexual_activity"}


def _metric(kind: str) -> str | None:
    return types.QUANTITIES.get(kind) or types.CATEGORY_METRICS.get(kind)


def _key(record: Any) -> tuple[str | None, ...]:
    get = record.get
    who = get("sourceName") or get("source")
    return (get("type"), who, get("startDate"), get("endDate"), get("value"))


def expected(export: Path) -> tuple[Counter[str], int]:
    """Points per metric and the workouts, counted from the file's tree."""
    with (export / "export.xml").open("rb") as raw:
        root = etree.parse(WithoutDoctype(raw), etree.XMLParser(resolve_entities=False)).getroot()
    counted: Counter[str] = Counter()
    top = [r for r in root if r.tag == "Record"]
    inner = [r for c in root if c.tag == "Correlation" for r in c if r.tag == "Record"]
    held = {_key(r) for r in top}
    for record in [*top, *(r for r in inner if _key(r) not in held)]:
        metric = _metric(record.get("type") or "")
        if metric is not None:
            counted[metric] += 3 if metric in _THREE_FIELDS else 1
    return counted, sum(1 for w in root if w.tag == "Workout")


@pytest.mark.parametrize("export", EXPORTS, ids=lambda p: p.name)
def test_the_reader_keeps_every_sample_of_a_real_export(export: Path) -> None:
    points, found, reading = everything(export)
    counted, workouts = expected(export)
    assert Counter(p.metric for p in points) == counted
    assert sum(1 for r in found if r.section == "workouts") == workouts
    assert dict(reading.unreadable) == UNREADABLE.get(export.name, {})
    assert dict(reading.uncovered) == UNCOVERED.get(export.name, {})


@pytest.mark.parametrize("export", EXPORTS, ids=lambda p: p.name)
def test_import_metrics_and_export_agree_with_the_file(
    env: Path,  # noqa: F811
    capsys: Any,
    export: Path,
) -> None:
    phone_for(env)
    counted, _ = expected(export)
    report = run(capsys, "import", str(export), "--json")
    assert report["points"] + report["repeated"] == sum(counted.values())
    journal = SqliteJournal(str(env / "journal.db"))
    held = journal.summary().points
    journal.close()
    listed = run(capsys, "metrics", "--json")
    in_metrics = sum(m["points"] for a in listed for m in a["metrics"])
    written = run(capsys, "export", "--every-point", "--format", "jsonl").splitlines()
    assert report["points"] == held == in_metrics == len(written)


def _workout(export: Path) -> dict[str, Any]:
    _, found, _ = everything(export)
    (workout,) = [r for r in found if r.section == "workouts"]
    return {
        "body": orjson.loads(workout.body),
        "route": [i for i in workout.items if i.series == "route"],
    }


def test_an_ios10_inline_route_and_an_ios13_route_file_are_both_read() -> None:
    inline = _workout(FIELD / "ios12-dogsheep-inline-route")
    assert [(i.lat, i.lon) for i in inline["route"]] == [(37.7777, -122.426)] * 2
    assert inline["body"]["humidity"] == {"qty": 96.0, "units": "%"}
    from_file = _workout(FIELD / "ios13-dogsheep-fileref")
    assert len(from_file["route"]) == 3


def test_humidity_in_hundredths_from_ios16_reads_as_a_percentage() -> None:
    shrake = _workout(FIELD / "ios16-shrake-v12")  # its DTD is the broken one of iOS 16
    assert shrake["body"]["humidity"] == {"qty": 57.0, "units": "%"}
    (gpx,) = (FIELD / "ios16-shrake-v12" / "workout-routes").iterdir()
    assert len(shrake["route"]) == gpx.read_text(encoding="utf-8").count("<trkpt ")


def test_blood_pressure_held_only_in_its_correlation_is_read() -> None:
    points, _, _ = everything(FIELD / "ios14-fujiwara-v11-bp")
    at = [
        (p.field, p.qty)
        for p in points
        if p.metric == "blood_pressure" and p.start == "2020-08-02T10:12:21.000000Z"
    ]
    assert sorted(at) == [("diastolic", 74.0), ("systolic", 125.0)]


def test_an_ios8_export_is_read_in_todays_terms() -> None:
    points, _, reading = everything(FIXTURES / "ios8")
    assert reading.export_date == "2015-06-07 08:15:00 +0100"
    by = {(p.metric, p.field, p.start): p for p in points}
    rate = [by[("heart_rate", f, "2015-06-01T15:19:00.000000Z")].qty for f in ("min", "avg", "max")]
    assert rate == pytest.approx([57.0, 63.0, 84.0])  # a day's statistics in count/s
    weight = by[("weight_body_mass", "qty", "2015-06-01T06:15:00.000000Z")]
    assert (weight.source, weight.qty) == ("Health", 64.2)
    assert json.loads(weight.extra or "{}")["metadata"] == {"HKWasUserEntered": "1"}
    sleep = sorted((p.start, p.text) for p in points if p.metric == "sleep_analysis")
    assert [text for _, text in sleep] == ["In Bed", "Asleep"]
