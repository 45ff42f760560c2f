"""Reading a Health export: its three forms, a malformed DTD, a cut file, batches and resume."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest
from healthlog.applehealth import ExportCut, ExportReading, ExportUnreadable, read_export
from healthlog.applehealth.files import WithoutDoctype, looks_like_export_xml, safe_member
from healthlog.model import Point, Record
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

FIXTURE = Path(__file__).parent.parent / "fixtures" / "applehealth"
OTHER_FILES = ("workout-routes", "electrocardiograms")


def everything(source: Path, **kw: int) -> tuple[list[Point], list[Record], ExportReading]:
    points: list[Point] = []
    found: list[Record] = []
    with read_export(source, **kw) as reading:
        for batch in reading.batches():
            points += batch.points
            found += batch.records
    return points, found, reading


def zipped(
    tmp_path: Path, xml_name: str = "export.xml", folder: str = "apple_health_export"
) -> Path:
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(FIXTURE / xml_name, f"{folder}/export.xml")
        archive.writestr(f"{folder}/export_cda.xml", "<ClinicalDocument/>")
        for sub in OTHER_FILES:
            for file in sorted((FIXTURE / sub).iterdir()):
                archive.write(file, f"{folder}/{sub}/{file.name}")
    return path


def test_the_zip_its_folder_and_a_bare_xml_give_the_same(tmp_path: Path) -> None:
    from_folder = everything(FIXTURE)
    from_zip = everything(zipped(tmp_path))
    assert from_folder[:2] == from_zip[:2]
    sections = {r.section for r in from_zip[1]}
    assert sections == {
        "workouts",
        "ecg",
        "heartbeatSeries",
        "symptoms",
        "cycleTracking",
        "heartRateNotifications",
        "food",
        "activitySummary",
    }
    # a bare export.xml elsewhere: no route, no ECG beside it, the rest the same
    bare = tmp_path / "bare" / "export.xml"
    bare.parent.mkdir()
    shutil.copy(FIXTURE / "export.xml", bare)
    points, found, reading = everything(bare)
    assert points == from_zip[0]
    assert not any(r.section == "ecg" for r in found)
    assert reading.unreadable == {"WorkoutRoute": 1}


def test_me_locale_and_uncovered_types_are_reported(tmp_path: Path) -> None:
    _, _, reading = everything(zipped(tmp_path))
    assert reading.locale == "en_GB"
    assert reading.export_date == "2024-04-02 09:12:44 +0200"
    assert reading.me["HKCharacteristicTypeIdentifierBiologicalSex"] == "HKBiologicalSexFemale"
    assert reading.uncovered == {
        "HKCategoryTypeIdentifierAudioExposureEvent": 2,
        "HKDataTypeSleepDurationGoal": 1,
        "Audiogram": 1,
    }
    assert reading.unreadable == {}


def test_a_malformed_dtd_is_read_like_a_good_one(tmp_path: Path) -> None:
    # the fixture really is malformed: libxml2 refuses it as it stands
    with pytest.raises(etree.XMLSyntaxError):
        etree.parse(str(FIXTURE / "export_malformed_dtd.xml"), etree.XMLParser(load_dtd=False))
    good = everything(zipped(tmp_path))
    (tmp_path / "bad").mkdir()
    bad = everything(zipped(tmp_path / "bad", "export_malformed_dtd.xml"))
    assert bad[:2] == good[:2]


def test_offsets_are_kept_per_point_across_dst() -> None:
    points, _, _ = everything(FIXTURE)
    beats = [
        p
        for p in points
        if p.metric == "heart_rate" and p.field == "avg" and "Polar" not in p.source
    ]
    # 01:59 CET then 03:00 CEST: one minute apart, each with its own offset
    assert [(p.start, p.utc_offset) for p in beats] == [
        ("2024-03-31T00:59:00.000000Z", 60),
        ("2024-03-31T01:00:00.000000Z", 120),
    ]


def test_duplicates_from_several_sources_are_kept_per_source() -> None:
    points, _, _ = everything(FIXTURE)
    steps = [
        p for p in points if p.metric == "step_count" and p.start == "2024-03-30T07:02:10.000000Z"
    ]
    assert sorted((p.source, p.qty) for p in steps) == [
        ("Ada’s Apple Watch", 998.0),
        ("Ada’s iPhone", 1021.0),
    ]
    keys = [(p.metric, p.start, p.field, p.source) for p in points]
    assert len(keys) == len(set(keys))


def test_batches_are_bounded_and_resume_where_they_left_off(tmp_path: Path) -> None:
    whole_points, whole_records, _ = everything(FIXTURE)
    with read_export(FIXTURE, batch_points=5) as reading:
        batches = list(reading.batches())
    assert len(batches) > 5
    # a batch holds at most its bound plus one element's points (an ECG is 1024 items)
    assert all(len(b.points) <= 5 + 3 for b in batches)
    assert [p for b in batches for p in b.points] == whole_points
    # records: in file order within a batch, its HRV beat series after the rest
    assert sorted(r for b in batches for r in b.records) == sorted(whole_records)
    positions = [b.position for b in batches]
    assert positions == sorted(positions)
    # resuming after the third batch gives exactly what came after it
    resumed_points, resumed_records, _ = everything(
        FIXTURE, batch_points=5, resume=batches[2].position
    )
    assert resumed_points == [p for b in batches[3:] for p in b.points]
    assert sorted(resumed_records) == sorted(r for b in batches[3:] for r in b.records)


def test_a_cut_file_yields_what_it_read_then_says_how_much(tmp_path: Path) -> None:
    whole = (FIXTURE / "export.xml").read_bytes()
    cut_at = whole.index(b'<Record type="HKQuantityTypeIdentifierBodyMass"') + 40
    path = tmp_path / "export.xml"
    path.write_bytes(whole[:cut_at])
    got: list[Point] = []
    with read_export(path) as reading, pytest.raises(ExportCut) as cut:
        for batch in reading.batches():
            got += batch.points
    assert {p.metric for p in got} >= {"heart_rate", "step_count", "walking_running_distance"}
    assert "weight_body_mass" not in {p.metric for p in got}
    assert f"of {cut_at} bytes" in str(cut.value)
    assert "Ada" not in str(cut.value)  # never a value or a source name


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"PK\x03\x04 not really a zip", "neither a zip nor an XML"),
        (b"hello", "neither a zip nor an XML"),
    ],
)
def test_what_is_not_an_export_is_named(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "export.zip"
    path.write_bytes(content)
    with pytest.raises(ExportUnreadable, match=message):
        read_export(path)


@pytest.mark.parametrize(
    ("head", "export"),
    [
        (b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE HealthData [\n<!ELEMENT', True),
        (b'\xef\xbb\xbf<!-- a comment -->\n<HealthData locale="en_US">\n<Record', True),
        (b"<HealthData>", True),
        (b'<?xml version="1.0"?>\n<!-- a <note> -->\n<?pi x?>\n<HealthData locale="en">', True),
        (b"<!-- <HealthData> in a comment -->\n<gpx>", False),
        (b"<!-- a comment that does not end", False),
        (b'<?xml version="1.0"?><gpx version="1.1"><trk>', False),
        (b"<!DOCTYPE html><html>", False),
        (b"<HealthDataX/>", False),
        (b"<foo/>", False),
        (b"hello", False),
    ],
)
def test_an_export_xml_is_told_by_its_doctype_or_root(
    tmp_path: Path, head: bytes, export: bool
) -> None:
    """Even cut short inside its DOCTYPE an export is one (the reader then says where it
    ends); XML of another kind is not."""
    path = tmp_path / "export.xml"
    path.write_bytes(head)
    assert looks_like_export_xml(path) is export


def test_a_zip_without_export_xml_is_named(tmp_path: Path) -> None:
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("apple_health_export/export_cda.xml", "<ClinicalDocument/>")
    with pytest.raises(ExportUnreadable, match=r"no export\.xml"):
        read_export(path)


def test_entities_never_expand_and_the_network_is_never_asked(tmp_path: Path) -> None:
    bomb = (
        b'<?xml version="1.0"?>\n<!DOCTYPE HealthData [\n<!ENTITY a "aaaaaaaaaa">\n'
        b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n'
        b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">\n'
        b'<!ENTITY ext SYSTEM "http://127.0.0.1:9/never">\n]>\n<HealthData locale="en_US">\n'
        b'<Record type="HKQuantityTypeIdentifierStepCount" sourceName="&c;" unit="count" '
        b'startDate="2024-03-30 08:00:00 +0100" endDate="2024-03-30 08:01:00 +0100" value="1"/>\n'
        b"</HealthData>\n"
    )
    path = tmp_path / "export.xml"
    path.write_bytes(bomb)
    # the DOCTYPE is cut out, so the entity is undeclared: the file stops there
    with read_export(path) as reading, pytest.raises(ExportCut):
        list(reading.batches())


def test_a_route_path_cannot_leave_the_export(tmp_path: Path) -> None:
    assert (
        safe_member("apple_health_export", "/workout-routes/r.gpx")
        == "apple_health_export/workout-routes/r.gpx"
    )
    assert safe_member("", "../../etc/passwd") is None
    assert safe_member("root", "/workout-routes/../../x.gpx") is None
    secret = tmp_path / "secret.gpx"
    shutil.copy(FIXTURE / "workout-routes" / "route_2024-03-30_8.02am.gpx", secret)
    export = tmp_path / "export"
    export.mkdir()
    (export / "export.xml").write_text(
        '<HealthData locale="en_US"><Workout workoutActivityType="HKWorkoutActivityTypeRunning" '
        'sourceName="W" startDate="2024-03-30 08:00:00 +0100" endDate="2024-03-30 08:30:00 +0100">'
        '<WorkoutRoute><FileReference path="/../secret.gpx"/></WorkoutRoute></Workout>'
        "</HealthData>",
        encoding="utf-8",
    )
    _, (workout,), reading = everything(export)
    assert workout.items == ()
    assert reading.unreadable == {"WorkoutRoute": 1}


def test_unreadable_values_are_counted_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "export.xml"
    rec = (
        '<Record type="HKQuantityTypeIdentifierStepCount" sourceName="P" unit="count" '
        'startDate="{s}" endDate="{s}" value="{v}"/>'
    )
    path.write_text(
        '<HealthData locale="en_US">'
        + rec.format(s="2024-03-30 08:00:00 +0100", v="12")
        + rec.format(s="2024-03-30 08:00:00 +0100", v="lots")
        + rec.format(s="yesterday", v="3")
        + rec.format(s="2024-03-30 08:00:00 +0100", v="nan")
        + "</HealthData>",
        encoding="utf-8",
    )
    points, _, reading = everything(path)
    assert [p.qty for p in points] == [12.0]
    assert reading.unreadable == {"HKQuantityTypeIdentifierStepCount": 3}


@given(
    chunk=st.integers(min_value=1, max_value=300),
    doctype=st.sampled_from(
        [
            "",
            "<!DOCTYPE HealthData>",
            "<!DOCTYPE HealthData [\n<!ATTLIST A b CDATA>\n<!-- ]> -->\n"
            "<!ATTLIST C d CDATA ']>'>\n]>",
        ]
    ),
)
def test_the_doctype_is_blanked_whatever_the_reads(chunk: int, doctype: str) -> None:
    body = '<HealthData locale="en_US"><ExportDate value="x"/></HealthData>\n'
    raw = ('<?xml version="1.0" encoding="UTF-8"?>\n' + doctype + "\n" + body).encode()

    class Trickle(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            return super().read(min(chunk, size if size and size > 0 else chunk))

    stream = WithoutDoctype(Trickle(raw))
    out = b"".join(iter(lambda: stream.read(chunk), b""))
    blanked = "".join("\n" if c == "\n" else " " for c in doctype)  # lines and columns kept
    assert out == ('<?xml version="1.0" encoding="UTF-8"?>\n' + blanked + "\n" + body).encode()
    assert stream.bytes_read == len(raw)
