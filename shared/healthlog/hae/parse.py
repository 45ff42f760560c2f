"""A Health Auto Export body to Points: pure, bytes in, ``ParseResult`` out.

Coverage so far is the ``metrics`` section. Every other section that carries something
is reported by name in ``ParseResult.uncovered`` (and stays in the archive for a later
parser); so is every part of ``metrics`` this parser cannot read (see ``metrics``).
Uncovered keys are names only, never content.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import orjson

from healthlog.errors import FoldDeadline, UnreadableBody
from healthlog.hae import metrics
from healthlog.model import ParseResult, Point

# how many points between two looks at the clock: cheap enough to be invisible, often
# enough that a 150k-point body overshoots its deadline by a few milliseconds at most
_CLOCK_EVERY = 1024


def parse(body: bytes, *, deadline: float | None = None) -> ParseResult:
    """The Points of ``body`` and the keys of what it holds that this parser does not read.

    ``deadline`` is a ``time.monotonic()`` value: past it, ``FoldDeadline`` is raised with
    the uncovered keys found so far. Raises ``UnreadableBody`` when the body is not UTF-8
    JSON holding an object (or its ``data`` is not an object); the message never quotes
    the body.
    """
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise UnreadableBody("the body is not UTF-8 JSON") from None
    if deadline is not None and time.monotonic() > deadline:
        raise FoldDeadline()  # reading the JSON used up the time
    uncovered: set[str] = set()
    found: list[Point] = []
    for name, value in _sections(document):
        if name == "metrics":
            _collect(metrics.points(value, uncovered), found, uncovered, deadline)
        elif not metrics.is_empty(value):
            uncovered.add(name)
    return ParseResult(points=found, uncovered=tuple(sorted(uncovered)))


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
