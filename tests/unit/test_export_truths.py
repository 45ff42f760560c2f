"""What an export holds is what is read: routes inline or named twice, humidity in either
form, samples only inside a correlation, and one XML policy wherever a DOCTYPE sits.

Each test here failed before the reader learned it (issue "One truth", item 5; "The read
side as hard as the write side", item 7).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from healthlog.applehealth import ExportCut, read_export, series
from healthlog.applehealth.files import _doctype_span
from healthlog.applehealth.read import _Target
from healthlog.model import Point, Record
from lxml import etree

from tests.unit.test_applehealth_mapping import WATCH, export_of, record
from tests.unit.test_applehealth_reading import everything

FIXTURE = Path(__file__).parent.parent / "fixtures" / "applehealth"
GPX = "route_2024-03-30_8.02am.gpx"
T0, T1 = "2024-03-30 08:02:10 +0100", "2024-03-30 08:32:31 +0100"
MARKER = "ENTITY-MARKER-7f3a"
HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'
ENTITY_DTD = f'<!DOCTYPE HealthData [\n<!ENTITY m "{MARKER}">\n]>\n'
ENTITY_BODY = (
    '<HealthData locale="en_GB">\n'
    ' <ExportDate value="2024-04-02 09:12:44 +0200"/>\n'
    f" {record('HKQuantityTypeIdentifierStepCount', 'count', '12', T0, T1, source='&m;')}\n"
    "</HealthData>\n"
)


def workout(inner: str) -> str:
    return (
        '<Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="30.35" '
        f'durationUnit="min" sourceName="{WATCH}" startDate="{T0}" endDate="{T1}">'
        f"{inner}</Workout>"
    )


def route_of(found: list[Record]) -> list[dict[str, object]]:
    (mine,) = found
    return [orjson.loads(item.extra or "{}") | {"t": item.t} for item in mine.items]


def with_gpx(tmp_path: Path) -> None:
    (tmp_path / "workout-routes").mkdir()
    shutil.copy(FIXTURE / "workout-routes" / GPX, tmp_path / "workout-routes" / GPX)


def read_all(path: Path) -> tuple[list[Point], list[Record], dict[str, int]]:
    points, found, reading = everything(path)
    return points, found, dict(reading.unreadable)


# --- routes -------------------------------------------------------------------------------


def test_an_inline_location_route_is_kept(tmp_path: Path) -> None:
    inline = (
        '<WorkoutRoute sourceName="Serendipity" sourceVersion="10.2.1">'
        f'<Location date="{T0}" latitude="52.5163" longitude="13.3777" altitude="34.5" '
        'horizontalAccuracy="7.2" verticalAccuracy="5.3" course="-1" speed="1.95"/>'
        '<Location date="2024-03-30 08:02:15 +0100" latitude="52.5164" longitude="13.3779" '
        'altitude="34.9" horizontalAccuracy="6.1" verticalAccuracy="4.8" course="88" '
        'speed="2.10"/>'
        "</WorkoutRoute>"
    )
    _, found = export_of(tmp_path, workout(inline))
    (mine,) = found
    fixes = [i for i in mine.items if i.series == "route"]
    assert [(i.t, i.lat, i.lon, i.alt) for i in fixes] == [
        ("2024-03-30T07:02:10.000000Z", 52.5163, 13.3777, 34.5),
        ("2024-03-30T07:02:15.000000Z", 52.5164, 13.3779, 34.9),
    ]
    assert orjson.loads(fixes[1].extra or "{}")["speed"] == 2.10


def test_a_route_file_named_twice_is_read_once(tmp_path: Path) -> None:
    with_gpx(tmp_path)
    ref = f'<FileReference path="/workout-routes/{GPX}"/>'
    twice = f"<WorkoutRoute>{ref}{ref}</WorkoutRoute><WorkoutRoute>{ref}</WorkoutRoute>"
    _, found = export_of(tmp_path, workout(twice))
    times = [i.t for i in found[0].items if i.series == "route"]
    assert len(times) == 3  # the file's three fixes, not nine
    assert times == sorted(times)


# --- humidity -----------------------------------------------------------------------------


@pytest.mark.parametrize("written", ["8100 %", "81 %"])
def test_humidity_is_a_percentage_from_either_form(tmp_path: Path, written: str) -> None:
    meta = f'<MetadataEntry key="HKWeatherHumidity" value="{written}"/>'
    _, (mine,) = export_of(tmp_path, workout(meta))
    assert orjson.loads(mine.body)["humidity"] == {"qty": 81.0, "units": "%"}


# --- correlations -------------------------------------------------------------------------

SYS, DIA = (
    "HKQuantityTypeIdentifierBloodPressureSystolic",
    "HKQuantityTypeIdentifierBloodPressureDiastolic",
)
T2 = "2024-03-30 09:00:00 +0100"


def pressure(repeated_at_top: bool) -> list[str]:
    children = [record(SYS, "mmHg", "121", T2, T2), record(DIA, "mmHg", "79", T2, T2)]
    correlation = (
        f'<Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="{WATCH}" '
        f'startDate="{T2}" endDate="{T2}">' + "".join(children) + "</Correlation>"
    )
    return [*children, correlation] if repeated_at_top else [correlation]


def pressure_values(points: list[Point]) -> list[tuple[str, float | None]]:
    return sorted((p.field, p.qty) for p in points if p.metric == "blood_pressure")


def test_blood_pressure_only_inside_its_correlation_is_read(tmp_path: Path) -> None:
    points, _ = export_of(tmp_path, *pressure(repeated_at_top=False))
    assert pressure_values(points) == [("diastolic", 79.0), ("systolic", 121.0)]


def test_blood_pressure_repeated_at_top_level_is_read_once(tmp_path: Path) -> None:
    points, _ = export_of(tmp_path, *pressure(repeated_at_top=True))
    assert pressure_values(points) == [("diastolic", 79.0), ("systolic", 121.0)]


def test_a_meals_nutrients_only_inside_its_correlation_are_read(tmp_path: Path) -> None:
    kcal = record("HKQuantityTypeIdentifierDietaryEnergyConsumed", "kcal", "310", T2, T2)
    meal = (
        f'<Correlation type="HKCorrelationTypeIdentifierFood" sourceName="{WATCH}" '
        f'startDate="{T2}" endDate="{T2}">{kcal}</Correlation>'
    )
    points, found = export_of(tmp_path, meal)
    assert [(p.metric, p.qty) for p in points] == [("dietary_energy", 310.0)]
    assert [r.section for r in found] == ["food"]
    points, _ = export_of(tmp_path, kcal, meal)
    assert [(p.metric, p.qty) for p in points] == [("dietary_energy", 310.0)]


# --- one XML policy -----------------------------------------------------------------------


def test_the_prolog_is_read_as_xml_defines_it() -> None:
    dtd = b'<!DOCTYPE HealthData [<!ATTLIST x y CDATA "]>">]>'
    assert _doctype_span(b"<?xml version='1.0'?>\n<!-- <!DOCTYPE fake> -->\n" + dtd + b"<a/>") == (
        47,
        47 + len(dtd),
    )
    assert _doctype_span(b"<?pi <!DOCTYPE fake> ?>" + dtd) == (23, 23 + len(dtd))
    assert _doctype_span(b"<HealthData><!DOCTYPE late>") is None
    assert _doctype_span(b"<!-- not closed yet") == (0, -1)
    assert _doctype_span(b"\n<!DOC") == (1, -1)


@pytest.mark.parametrize(
    "before",
    [
        "<!-- <!DOCTYPE HealthData [] > -->\n",  # a fake DOCTYPE inside a leading comment
        '<?app note="<!DOCTYPE x>"?>\n',  # ... inside a processing instruction
        "<!-- a comment -->\n<?pi ?>\n",
    ],
)
def test_no_entity_is_expanded_wherever_the_doctype_sits(tmp_path: Path, before: str) -> None:
    path = tmp_path / "export.xml"
    path.write_text(HEAD + before + ENTITY_DTD + ENTITY_BODY, encoding="utf-8")
    # the DOCTYPE is set aside, so its entity is undeclared: a file not well-formed there
    line = (HEAD + before + ENTITY_DTD).count("\n") + 3  # the Record's, counted in the file
    with pytest.raises(ExportCut, match=f"line {line}, column") as raised:
        read_all(path)
    assert MARKER not in str(raised.value)


def test_a_dtd_the_parser_meets_ends_the_reading(tmp_path: Path) -> None:
    # the export's parser target itself, fed a DTD that nothing set aside: the parse ends
    # as the declaration starts, before its entity is declared
    path = tmp_path / "export.xml"
    path.write_text(HEAD + ENTITY_BODY.replace("&m;", "x"), encoding="utf-8")
    with read_export(path) as reading:
        target = _Target(reading)
        parser = etree.XMLParser(target=target, **series.PARSER_OPTIONS)
        with pytest.raises(series.DoctypeRefused):
            parser.feed((HEAD + ENTITY_DTD + ENTITY_BODY).encode())
            parser.close()
        assert target.position == 0 and not target.pending.points
        assert reading.read == {}


def test_a_gpx_with_a_dtd_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "workout-routes").mkdir()
    gpx = (FIXTURE / "workout-routes" / GPX).read_text(encoding="utf-8")
    declared = gpx.replace(
        '<gpx version="1.1"', f'<!DOCTYPE gpx [<!ENTITY m "{MARKER}">]>\n<gpx version="1.1"', 1
    ).replace('creator="Apple Health Export"', 'creator="&m;"', 1)
    (tmp_path / "workout-routes" / GPX).write_text(declared, encoding="utf-8")
    path = tmp_path / "export.xml"
    path.write_text(
        HEAD
        + '<HealthData locale="en_GB">\n'
        + workout(f'<WorkoutRoute><FileReference path="/workout-routes/{GPX}"/></WorkoutRoute>')
        + "\n</HealthData>\n",
        encoding="utf-8",
    )
    _, found, unreadable = read_all(path)
    assert unreadable == {"WorkoutRoute": 1}
    assert not [i for i in found[0].items if i.series == "route"]
    assert MARKER not in repr(found)


def test_a_file_that_is_not_well_formed_names_its_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "export.xml"
    path.write_text(
        HEAD + '<HealthData locale="en_GB">\n'
        f" {record('HKQuantityTypeIdentifierStepCount', 'count', '12', T0, T1)}\n"
        '  <Record type="x" value="1"\n'
        "</HealthData>\n",
        encoding="utf-8",
    )
    with pytest.raises(ExportCut, match=r"at line 5, column \d+") as raised:
        read_all(path)
    assert WATCH not in str(raised.value)


def test_foods_logged_at_one_minute_stay_distinct_records(tmp_path: Path) -> None:
    def meal(name: str, kcal: str) -> str:
        return (
            f'<Correlation type="HKCorrelationTypeIdentifierFood" sourceName="{WATCH}" '
            f'startDate="{T2}" endDate="{T2}">'
            f'<MetadataEntry key="HKFoodType" value="{name}"/>'
            + record("HKQuantityTypeIdentifierDietaryEnergyConsumed", "kcal", kcal, T2, T2)
            + "</Correlation>"
        )

    _, found = export_of(tmp_path, meal("Apple", "52"), meal("Pear", "57"), meal("Apple", "95"))
    assert sorted(r.name or "" for r in found) == ["Apple", "Apple", "Pear"]
    assert len({r.identity for r in found}) == 3
    _, again = export_of(tmp_path, meal("Apple", "95"), meal("Apple", "52"), meal("Pear", "57"))
    assert {r.identity for r in again} == {r.identity for r in found}  # stable across exports
