"""The export's CSV writer against csv.writer itself: the same bytes for any rows.

``points_export.write_csv`` joins most rows itself (a third of an export's time went
to csv.writer: bench/bench_read.py); these tests hold every row it writes to what
``csv.writer`` writes for the row's ``values``, with quoting, None, the counted share,
converted values and rows it leaves to csv.writer among them.
"""

from __future__ import annotations

import csv
import io

from healthlog.journal.port import StoredPoint
from healthlog.model import Point
from healthlog.reads import points_export
from healthlog.reads.overlap import Candidate
from hypothesis import given, settings
from hypothesis import strategies as st

# texts with what CSV must quote (comma, quote, line breaks), spaces and non-ASCII
_TEXT = st.text(alphabet=st.sampled_from('ab ,"\r\n\u00e9\u2019;|'), max_size=6)
_NAME = st.one_of(st.sampled_from(["heart_rate", "step_count", "avg", "qty"]), _TEXT)
_TIME = st.one_of(
    st.sampled_from(["2026-01-02T07:00:00.000000Z", "2026-01-02T07:01:00.000000Z"]), _TEXT
)
_NUMBER = st.one_of(
    st.none(),
    st.floats(allow_nan=False),
    st.sampled_from([0.0, 72.5, 1e-05, 1e16, 3.0, -0.0]),
)
_EXTRA = st.one_of(
    st.none(),
    st.just('{"sent_qty":165.3,"sent_unit":"lb"}'),
    st.just('{"note":"a, b"}'),
    _TEXT,
)


@st.composite
def candidates(draw: st.DrawFn) -> Candidate[StoredPoint]:
    qty = draw(_NUMBER)
    point = Point(
        metric=draw(_NAME),
        field=draw(_NAME),
        source=draw(_NAME),
        start=draw(_TIME),
        utc_offset=draw(st.one_of(st.none(), st.integers(-720, 840))),
        end=draw(st.one_of(st.none(), _TIME)),
        qty=qty,
        text=draw(st.one_of(st.none(), _TEXT)),
        unit=draw(st.one_of(st.sampled_from(["count/min", "kg", ""]), _TEXT)),
        extra=draw(_EXTRA),
    )
    stored = StoredPoint(draw(_NAME), point, draw(st.sampled_from(["d-1", "d,2", 'd"3'])))
    # counted: all of it (the rule left it whole), a share, 0, or None (no value)
    share = draw(st.sampled_from([1.0, 0.5, 0.0]))
    counted = None if qty is None else (qty if share == 1.0 else qty * share)
    return Candidate(
        point.field, point.start, point.end, point.utc_offset, point.source, qty,
        stored.delivery_id, False, stored, counted,
    )  # fmt: skip


def by_csv_writer(points: list[Candidate[StoredPoint]]) -> str:
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(points_export.COLUMNS)
    for found in points:
        writer.writerow(points_export.values(found))
    return out.getvalue()


@settings(max_examples=3 * settings.default.max_examples, deadline=None)
@given(st.lists(candidates(), max_size=12))
def test_write_csv_writes_what_csv_writer_writes(points: list[Candidate[StoredPoint]]) -> None:
    out = io.StringIO(newline="")
    assert points_export.write(points, out, "csv") == len(points)
    assert out.getvalue() == by_csv_writer(points)


def test_a_plain_row_and_its_quoted_neighbours() -> None:
    """The joined path is taken (no text, no extra) and still quotes series names."""
    point = Point("heart_rate", "avg", 'Simon\'s "Watch", 2', "2026-01-02T07:00:00.000000Z",
                  60, None, 72.5, None, "count/min", None)  # fmt: skip
    stored = StoredPoint("acct", point, "layer")
    found = Candidate(
        "avg", point.start, None, 60, point.source, 72.5, "layer", False, stored, 72.5
    )
    out = io.StringIO(newline="")
    points_export.write([found, found], out, "csv")
    assert out.getvalue().splitlines()[1] == (
        'acct,heart_rate,avg,"Simon\'s ""Watch"", 2",2026-01-02T07:00:00.000000Z,60,,72.5,72.5,,'
        "count/min,,layer"
    )
    assert out.getvalue() == by_csv_writer([found, found])


def test_csv_field_quotes_as_csv_writer_does() -> None:
    for text in ["plain", "a,b", 'say "hi"', "two\nlines", "cr\r", "", " lead"]:
        out = io.StringIO(newline="")
        csv.writer(out).writerow([text, "x"])
        assert points_export.csv_field(text) + ",x\r\n" == out.getvalue()
