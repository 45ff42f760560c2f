"""Points out of the showcase: CSV or JSON lines, one row per point.

``healthlog export`` (without ``--section``) writes these; ``records_export`` writes the
other sections' records. A row is the point as stored: times in UTC text
(``2026-01-02T07:00:00.000000Z``) with the phone's ``utc_offset`` in minutes beside
them, the value in the canonical unit, ``extra`` as the stored JSON text.

A value the fold converted to its metric's canonical unit (``extra`` keeps what was
sent: ``sent_qty``, ``sent_unit``) is stored rounded to the precision the conversion
justifies (``hae.units.justified``); one folded before that rule is written rounded the
same way, so 165.3 lb is written 74.979 kg, not 74.97881876100001.

``counted`` is what healthlog's own reads count of the point where sources overlap
(``healthlog.reads.overlap``: one origin per metric and day, and for cumulative metrics a
source priority): ``qty`` for most points, a share of it for a sample partly covered
by a source before it. Points that count nothing are left out unless every point is
asked for; they are then written with ``counted`` 0.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from typing import IO, Any

from healthlog.hae import units
from healthlog.journal.port import StoredPoint
from healthlog.reads.overlap import Candidate

FORMATS = ("csv", "jsonl")
COLUMNS = [
    "account_id", "metric", "field", "source", "start", "utc_offset", "end",
    "qty", "counted", "text", "unit", "extra", "delivery_id",
]  # fmt: skip


def _shown_qty(stored: StoredPoint) -> float | None:
    p = stored.point
    if p.qty is None or not p.extra or "sent_qty" not in p.extra:
        return p.qty
    try:
        sent = json.loads(p.extra)
        conv = units.conversion(p.metric, sent["sent_unit"])
        sent_qty = float(sent["sent_qty"])
    except (ValueError, KeyError, TypeError):
        return p.qty
    if conv is None or conv.identity:
        return p.qty
    return units.justified(p.qty, sent_qty, conv.factor)


def values(found: Candidate[StoredPoint]) -> list[Any]:
    """A point's row, its values in the order of ``COLUMNS``."""
    stored = found.item
    p = stored.point
    shown = _shown_qty(stored)
    counted = found.counted
    if counted is not None and counted == p.qty:
        counted = shown  # counted whole: written as qty is
    return [
        stored.account_id, p.metric, p.field, p.source, p.start, p.utc_offset, p.end,
        shown, counted, p.text, p.unit, p.extra, stored.delivery_id,
    ]  # fmt: skip


def row(found: Candidate[StoredPoint]) -> dict[str, Any]:
    return dict(zip(COLUMNS, values(found), strict=True))


def rows(points: Iterable[Candidate[StoredPoint]]) -> Iterator[dict[str, Any]]:
    return (row(p) for p in points)


#: what makes ``csv.writer`` (its default dialect, QUOTE_MINIMAL) quote a field: the
#: delimiter, the quote character, or a line break
_QUOTED = re.compile('[,"\r\n]')


def csv_field(text: str) -> str:
    """A text field as ``csv.writer``'s default dialect writes it."""
    if _QUOTED.search(text) is None:
        return text
    return '"' + text.replace('"', '""') + '"'


def _plain(text: str | None) -> bool:
    """True when ``text`` (a start or an end) is written as it is: None, or no comma,
    quote or line break in it (stored times never have one)."""
    return text is None or _QUOTED.search(text) is None


def write_csv(points: Iterable[Candidate[StoredPoint]], out: IO[str]) -> int:
    """``points`` as CSV with a header, exactly as ``csv.writer`` writes their ``values``.

    csv.writer's writerow took over a third of an export's time (bench/bench_read.py),
    quoting each of a row's thirteen fields anew. Here the fields a series repeats
    (account, metric, field, source; unit and layer) are quoted once per series and
    layer, and a row without text or extra fields is joined from them, its times and
    its numbers (``str``, as csv.writer writes numbers; None as an empty field). A row
    with text, extra, or a time that needs quoting goes through csv.writer itself.
    ``tests/unit/test_points_export.py`` holds the two to the same bytes.
    """
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    put = out.write
    heads: dict[tuple[str, str, str, str], str] = {}
    tails: dict[tuple[str, str], str] = {}
    count = 0
    for found in points:
        count += 1
        stored = found.item
        p = stored.point
        if p.text is not None or p.extra is not None or not (_plain(p.start) and _plain(p.end)):
            writer.writerow(values(found))
            continue
        series = (stored.account_id, p.metric, p.field, p.source)
        head = heads.get(series)
        if head is None:
            head = heads[series] = ",".join(map(csv_field, series))
        layer = (p.unit, stored.delivery_id)
        tail = tails.get(layer)
        if tail is None:
            # after counted: text (empty here), unit, extra (empty here), the layer, the end
            tail = tails[layer] = f",,{csv_field(p.unit)},,{csv_field(stored.delivery_id)}\r\n"
        # no extra: qty is shown as stored (``_shown_qty``)
        qty = "" if p.qty is None else str(p.qty)
        counted = found.counted
        if counted is None:
            shown = ""
        elif counted == p.qty:
            shown = qty  # counted whole: written as qty is
        else:
            shown = str(counted)
        offset = "" if p.utc_offset is None else str(p.utc_offset)
        end = "" if p.end is None else p.end
        put(f"{head},{p.start},{offset},{end},{qty},{shown}{tail}")
    return count


def write(points: Iterable[Candidate[StoredPoint]], out: IO[str], fmt: str) -> int:
    """Write ``points`` to ``out`` as ``fmt`` (csv with a header, or jsonl); the count."""
    count = 0
    if fmt == "csv":
        count = write_csv(points, out)
    elif fmt == "jsonl":
        for shown in rows(points):
            out.write(json.dumps(shown, ensure_ascii=False) + "\n")
            count += 1
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return count
