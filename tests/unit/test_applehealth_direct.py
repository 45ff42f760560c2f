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

import pytest
from healthlog.applehealth import ExportCut, read, read_export, types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
