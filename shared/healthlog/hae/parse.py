"""A Health Auto Export body to Points and Records: pure, bytes in, ``ParseResult`` out.

Covered: every section docs/hae-format.md describes. ``metrics`` gives Points (and the HRV
beat-to-beat series, Records of section ``heartbeatSeries``); ``workouts`` and the event
sections give Records (see ``records``). A section this parser does not know, and every
part of a known one it cannot store under a stable key, is reported by name in
``ParseResult.uncovered`` and stays in the archive for a later parser. Uncovered keys are
names only, never content.

CSV deliveries (``multipart/form-data``) are read by ``hae.csv`` into the same shapes.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import orjson

from healthlog.errors import FoldDeadline, UnreadableBody
from healthlog.hae import metrics, sections, workouts
from healthlog.hae.records import CAPS, Caps, Found
from healthlog.model import Item, ParseResult, Point, Record, distinct_points

METRICS = "metrics"
# the sections that give Records, and what reads each
_RECORD_READERS: dict[str, Callable[[object, Found], None]] = {
    workouts.SPEC.section: workouts.read,
    **{name: functools.partial(sections.read, name) for name in sections.SPECS},
}
#: every section key this parser reads, besides ``metrics``: ``workouts`` and the event
#: sections of ``hae.sections``
RECORD_SECTIONS = tuple(_RECORD_READERS)
#: the covered sections, defined here once: every top-level key of a body this parser
#: reads (any other key is uncovered). docs/sections.md describes each, and the journal
#: migration that re-pends ``partial`` rows when sections became covered is checked
#: against this list (tests/unit/test_coverage_migration.py).
SECTIONS = (METRICS, *RECORD_SECTIONS)

# how many points between two looks at the clock: cheap enough to be invisible, often
# enough that a 150k-point body overshoots its deadline by a few milliseconds at most
_CLOCK_EVERY = 1024


def parse(
    body: bytes,
    *,
    deadline: float | None = None,
    content_type: str = "application/json",
    tz: str = "UTC",
    caps: Caps = CAPS,
) -> ParseResult:
    """The Points and Records of ``body`` and the keys of what this parser does not read.

    ``deadline`` is a ``time.monotonic()`` value: past it, ``FoldDeadline`` is raised with
    the uncovered keys found so far. Raises ``UnreadableBody`` when the body is not UTF-8
    JSON holding an object (or its ``data`` is not an object); the message never quotes
    the body. A ``multipart/form-data`` ``content_type`` (HAE's CSV export) is read by
    ``hae.csv``, its offset-less times in the IANA zone ``tz``; in JSON, ``tz`` is where
    a sleep night sent as a day alone, with no time of its own, starts. ``caps`` bound
    the Items the body's records expand into (``records.Caps``): a series cut there is
    an uncovered key, ``<section>.<series>:capped``.
    """
    if content_type.split(";", 1)[0].strip().lower() == "multipart/form-data":
        from healthlog.hae import csv

        found = csv.parse(body, content_type=content_type, tz=tz, deadline=deadline)
        return _distinct(without_nul(found) if b"\x00" in body else found)
    result = _parse_json(body, deadline, tz, caps)
    # JSON can only spell NUL as an escape: a body without one has none to replace
    return _distinct(without_nul(result) if b"\\u0000" in body else result)


def _distinct(result: ParseResult) -> ParseResult:
    """Every distinct sample keyed apart, exact repeats held once (``distinct_points``)."""
    points, repeated = distinct_points(result.points)
    return replace(result, points=points, repeated=repeated)


def _parse_json(body: bytes, deadline: float | None, tz: str, caps: Caps) -> ParseResult:
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise UnreadableBody("the body is not UTF-8 JSON") from None
    if deadline is not None and time.monotonic() > deadline:
        raise FoldDeadline()  # reading the JSON used up the time
    found = Found(deadline=deadline, tz=tz, caps=caps)
    uncovered = found.uncovered
    points: list[Point] = []
    for name, value in _sections(document):
        if name == METRICS:
            _collect(metrics.points(value, found), points, uncovered, deadline)
        elif (read := _RECORD_READERS.get(name)) is not None:
            read(value, found)
        elif not metrics.is_empty(value):
            uncovered.add(name)
    return ParseResult(
        points=points,
        uncovered=tuple(sorted(uncovered)),
        records=found.records,
        incomparable=found.incomparable,
    )


#: what NUL (U+0000) becomes in every text the showcase stores: PostgreSQL's text cannot
#: hold NUL at all, and one body must give one showcase on every backend
NUL_STAND_IN = "\ufffd"


def _clean_text(value: object) -> object:
    """A plain text with NUL replaced; a stored JSON text re-written without NUL."""
    if not isinstance(value, str):
        return value
    if "\\u0000" in value and value[:1] in ("{", "[", '"'):
        try:
            decoded = orjson.loads(value)
        except orjson.JSONDecodeError:
            pass  # not JSON after all: a plain text that spells the escape
        else:
            return orjson.dumps(_clean_json(decoded), option=orjson.OPT_SORT_KEYS).decode()
    return value.replace("\x00", NUL_STAND_IN)


def _clean_json(value: object) -> object:
    if isinstance(value, str):
        return value.replace("\x00", NUL_STAND_IN)
    if isinstance(value, list):
        return [_clean_json(v) for v in value]
    if isinstance(value, dict):
        return {_clean_json(k): _clean_json(v) for k, v in value.items()}
    return value


def without_nul(result: ParseResult) -> ParseResult:
    """The result with every NUL in its texts replaced by U+FFFD (docs/database.md, "NUL").

    Keys included (a source or a metric name), and inside the stored JSON texts (extra,
    body), so a key with NUL is the same key on SQLite and PostgreSQL.
    """

    def clean(row: tuple[object, ...]) -> list[object]:
        return [_clean_text(v) for v in row]

    points = [Point._make(clean(p)) for p in result.points]
    records = [
        Record._make([*clean(r[:-1]), tuple(Item._make(clean(i)) for i in r.items)])
        for r in result.records
    ]
    uncovered = tuple(sorted({str(_clean_text(k)) for k in result.uncovered}))
    return replace(result, points=points, records=records, uncovered=uncovered)


# {"data": {"metrics": [...], "workouts": [...]}}           the app's envelope
# {"data": {"metrics": [...]}, "workouts": []}              a stray key beside data
# {"symptoms": [], "metrics": [], "workouts": [...]}        the inner object alone
def _sections(document: object) -> Iterator[tuple[str, object]]:
    """(name, value) of every section, wherever the envelope put it."""
    if not isinstance(document, dict):
        raise UnreadableBody("the body is not a JSON object")
    if "data" not in document:
        yield from document.items()
        return
    inner = document["data"]
    if not isinstance(inner, dict):
        raise UnreadableBody("the body's data is not a JSON object")
    yield from inner.items()
    for name, value in document.items():
        if name != "data":
            yield name, value


def _collect(
    source: Iterator[Point], into: list[Point], uncovered: set[str], deadline: float | None
) -> None:
    if deadline is None:
        into.extend(source)
        return
    append, monotonic = into.append, time.monotonic
    for point in source:
        append(point)
        if not len(into) % _CLOCK_EVERY and monotonic() > deadline:
            # the keys so far: what a retry with more time would at least have to cover
            raise FoldDeadline(uncovered=tuple(sorted(uncovered)))
