"""The reader's direct path for quantity samples gives exactly what HAE's builder gives.

``ExportReading`` builds a quantity sample's Points itself (the hot path of an export);
with ``read._DIRECT`` off it hands every sample to ``hae.metrics.points`` as an HAE
point, the reference. Both readings of the same export must be equal in everything a
reading gives: every batch's points and records, positions and bytes read, and the
counts of what was uncovered, unreadable and incomparable, whatever the batch size and
the resume position.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from healthlog.applehealth import ExportCut, read, read_export, types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from tests import export_gen

FIXTURE = Path(__file__).parent.parent / "fixtures" / "applehealth"


def reading_of(path: Path, *, direct: bool, **kw: int) -> tuple[Any, ...]:
    was = read._DIRECT
    read._DIRECT = direct
    try:
        batches = []
        with read_export(path, **kw) as reading:
            try:
                for batch in reading.batches():
                    batches.append((batch.points, batch.records, batch.position, batch.bytes_read))
                cut = None
            except ExportCut as exc:
                cut = str(exc)
            counts = (
                dict(reading.uncovered),
                dict(reading.unreadable),
                reading.incomparable,
                dict(reading.read),
            )
        return batches, counts, cut
    finally:
        read._DIRECT = was


def assert_same(path: Path, **kw: int) -> tuple[Any, ...]:
    direct = reading_of(path, direct=True, **kw)
    reference = reading_of(path, direct=False, **kw)
    assert direct == reference
    return direct


def write(tmp_path: Path, elements: list[str]) -> Path:
    path = tmp_path / "export.xml"
    path.write_bytes(export_gen.export_xml(elements))
    return path


@pytest.mark.parametrize(
    "kw", [{}, {"batch_points": 7}, {"batch_points": 100, "resume": 50}, {"batch_points": 1}]
)
def test_odd_quantities_of_every_type(tmp_path: Path, kw: dict[str, int]) -> None:
    elements = export_gen.odd_quantities(random.Random(3), 3000)
    elements.insert(10, export_gen.hrv_with_beats("2024-03-30 08:02:10 +0100"))
    batches, (uncovered, unreadable, incomparable, _), cut = assert_same(
        write(tmp_path, elements), **kw
    )
    assert cut is None
    # the mix holds each kind of trouble, so the equality above is about something
    assert any(key.startswith(types.QUANTITY_PREFIX) for key in unreadable)
    assert any(key.startswith("metrics.") for key in unreadable)
    assert incomparable > 0
    points = [p for b in batches for p in b[0]]
    assert len({p.metric for p in points}) > 50
    assert any(p.extra and "sent_qty" in p.extra for p in points)
    assert not uncovered


def test_the_fixture_and_its_malformed_dtd(tmp_path: Path) -> None:
    assert_same(FIXTURE)
    assert_same(FIXTURE / "export_malformed_dtd.xml", batch_points=3)


def test_a_cut_file(tmp_path: Path) -> None:
    whole = export_gen.export_xml(export_gen.odd_quantities(random.Random(5), 400))
    path = tmp_path / "export.xml"
    path.write_bytes(whole[: len(whole) * 2 // 3])
    assert assert_same(path, batch_points=50)[2] is not None


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32), batch=st.integers(1, 60))
def test_any_mix(tmp_path: Path, seed: int, batch: int) -> None:
    elements = export_gen.odd_quantities(random.Random(seed), 120)
    assert_same(write(tmp_path, elements), batch_points=batch)


def test_attribute_values_are_read_as_lxml_reads_them(tmp_path: Path) -> None:
    """Entities and character references in values, ``&`` above all (lxml's target
    interface gives it as ``&#38;`` when entities are not resolved: the reader undoes it)."""
    tricky = ["Ada &amp; Bob’s Watch", "&#38;#38; &amp;amp; &lt;x&gt; &#x41;", "&quot;q&apos;"]
    me = " ".join(f'k{i}="{v}"' for i, v in enumerate(tricky))
    elements = [
        export_gen.quantity(
            "StepCount", "3", "2024-03-30 08:00:00 +0100", source=source, metadata={"m": source}
        )
        for source in ("Ada & Bob’s Watch", "&#38; &amp; <x> A", "\"q'")
    ]
    path = tmp_path / "export.xml"
    path.write_bytes(export_gen.export_xml(elements).replace(b"<Me ", f"<Me {me} ".encode()))
    tree = etree.parse(str(path), etree.XMLParser(load_dtd=False, resolve_entities=False))
    (expected_me,) = (dict(e.attrib) for e in tree.getroot() if e.tag == "Me")
    sources = [e.get("sourceName") for e in tree.getroot() if e.tag == "Record"]
    with read_export(path) as reading:
        points = [p for batch in reading.batches() for p in batch.points]
    assert reading.me == expected_me
    assert expected_me["k0"] == "Ada & Bob’s Watch"
    assert (
        [p.source for p in points] == sources == ["Ada & Bob’s Watch", "&#38; &amp; <x> A", "\"q'"]
    )
    assert all(f'"m":{orjson.dumps(p.source).decode()}' in (p.extra or "") for p in points)
