"""What every reader of export.xml's elements shares: the element, the batch, the counts.

``_Node`` is an element as the parser target (``read._Target``) gives it, ``_Pending`` the
batch being read, ``_Reader`` the state of one reading that the reader of each kind of
element counts into (``samples``, ``workouts``, ``read``) with the fields every sample
shares; the rest read an element's attributes (numbers, texts, metadata).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from healthlog.applehealth.files import Export
from healthlog.hae import dates, metrics
from healthlog.hae.records import Caps, Found
from healthlog.model import Point, Record

# the export's attributes of a sample kept in a point's extra, beside its metadata
_SAMPLE_EXTRAS = ("sourceVersion", "device", "creationDate")


@dataclass
class _Pending:
    """The Points of the batch being read, in file order, and what they were built with.

    Most elements become Points at once (``_Direct``); the rest are handed to HAE's own
    ``metrics.points`` one element at a time. ``found`` is the batch's one accumulator
    for both (keys of what could not be read, HRV beat series, incomparable values).
    ``size`` counts the batch's points and its records' Items.
    """

    found: Found
    points: list[Point] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    size: int = 0

    def add(self, metric: str, unit: str, point: dict[str, object], weight: int = 1) -> None:
        """One HAE metric point, built by HAE's parser (with its HRV beats, if any)."""
        section = [{"name": metric, "units": unit, "data": [point]}]
        made = self.found.records
        before = len(made)
        self.points.extend(metrics.points(section, self.found))
        self.size += weight + sum(len(r.items) for r in made[before:])


class _Node:
    """A top-level element of export.xml and its children, as the parser gave them.

    The few parts of lxml's element the reader asks for (``tag``, ``attrib``, ``get``,
    its children by iteration and ``len``, ``iter(tag)``): the reader gets them from
    lxml's target interface (``_Target``), which builds no tree, instead of an
    ``iterparse`` tree that is built and cleared element by element.
    """

    __slots__ = ("attrib", "children", "tag")

    def __init__(self, tag: str, attrib: dict[str, str]) -> None:
        self.tag = tag
        self.attrib = attrib
        self.children: list[_Node] = []

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.attrib.get(key, default)

    def add_child(self, tag: str, attrib: dict[str, str]) -> None:
        self.children.append(_Node(tag, attrib))

    def __len__(self) -> int:
        return len(self.children)

    def __iter__(self) -> Iterator[_Node]:
        return iter(self.children)

    def iter(self, tag: str) -> Iterator[_Node]:
        """This element and its descendants of ``tag``, in document order (as lxml's)."""
        if self.tag == tag:
            yield self
        for child in self.children:
            yield from child.iter(tag)


class _Reader:
    """The state of one reading that its element readers count into, and the code they
    share: ``ExportReading`` is this and a mixin per kind of element (``samples``,
    ``workouts``); its ``__init__`` sets these."""

    export: Export
    caps: Caps
    uncovered: Counter[str]
    unreadable: Counter[str]
    read: Counter[str]
    incomparable: int

    def _found(self) -> Found:
        """The accumulator of one element's record."""
        return Found(caps=self.caps)

    def _took(self, found: Found) -> None:
        """What one element's accumulator counted, into the reading's counts."""
        self.incomparable += found.incomparable
        for key in found.uncovered:
            self.uncovered[key] += 1

    def _sample(self, element: Any) -> tuple[dict[str, object], str, str]:
        """The fields every sample shares, as HAE names them, and its start/end UTC.

        Raises ValueError for a time that cannot be read or a name too long to keep.
        """
        start_raw, end_raw = element.get("startDate"), element.get("endDate")
        start_utc, _ = dates.instant(start_raw)
        end_utc = start_utc if end_raw is None else dates.instant(end_raw)[0]
        point: dict[str, object] = {
            "date": start_raw,
            "source": metrics.source(element.get("sourceName")),
        }
        if end_raw is not None:
            point["end"] = end_raw
        for key in _SAMPLE_EXTRAS:
            value = element.get(key)
            if value is not None:
                point[key] = value
        return point, start_utc, end_utc


# --- small readers --------------------------------------------------------------------


def _correlated_key(element: _Node) -> tuple[str | None, ...]:
    """What tells a correlation's sample from another: the same sample written at top level
    and inside its correlation has the same key."""
    get = element.attrib.get
    return (get("type"), get("sourceName"), get("startDate"), get("endDate"), get("value"))


def _finite(text: str | None) -> float:
    value = float(text) if text is not None else math.nan
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


def _finite_or_none(text: str | None) -> float | None:
    try:
        return _finite(text)
    except ValueError:
        return None


def _number_or_text(text: str | None) -> float | str | None:
    value = _finite_or_none(text)
    return value if value is not None else text


def _quantity_text(text: str) -> tuple[float | None, str | None]:
    """``56 degF`` -> (56.0, "degF"); ``96 %`` -> (96.0, "%")."""
    number, _, unit = text.strip().partition(" ")
    return _finite_or_none(number), (unit.strip() or None)


def _metadata(element: _Node) -> dict[str, str]:
    return {
        str(entry.attrib.get("key")): str(entry.attrib.get("value"))
        for entry in element.children
        if entry.tag == "MetadataEntry" and entry.attrib.get("key") is not None
    }


def _without_none(value: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in value.items() if v is not None}


def _seconds_between(start_utc: str, end_utc: str) -> float:
    begin = datetime.fromisoformat(start_utc[:-1])
    end = datetime.fromisoformat(end_utc[:-1])
    return max(0.0, (end - begin).total_seconds())
