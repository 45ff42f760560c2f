"""Typed records that flow through the core: frozen, no bare status strings, no dicts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from operator import itemgetter
from typing import NamedTuple


class ParseStatus(StrEnum):
    """A delivery's status (docs/architecture.md, "Delivery statuses"). The fold writes it."""

    PENDING = "pending"
    PARSED = "parsed"
    PARTIAL = "partial"
    FAILED = "failed"


class OutcomeClass(StrEnum):
    """What one fold of one delivery came to; ``deferred`` leaves the row ``pending``."""

    PARSED = "parsed"
    PARTIAL = "partial"
    FAILED = "failed"
    DEFERRED = "deferred"

    @property
    def status(self) -> ParseStatus:
        return ParseStatus.PENDING if self is OutcomeClass.DEFERRED else ParseStatus(self.value)


def status_for(*, failed: bool, uncovered: tuple[str, ...]) -> ParseStatus:
    """The status derives from the uncovered keys and the failure: failed > partial > parsed."""
    if failed:
        return ParseStatus.FAILED
    return ParseStatus.PARTIAL if uncovered else ParseStatus.PARSED


@dataclass(frozen=True, slots=True)
class Account:
    id: str
    name: str
    created_at: datetime
    # IANA zone for times a body sends without an offset (CSV deliveries)
    time_zone: str = "UTC"
    # the units its figures are shown in: "metric" or "imperial" (healthlog.reads.units)
    unit_system: str = "metric"


@dataclass(frozen=True, slots=True)
class Cursor:
    """Position in the journal's total order; the zero cursor sorts before every row."""

    received_at: datetime
    id: str


@dataclass(frozen=True, slots=True)
class NewDelivery:
    """What ingest knows when it journals a delivery: no health data, only its envelope."""

    id: str
    account_id: str
    received_at: datetime
    archive_key: str
    size: int
    content_type: str
    # automation-* and session-id headers, truncated (docs/hae-format.md, "Headers")
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Delivery:
    id: str
    account_id: str
    received_at: datetime
    archive_key: str
    size: int
    content_type: str
    status: ParseStatus
    uncovered: tuple[str, ...]
    points: int
    attempts: int
    failure: str | None
    folded_at: datetime | None
    headers: tuple[tuple[str, str], ...] = ()
    #: a fold in steps under way: the body's units its committed steps folded (0: none)
    fold_position: int = 0
    #: that fold's own account of what it found so far (JSON text), kept with its outcome
    fold_state: str | None = None
    #: the records (workouts, ECGs, ...) it brought, beside its ``points``
    records: int = 0
    #: when ``healthlog retention`` removed its archived body (None: the body is kept)
    body_removed_at: datetime | None = None
    #: samples its body held more than once exactly (same metric, field, source, start,
    #: end, value and unit), kept once (``distinct_points``)
    repeated: int = 0

    @property
    def cursor(self) -> Cursor:
        return Cursor(self.received_at, self.id)


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a fold in steps (docs/architecture.md, "Folds in steps").

    The fold resumed after ``after`` of the body's units and this step reaches
    ``position``; ``points`` (and ``records``) count what every step of the fold wrote,
    this one included; ``state`` is the fold's own account of what it found so far (JSON text),
    committed with the step so that a fold resumed after it goes on with it.
    """

    after: int
    position: int
    points: int
    state: str
    records: int = 0
    #: exact repeats every step of the fold left out, this one included
    repeated: int = 0


class Point(NamedTuple):
    """One value of the showcase.

    Its key is (account, metric, field, source, start, seq); the account comes from the
    delivery. ``seq`` tells apart the distinct samples of one delivery that share the
    rest of the key (ten foods logged at one minute, an In Bed and an Asleep segment
    that start together): 0 for the first, as ``distinct_points`` numbers them.
    ``start`` is UTC, ISO 8601, fixed width with microseconds
    (``2021-12-24T00:04:00.000000Z``) so text order is time order; ``utc_offset`` keeps
    the offset the phone sent, in minutes (None when the body had none).

    A NamedTuple rather than a frozen dataclass: as immutable, and built twice as fast,
    which matters at a hundred thousand points per delivery.
    """

    metric: str
    field: str
    source: str
    start: str
    utc_offset: int | None
    end: str | None
    qty: float | None
    text: str | None
    unit: str
    # fields of the point the parser does not map to a column, as canonical JSON
    extra: str | None = None
    seq: int = 0


class Item(NamedTuple):
    """One element of a record's series: a route fix, a heart-rate sample, an ECG voltage.

    Its key is (record key, ``series``, ``seq``): ``seq`` is the position in the series as
    sent. ``t`` is UTC text like ``Point.start`` (None when the element had no readable
    time); what has no column goes to ``extra`` as canonical JSON, so nothing is dropped.
    """

    series: str
    seq: int
    t: str | None
    qty: float | None
    lat: float | None = None
    lon: float | None = None
    alt: float | None = None
    unit: str | None = None
    extra: str | None = None


class Record(NamedTuple):
    """One event of a section other than ``metrics``: a workout, a symptom, an ECG...

    Its key is (account, ``section``, ``identity``); see docs/sections.md for how each
    section's identity is made. ``body`` is canonical JSON of the record's own fields as
    sent (units and localized text included, nulls left out), minus its series, which are
    the ``items``.
    """

    section: str
    identity: str
    start: str | None
    end: str | None
    utc_offset: int | None
    name: str | None
    source: str | None
    body: str
    items: tuple[Item, ...] = ()


@dataclass(frozen=True, slots=True)
class ParseResult:
    points: list[Point]
    uncovered: tuple[str, ...]
    records: list[Record] = field(default_factory=list)
    # values kept in a unit that does not convert to their series' canonical unit
    incomparable: int = 0
    # samples the body held more than once exactly, kept once (``distinct_points``)
    repeated: int = 0


@dataclass(frozen=True, slots=True)
class Outcome:
    """The value one fold returns: exactly one class, plus what it found."""

    delivery_id: str
    klass: OutcomeClass
    uncovered: tuple[str, ...] = ()
    points: int = 0
    # why: the failure kind (``unreadable``, ``deadline``, ``crashed``, ...) or the
    # circumstance (``JournalBusy``, ``Cancelled``, ...); None when folded
    reason: str | None = None
    duration_s: float = 0.0
    records: int = 0
    incomparable: int = 0


@dataclass
class Tally:
    """Counts per outcome class and per reason, shared by the pass and by replay."""

    classes: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    points: int = 0
    records: int = 0
    incomparable: int = 0

    def add(self, outcome: Outcome) -> None:
        self.classes[outcome.klass.value] += 1
        if outcome.reason:
            self.reasons[outcome.reason] += 1
        self.points += outcome.points
        self.records += outcome.records
        self.incomparable += outcome.incomparable

    @property
    def total(self) -> int:
        return sum(self.classes.values())

    def as_dict(self) -> dict[str, object]:
        return {
            **{c.value: self.classes.get(c.value, 0) for c in OutcomeClass},
            "reasons": dict(sorted(self.reasons.items())),
            "points": self.points,
            "records": self.records,
            "incomparable": self.incomparable,
        }


#: a point's key less its ``seq``: (metric, field, source, start)
_SHARED_KEY = itemgetter(0, 1, 2, 3)
#: what tells two points of one shared key apart: (end, qty, text, unit, extra)
_CONTENT = itemgetter(5, 6, 7, 8, 9)


def _content_order(point: Point) -> tuple[object, ...]:
    """A total order of the contents of points that share a key (None before a value)."""
    end, qty, text, unit, extra = _CONTENT(point)
    return (end or "", qty is not None, qty or 0.0, text or "", unit, extra or "")


def distinct_points(points: Sequence[Point]) -> tuple[list[Point], int]:
    """The points of one delivery (or one step of it), each distinct sample keyed apart.

    Points that share (metric, field, source, start) are distinct samples when anything
    else differs (end, value, text, unit, extra fields): each gets its own ``seq``,
    0, 1, 2... in the order of their contents, so the same samples get the same keys in
    every delivery that sends them, and a later delivery re-sending the window replaces
    them (the layer rule, per key). A sample sent more than once exactly is kept once;
    the second value is how many were left out. Order is kept; a body without shared
    keys (the common case) comes back as it was, in one pass.
    """
    shared = list(map(_SHARED_KEY, points))
    if len(set(shared)) == len(shared):
        return list(points), 0
    groups: dict[tuple[str, str, str, str], list[int]] = {}
    for index, key in enumerate(shared):
        groups.setdefault(key, []).append(index)
    out: list[Point | None] = list(points)
    repeated = 0
    for indices in groups.values():
        if len(indices) == 1:
            continue
        seen: dict[tuple[object, ...], int] = {}
        for index in indices:
            content = _CONTENT(points[index])
            if content in seen:
                out[index] = None  # an exact repeat: held once
                repeated += 1
            else:
                seen[content] = index
        kept = sorted(seen.values(), key=lambda i: _content_order(points[i]))
        for seq, index in enumerate(kept):
            out[index] = points[index]._replace(seq=seq)
    return [p for p in out if p is not None], repeated
