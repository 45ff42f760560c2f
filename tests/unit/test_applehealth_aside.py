"""A reading in a process of its own gives what a reading in this one gives.

``healthlog.applehealth.aside.read_aside`` runs ``read_export`` in a child process and
sends the batches through a pipe: the batches (points, records, positions, bytes read),
the counts after each batch, and the errors must be the same as ``read_export``'s, for a
whole export, a resumed one, a cut one and what is not one. A child that dies ends the
reading with ``ReaderDied``.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from healthlog.applehealth import ExportCut, ExportUnreadable, read_export
from healthlog.applehealth.aside import AsideReading, read_aside
from healthlog.errors import ReaderDied

from tests import export_gen


def everything(reading: Any) -> tuple[Any, ...]:
    batches = []
    cut = None
    with reading:
        try:
            for batch in reading.batches():
                counts = (dict(reading.uncovered), dict(reading.unreadable), reading.incomparable)
                batches.append((batch, counts))
        except ExportCut as exc:
            cut = (str(exc), reading.bytes_read)
        return batches, cut, reading.xml_size


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    elements = export_gen.odd_quantities(random.Random(7), 1500) + export_gen.minutes(
        export_gen.T0, 300
    )
    folder = tmp_path_factory.mktemp("aside")
    return export_gen.fixture_zip(folder / "export.zip", *elements)


@pytest.mark.parametrize("kw", [{}, {"batch_points": 50}, {"batch_points": 50, "resume": 700}])
def test_the_same_batches_counts_and_positions(export: Path, kw: dict[str, int]) -> None:
    here = everything(read_export(export, **kw))
    aside = everything(read_aside(export, **kw))
    assert aside == here
    batches, cut, _ = here
    assert cut is None and len(batches) > (3 if kw else 0)
    assert any(counts[1] for _, counts in batches)  # unreadable elements, counted


def test_a_cut_file_is_cut_at_the_same_place(tmp_path: Path) -> None:
    whole = export_gen.export_xml(export_gen.minutes(export_gen.T0, 400))
    path = tmp_path / "export.xml"
    path.write_bytes(whole[: len(whole) // 2])
    here = everything(read_export(path, batch_points=100))
    aside = everything(read_aside(path, batch_points=100))
    assert aside == here and here[1] is not None


def test_what_is_not_an_export_is_refused_alike(tmp_path: Path) -> None:
    path = tmp_path / "export.zip"
    path.write_bytes(b"neither")
    with pytest.raises(ExportUnreadable, match="neither a zip nor an XML"):
        read_aside(path)


def test_a_reader_that_dies_ends_the_reading_with_reader_died(export: Path) -> None:
    reading = read_aside(export, batch_points=20)
    assert isinstance(reading, AsideReading)
    with reading, pytest.raises(ReaderDied):
        batches = reading.batches()
        next(batches)
        reading._process.kill()  # as an out-of-memory killer would
        for _ in batches:
            pass
