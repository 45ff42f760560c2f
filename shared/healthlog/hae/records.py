"""What every section other than ``metrics`` shares: a list of events, each a ``Record``.

A section is a list of objects (docs/hae-format.md, "Workouts" and "Other sections").
Each object becomes one ``Record``: its identity made by the section's rule
(docs/sections.md), its own fields kept whole in ``body`` (canonical JSON, as sent:
localized text is never translated), and every field holding a list of objects (a route,
a heart-rate series, ECG voltages) read as a series of ``Item``s. Reading is tolerant: a
time or a number that cannot be read stays in the element's ``extra`` as sent instead of
failing the record. Only an object that gives no identity (no id and no readable start)
marks the section uncovered: it cannot be stored under a stable key, so it stays in the
archive and the key says so.

What a record may expand into is capped (``Caps``, docs/security.md, "Limits"): a record
keeps the first Items up to its cap, all its series together, and a series cut there
marks the body uncovered (``<section>.<series>:capped``) and says in the record's body
how many elements were sent (``items_capped``): the rest stays in the archive, never
silently left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import orjson

from healthlog.errors import FoldDeadline
from healthlog.hae import dates, units
from healthlog.hae.errors import NotUnderstood as NotUnderstood  # sections imports it here
from healthlog.model import Item, Record

_SORTED = orjson.OPT_SORT_KEYS
_TIME_KEYS = ("date", "timestamp", "start", "t")
_LAT, _LON, _ALT = ("lat", "latitude"), ("lon", "longitude"), ("altitude", "alt")


#: the mark of an uncovered key for a series cut at its cap: ``workouts.route:capped``
CAPPED = ":capped"
#: the body field of a record whose series were cut at the cap: series -> elements sent
CAPPED_FIELD = "items_capped"


@dataclass(frozen=True, slots=True)
class Caps:
    """What one delivery may expand into, in Items (docs/security.md, "Limits").

    Far above real use, so that only a body or an export built to expand meets them: the
    JSON of a body, a GPX file or an ECG CSV costs a few bytes per element, the Item it
    becomes a few hundred in memory and in a transaction.
    """

    #: Items one record keeps, all its series together (a workout's route and heart
    #: rate, an HRV reading's beats): a 10-hour ultramarathon's route at 1 Hz is 36 000
    items: int = 200_000
    #: Items an ECG keeps: a 30 s reading at 512 Hz is 15 360 voltages
    ecg: int = 100_000
    #: Items the records of one body keep together: a body at the default size limit
    #: (100 MiB) of the smallest real elements (ECG voltages, ~55 bytes) holds 1.9 million
    body: int = 2_000_000

    def per_record(self, section: str) -> int:
        return self.ecg if section == "ecg" else self.items


#: the caps every fold uses
CAPS = Caps()


def capped_key(section: str, series: str) -> str:
    """The uncovered key of a record's series cut at its cap."""
    return f"{section}.{series}{CAPPED}"


@dataclass
class Found:
    """What the sections of one body gave so far (the parser's one accumulator)."""

    uncovered: set[str] = field(default_factory=set)
    records: list[Record] = field(default_factory=list)
    incomparable: int = 0
    deadline: float | None = None
    #: the account's IANA zone, for a time the body sends without saying its clock
    tz: str = "UTC"
    caps: Caps = CAPS
    #: the body's time texts, each read once (``dates.Instants``), for as long as this
    #: accumulator lives: one parse, or one batch of a caller that feeds points one by one
    instants: dates.Instants = field(init=False, repr=False, compare=False)
    #: Items the records may still take (``caps.body``, less what they took)
    items_left: int = field(init=False)

    def __post_init__(self) -> None:
        self.instants = dates.Instants(self.tz)
        self.items_left = self.caps.body

    def room(self, section: str) -> int:
        """How many Items the next record of ``section`` may keep."""
        return max(0, min(self.caps.per_record(section), self.items_left))

    def check_clock(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise FoldDeadline(uncovered=tuple(sorted(self.uncovered)))


def canonical(value: object) -> str:
    try:
        return orjson.dumps(value, option=_SORTED).decode()
    except orjson.JSONEncodeError as exc:  # nesting deeper than orjson writes
        raise NotUnderstood("unwritable field") from exc


def number(value: object) -> float | None:
    kind = type(value)
    if kind is float:
        return value  # type: ignore[return-value]
    if kind is int:
        return float(value)  # type: ignore[arg-type]
    return None


def text(value: object) -> str | None:
    """A string as sent; any other non-null value as its canonical JSON."""
    if value is None or type(value) is str:
        return value
    return canonical(value)


def when(value: object) -> tuple[str | None, int | None]:
    """(UTC text, offset) of a time value, or (None, None) when it cannot be read."""
    if value is None:
        return None, None
    try:
        return dates.instant(value)
    except ValueError:
        return None, None


def is_series(value: object) -> bool:
    return type(value) is list and bool(value) and all(type(e) is dict for e in value)


# --- series ------------------------------------------------------------------------------


def items(
    series: str,
    elements: list[dict[str, object]],
    qty_keys: tuple[str, ...],
    found: Found,
    note: Mapping[str, object] | None = None,
) -> list[Item]:
    """The Items of one series; counts values in a unit foreign to the series' canonical one.

    ``note`` is added to every element's ``extra`` (e.g. where a series was found).
    """
    out: list[Item] = []
    for seq, element in enumerate(elements):
        rest = dict(element)
        t = None
        for key in _TIME_KEYS:
            if key in rest:
                raw = rest[key]
                if type(raw) is dict:
                    # {"start": ..., "end": ..., "interval": {...}}: timed by its start, kept
                    t, _ = when(raw.get("start"))
                else:
                    t, _ = when(raw)
                    if t is not None:
                        del rest[key]
                break
        qty = _take_number(rest, qty_keys)
        lat, lon, alt = _take_number(rest, _LAT), _take_number(rest, _LON), _take_number(rest, _ALT)
        unit: str | None = None
        for unit_key in ("units", "unit"):
            sent_unit = rest.get(unit_key)
            if type(sent_unit) is str:
                unit = sent_unit
                del rest[unit_key]
                break
        if unit is not None:
            conv = units.conversion(series, unit)
            if conv is None:
                found.incomparable += 1
            elif conv.unit != unit or not conv.identity:
                if qty is not None and not conv.identity:
                    rest["sent_qty"] = qty
                    qty = conv.apply(qty)
                for key in ("Min", "Max"):
                    value = number(rest.get(key))
                    if value is not None and not conv.identity:
                        rest[f"sent_{key}"] = value
                        rest[key] = conv.apply(value)
                rest["sent_unit"] = unit
                unit = conv.unit
        if note:
            rest.update(note)
        kept = {k: v for k, v in rest.items() if v is not None}
        extra = canonical(kept) if kept else None
        out.append(Item(series, seq, t, qty, lat, lon, alt, unit, extra))
    return out


def capped_items(
    section: str,
    series: str,
    elements: list[dict[str, object]],
    qty_keys: tuple[str, ...],
    found: Found,
    room: int,
    capped: dict[str, int],
    sent: int = 0,
) -> list[Item]:
    """The Items of one series of a record of ``section``: at most ``room``, the first.

    ``sent`` is how many elements the series had where the caller stopped building them
    at its cap (a GPX file, an ECG CSV), when more than ``elements``. A series cut short
    is counted in ``capped`` (series -> elements sent) and its key marked uncovered.
    """
    made = items(series, elements if len(elements) <= room else elements[:room], qty_keys, found)
    found.items_left -= len(made)
    total = max(len(elements), sent)
    if len(made) < total:
        capped[series] = total
        found.uncovered.add(capped_key(section, series))
    return made


def _take_number(rest: dict[str, object], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        if key in rest:
            value = number(rest[key])
            if value is not None:
                del rest[key]
                return value
    return None


# --- records -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """How one section's objects become Records."""

    section: str
    #: (object, start, end) -> identity; raises NotUnderstood when there is none
    identity: Callable[[dict[str, object], str | None, str | None], str]
    #: the key whose value is the record's ``name`` (text as sent)
    name_key: str | None = None
    #: key as sent -> series name, where the two differ
    renames: Mapping[str, str] = field(default_factory=dict)
    #: series name -> keys that hold the element's quantity, first present wins
    qty_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: lists of objects that are descriptions, not series (kept in the body)
    not_series: frozenset[str] = frozenset()


_DEFAULT_QTY = ("qty", "Avg")


def build(
    spec: Spec,
    element: dict[str, object],
    found: Found,
    *,
    sent: Mapping[str, int] | None = None,
) -> Record:
    """One object as a Record, its series as Items up to the record's cap (``Caps``).

    ``sent`` (series -> elements) is what a caller that stopped building a series at
    the cap counted of it (``applehealth.series``): the series is capped as if whole.
    """
    start, offset = when(element.get("start"))
    end, _ = when(element.get("end"))
    identity = spec.identity(element, start, end)
    body: dict[str, object] = {}
    all_items: list[Item] = []
    room = found.room(spec.section)
    capped: dict[str, int] = {}
    counted = dict(sent or {})
    for key, value in element.items():
        if value is None:
            continue
        if key not in spec.not_series and is_series(value):
            series = spec.renames.get(key, key)
            qty_keys = spec.qty_keys.get(series, _DEFAULT_QTY)
            made = capped_items(
                spec.section,
                series,
                value,  # type: ignore[arg-type]
                qty_keys,
                found,
                room - len(all_items),
                capped,
                counted.pop(series, 0),
            )
            all_items.extend(made)
        else:
            body[key] = value
    for series, total in counted.items():  # counted, but none of it could be kept
        if total:
            capped_items(spec.section, series, [], (), found, 0, capped, total)
    if capped:
        body[CAPPED_FIELD] = capped
    name = text(element.get(spec.name_key)) if spec.name_key else None
    return Record(
        spec.section,
        identity,
        start,
        end,
        offset,
        name,
        text(element.get("source")),
        canonical(body),
        tuple(all_items),
    )


def read(
    section: object,
    spec: Spec,
    found: Found,
    builder: Callable[[Spec, dict[str, object], Found], Record] = build,
) -> None:
    """Every object of one section as a Record; what cannot be stored marks the section."""
    if section is None or (type(section) in (list, dict, str) and not section):
        return
    if type(section) is not list:
        found.uncovered.add(spec.section)
        return
    for element in section:
        if type(element) is not dict:
            found.uncovered.add(spec.section)
            continue
        try:
            found.records.append(builder(spec, element, found))
        except NotUnderstood:
            found.uncovered.add(spec.section)
        found.check_clock()


def keyed(*parts: str | None) -> str:
    """An identity from the fields that identify an event; a missing time is no identity."""
    if parts[-1] is None:
        raise NotUnderstood("no readable start")
    return "|".join(p or "" for p in parts)


def field_text(element: dict[str, object], key: str) -> str | None:
    value = element.get(key)
    return value if type(value) is str else None


def given_id(element: dict[str, object]) -> str | None:
    value = element.get("id")
    return value if type(value) is str and value else None
