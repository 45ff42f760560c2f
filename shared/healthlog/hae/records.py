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


@dataclass
class Found:
    """What the sections of one body gave so far (the parser's one accumulator)."""

    uncovered: set[str] = field(default_factory=set)
    records: list[Record] = field(default_factory=list)
    incomparable: int = 0
    deadline: float | None = None
    #: the account's IANA zone, for a time the body sends without saying its clock
    tz: str = "UTC"
    #: the body's time texts, each read once (``dates.Instants``), for as long as this
    #: accumulator lives: one parse, or one batch of a caller that feeds points one by one
    instants: dates.Instants = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.instants = dates.Instants(self.tz)

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


def build(spec: Spec, element: dict[str, object], found: Found) -> Record:
    start, offset = when(element.get("start"))
    end, _ = when(element.get("end"))
    identity = spec.identity(element, start, end)
    body: dict[str, object] = {}
    all_items: list[Item] = []
    for key, value in element.items():
        if value is None:
            continue
        if key not in spec.not_series and is_series(value):
            series = spec.renames.get(key, key)
            qty_keys = spec.qty_keys.get(series, _DEFAULT_QTY)
            all_items.extend(items(series, value, qty_keys, found))  # type: ignore[arg-type]
        else:
            body[key] = value
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
