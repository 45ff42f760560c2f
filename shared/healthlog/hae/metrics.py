"""The ``metrics`` section: every value the phone sent, as Points (docs/hae-format.md, "Metrics").

The shape of a point is chosen by the metric's ``name``, never guessed from the point:
``heart_rate`` and an unknown name may both carry ``Min/Avg/Max``, but only
``blood_glucose`` turns ``mealTime`` into text. An unknown name is kept as its own
series when its points have the plain (``qty``) or ``Min/Avg/Max`` shape.

What cannot be read is recorded, never dropped silently: a point this module does not
understand marks its metric uncovered (``metrics.<name>``) while the metric's other
points are kept, and every field of a point without a column of its own goes to
``Point.extra`` as canonical JSON. A ``null`` field carries nothing and is not kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import itemgetter

import orjson

from healthlog.hae import dates, records, units
from healthlog.hae.errors import NotUnderstood
from healthlog.hae.records import Found
from healthlog.model import Point, Record

#: What one point may carry inline (docs/database.md, "Bounds"). A point is a row of the
#: showcase's points b-tree: a wide row there makes every later upsert of its metric
#: read its overflow pages, so a point beyond these is not understood (its metric an
#: uncovered key, the body kept in the archive) rather than stored. Characters.
MAX_NAME = 256  # a metric's name and unit: part of every point's key
MAX_SOURCE = 1024  # a source name, part of the key ("iPhone|Apple Watch|..." joins several)
MAX_INLINE = 16 * 1024  # a point's text and its extra fields (canonical JSON)

_ITEM_KEYS = frozenset({"name", "units", "data"})
_HEARTBEATS = "heartbeatSeries"
# Point(...) is a NamedTuple's Python-level __new__ around exactly this call: the hot
# paths build their Points with it directly (one Python frame less per Point)
_new = tuple.__new__
# how many points of a metric ``Values.many`` reads at once: small enough that the
# parser's deadline, checked between Points, is still checked every few milliseconds
_CHUNK = 512
# and the fewest: below this, its look at the whole chunk costs more than it saves (a
# caller that hands points over one at a time, as the Health app's reader does)
_MANY_AT_LEAST = 8


def is_empty(value: object) -> bool:
    """True for what carries nothing: null, ``[]``, ``{}`` and ``""``."""
    return value is None or (isinstance(value, list | dict | str) and not value)


# --- the section -------------------------------------------------------------------------


# "metrics": [{"name": "active_energy", "units": "kJ", "data": [
#     {"date": "2021-12-24 00:04:00 +0800", "qty": 0.76856774374845116}]},
#   {"data": [], "name": "basal_body_temperature", "units": "degC"}]
def points(section: object, found: Found) -> Iterator[Point]:
    """The Points of a ``metrics`` section.

    Adds what it cannot read to ``found.uncovered``, HRV beat-to-beat series to
    ``found.records``, and values in a foreign unit to ``found.incomparable``.
    """
    if is_empty(section):
        return
    if not isinstance(section, list):
        found.uncovered.add("metrics")
        return
    # the section's metrics share their timestamps: each text is read once
    instants = found.instants
    for item in section:
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(name, str) or not name:
            found.uncovered.add("metrics")
            continue
        yield from _metric(item, name, found, instants)


# {"name": "step_count", "units": "count",
#  "data": [{"qty": 34, "date": "2021-03-14 00:01:00 +0000"},
#           {"date": "2021-03-14 00:51:00 +0000", "qty": 25}]}
def _metric(
    item: dict[str, object], name: str, found: Found, instants: dates.Instants
) -> Iterator[Point]:
    key = f"metrics.{name}"
    uncovered = found.uncovered
    sent_units = item.get("units")
    unit = sent_units if isinstance(sent_units, str) else ""
    if sent_units is not None and not isinstance(sent_units, str):
        uncovered.add(key)
    if len(name) > MAX_NAME or len(unit) > MAX_NAME:
        uncovered.add(key)  # a name is part of every point's key: too long to keep
        return
    if not item.keys() <= _ITEM_KEYS and any(
        not is_empty(v) for k, v in item.items() if k not in _ITEM_KEYS
    ):
        uncovered.add(key)  # an item-level field we have no place for
    data = item.get("data")
    if is_empty(data):
        return
    if not isinstance(data, list):
        uncovered.add(key)
        return
    build = _BUILDERS.get(name, _GENERIC.build)
    owner = getattr(build, "__self__", None)
    many = owner.many if isinstance(owner, Values) else None
    beats = name == "heart_rate_variability"
    # one decision per metric, not per point: the plain path pays one ``is None``
    effective = unit or _DEFAULT_UNITS.get(name, "")
    conv = units.conversion(name, effective)
    convert = None if conv is not None and conv.unit == effective and conv.identity else conv
    identity = conv is not None and conv.identity
    for at in range(0, len(data), _CHUNK):
        chunk = data[at : at + _CHUNK]
        # most chunks are of one plain shape: read at once, as build would read each
        read = (
            None
            if many is None or len(chunk) < _MANY_AT_LEAST
            else many(name, chunk, unit, instants)
        )
        if read is not None:
            if convert is not None:
                read = [_converted(p, convert, identity) for p in read]
            elif conv is None:
                found.incomparable += len(read)
            yield from read
            continue
        for point in chunk:
            if type(point) is not dict:
                uncovered.add(key)
                continue
            try:
                built = build(name, point, unit, instants)
            except ValueError:  # NotUnderstood, or a time dates.instant cannot read
                uncovered.add(key)
                continue
            if beats and not is_empty(point.get(_HEARTBEATS)):
                try:
                    found.records.append(_heartbeats(point, built[0], found))
                except ValueError:  # the SDNN is kept; the series stays in the archive
                    uncovered.add(f"{key}.{_HEARTBEATS}")
            if convert is not None:
                built = [_converted(p, convert, identity) for p in built]
            elif conv is None:
                found.incomparable += len(built)
            yield from built


def _converted(point: Point, conv: units.Conversion, identity: bool) -> Point:
    """The point in its series' canonical unit, what was sent kept in extra.

    ``identity`` is ``conv.identity``, decided once per metric.
    """
    metric, name, who, start, offset, end, qty, note, unit, more, _ = point
    fields = orjson.loads(more) if more else {}
    fields["sent_unit"] = unit
    if qty is not None and not identity:
        fields["sent_qty"] = qty
        qty = conv.apply(qty)
    more = records.canonical(fields)
    return _new(Point, (metric, name, who, start, offset, end, qty, note, conv.unit, more, 0))


# {"date": "2024-06-01 03:12:40 +0100", "qty": 41.2, "source": "Simon's Apple Watch",
#  "heartbeatSeries": [{"date": 1717207960.125, "timeSinceStart": 0.0, "precededByGap": false},
#                      {"date": 1717207961.031, "timeSinceStart": 0.906, "precededByGap": false}]}
def _heartbeats(point: dict[str, object], sdnn: Point, found: Found) -> Record:
    """The beat-to-beat series of one HRV point, as a record of its own.

    Identity ``source|start`` (the HRV point's key); each beat is an Item of series
    ``heartbeat``: t from the epoch float, qty ``timeSinceStart`` (s), extra
    ``precededByGap``.
    """
    beats = point[_HEARTBEATS]
    if not records.is_series(beats):
        raise NotUnderstood("a heartbeat series that is not a list of objects")
    capped: dict[str, int] = {}
    beat_items = records.capped_items(
        _HEARTBEATS,
        "heartbeat",
        beats,  # type: ignore[arg-type]
        ("timeSinceStart",),
        found,
        found.room(_HEARTBEATS),
        capped,
    )
    body = {k: v for k, v in point.items() if k != _HEARTBEATS and v is not None}
    if capped:
        body[records.CAPPED_FIELD] = capped
    return Record(
        _HEARTBEATS,
        f"{sdnn.source}|{sdnn.start}",
        sdnn.start,
        sdnn.end,
        sdnn.utc_offset,
        "heart_rate_variability",
        sdnn.source,
        records.canonical(body),
        tuple(beat_items),
    )


# --- the fields every point shape shares -------------------------------------------------


def qty(value: object) -> float | None:
    """A number or null; anything else (a string, a boolean, a list) is not understood."""
    kind = type(value)
    if kind is float:
        return value  # type: ignore[return-value]
    if kind is int:
        return float(value)  # type: ignore[arg-type]
    if value is None:
        return None
    raise NotUnderstood("not a number")


def text(value: object) -> str | None:
    if value is None:
        return None
    if type(value) is str:
        if len(value) > MAX_INLINE:
            raise NotUnderstood("a text too long to keep inline")
        return value
    raise NotUnderstood("not a string")


def source(value: object) -> str:
    if value is None:
        return ""
    if type(value) is str:
        if len(value) > MAX_SOURCE:
            raise NotUnderstood("a source name too long to keep in a key")
        return value
    raise NotUnderstood("not a source name")


def extra(
    point: dict[str, object],
    mapped: frozenset[str],
    aliases: tuple[tuple[str, object], ...] = (),
) -> str | None:
    """Canonical JSON of the fields without a column, or None when there are none.

    ``aliases`` are (key, raw value) pairs of time fields that repeat the time already
    stored (HAE 9.x sends ``start`` equal to ``date``): they are dropped only when equal.
    """
    if point.keys() <= mapped:
        return None
    rest = {
        k: v
        for k, v in point.items()
        if k not in mapped and v is not None and (k, v) not in aliases
    }
    if not rest:
        return None
    try:
        written = orjson.dumps(rest, option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONEncodeError as exc:  # nesting deeper than orjson writes
        raise NotUnderstood("unwritable field") from exc
    if len(written) > MAX_INLINE:
        raise NotUnderstood("fields too wide to keep inline")
    return written


def key_time(
    point: dict[str, object], instants: dates.Instants | None = None
) -> tuple[str, int | None, str | None, object]:
    """(start, offset, end, raw key time) of a dated point: ``date``, else 9.x ``start``.

    ``instants``, the body's memo, reads each time text once (``dates.instant`` if None).
    """
    read = dates.instant if instants is None else instants.read
    raw = point.get("date")
    if raw is None:
        raw = point.get("start")
    start, offset = read(raw)
    end_raw = point.get("end")
    end = None if end_raw is None else read(end_raw)[0]
    return start, offset, end, raw


# --- dated points with one Point per value field -----------------------------------------


@dataclass(frozen=True, slots=True)
class Values:
    """A point shape: which keys hold values (and their Point.field), which one holds text."""

    fields: tuple[tuple[str, str], ...]
    text: str | None = None
    # keys that are neither a column nor extra (covered elsewhere, e.g. by an uncovered key)
    skip: tuple[str, ...] = ()
    mapped: frozenset[str] = field(init=False)
    # the same plus a 9.x ``start`` that repeats ``date``
    mapped_9x: frozenset[str] = field(init=False)
    # the keys of the plainest points, which ``many`` reads at once
    plain: frozenset[str] = field(init=False)
    # (key, Point.field, the key's getter)
    getters: tuple[tuple[str, str, Callable[[dict[str, object]], object]], ...] = field(init=False)

    def __post_init__(self) -> None:
        keys = {"date", "end", "source", *self.skip, *(k for k, _ in self.fields)}
        if self.text is not None:
            keys.add(self.text)
        object.__setattr__(self, "mapped", frozenset(keys))
        object.__setattr__(self, "mapped_9x", frozenset({"start", *keys}))
        plain = {"date", "start", "end", "source", *(k for k, _ in self.fields)}
        object.__setattr__(self, "plain", frozenset(plain - {self.text, *self.skip}))
        object.__setattr__(self, "getters", tuple((k, n, itemgetter(k)) for k, n in self.fields))

    # {"date": "2024-06-01 00:00:00 +0100", "start": "2024-06-01 00:00:00 +0100",
    #  "end": "2024-06-01 00:59:59 +0100", "Min": 52, "Avg": 61.5, "Max": 88,
    #  "source": "Simon's Apple Watch", "context": "Sedentary"}
    def build(
        self, metric: str, point: dict[str, object], unit: str, instants: dates.Instants
    ) -> Sequence[Point]:
        # the hot path of a metrics body: key_time, source, extra and qty inlined, and
        # the memo's look-up too (a text read before costs one dict look-up)
        raw = point.get("date")
        if raw is None:
            raw = point.get("start")
        start, offset = (instants.get(raw) if type(raw) is str else None) or instants.read(raw)
        end_raw = point.get("end")
        if end_raw is None:
            end = None
        else:
            end = (
                (instants.get(end_raw) if type(end_raw) is str else None) or instants.read(end_raw)
            )[0]
        who = point.get("source")
        if who is None:
            who = ""
        elif type(who) is not str or len(who) > MAX_SOURCE:
            who = source(who)
        note = None if self.text is None else text(point.get(self.text))
        more = None
        if not point.keys() <= (self.mapped_9x if point.get("start") == raw else self.mapped):
            more = extra(point, self.mapped, (("start", raw),))
        out = []
        for key, name in self.fields:
            if key in point:
                value = point[key]
                if type(value) is not float:
                    value = qty(value)
                out.append(
                    _new(Point, (metric, name, who, start, offset, end, value, note, unit, more, 0))
                )
        if not out:
            raise NotUnderstood("no value field")
        return out

    # [{"date": "2024-06-01 00:01:00 +0100", "qty": 3.5, "source": "Simon's Apple Watch"},
    #  {"date": "2024-06-01 00:02:00 +0100", "qty": 1.25, "source": "Simon's Apple Watch"}]
    def many(
        self, metric: str, chunk: list[object], unit: str, instants: dates.Instants
    ) -> list[Point] | None:
        """``build`` of every point of ``chunk``, in order, read a key at a time; or None.

        Only a chunk whose points are all of one plain shape is read here: objects with
        the same keys, ``date`` and at least one value field, at most ``source``,
        ``end`` and a 9.x ``start`` equal to ``date`` besides (so no extra and no text);
        times, sources and values texts, texts and numbers. For any other chunk, or a
        time ``instants`` refuses, None: then ``build`` reads each point, and says what
        it cannot read. Either way the same Points.
        """
        if set(map(type, chunk)) != _DICTS:
            return None
        points: list[dict[str, object]] = chunk  # type: ignore[assignment]
        keys = points[0].keys()
        if not (keys <= self.plain and "date" in keys) or not all(
            map(keys.__eq__, map(dict.keys, points))
        ):
            return None
        sent = list(map(_DATE, points))
        if set(map(type, sent)) != _TEXTS or (
            "start" in keys and list(map(_START, points)) != sent
        ):
            return None
        who: Iterator[object] | list[object] = repeat("")
        if "source" in keys:
            who = list(map(_SOURCE, points))
            if set(map(type, who)) != _TEXTS or max(map(len, who)) > MAX_SOURCE:  # type: ignore[arg-type]
                return None
        columns = []
        for key, name, get in self.getters:
            if key in keys:
                values = list(map(get, points))
                kinds = set(map(type, values))
                if not kinds <= _NUMBERS:
                    return None
                columns.append((name, values if kinds == _FLOATS else list(map(float, values))))  # type: ignore[arg-type]
        if not columns:
            return None
        try:
            instant = _instants(sent, instants)
            ends: Iterator[object] | list[object] = repeat(None)
            if "end" in keys:
                end_sent = list(map(_END, points))
                if set(map(type, end_sent)) != _TEXTS:
                    return None
                ends = list(map(_FIRST, _instants(end_sent, instants)))
        except ValueError:
            return None
        starts, offsets = list(map(_FIRST, instant)), list(map(_SECOND, instant))
        rows = [
            map(_new, repeat(Point), zip(repeat(metric), repeat(name), who, starts, offsets,
                ends, values, repeat(None), repeat(unit), repeat(None), repeat(0)))
            for name, values in columns
        ]  # fmt: skip
        if len(rows) == 1:
            return list(rows[0])
        return list(chain.from_iterable(zip(*rows, strict=True)))


_DICTS, _TEXTS, _FLOATS = frozenset({dict}), frozenset({str}), frozenset({float})
_NUMBERS = frozenset({float, int})  # not bool: qty refuses it
_DATE, _START, _END, _SOURCE = (itemgetter(k) for k in ("date", "start", "end", "source"))
_FIRST, _SECOND = itemgetter(0), itemgetter(1)


def _instants(texts: list[object], instants: dates.Instants) -> list[tuple[str, int | None]]:
    """``instants.read`` of each text: the memo's look-ups at once, then what it lacked."""
    found = list(map(instants.get, texts))  # type: ignore[arg-type]
    if None not in found:
        return found  # type: ignore[return-value]
    read = instants.read
    return [hit or read(text) for hit, text in zip(found, texts, strict=True)]


_QTY = (("qty", "qty"),)
# plain quantity and heart-rate-like summaries; also what an unknown name may carry
_GENERIC = Values((*_QTY, ("Min", "min"), ("Avg", "avg"), ("Max", "max")))


# --- sleep_analysis ----------------------------------------------------------------------

_DURATIONS = ("totalSleep", "asleep", "core", "deep", "rem", "awake", "inBed")
_NIGHT = frozenset({"date", "end", "source", *_DURATIONS})
# the times of a night that carry its clock, the evening's first: a night's midnight is
# most often after its start and before any change of clocks at 2 or 3 in the morning
_NIGHT_CLOCKS = ("start", "sleepStart", "inBedStart", "end", "sleepEnd", "inBedEnd")
_SEGMENT = frozenset({"startDate", "endDate", "qty", "value", "source"})


def _sleep(
    metric: str, point: dict[str, object], unit: str, instants: dates.Instants
) -> Sequence[Point]:
    # One name, two shapes: the automation's "aggregate sleep" setting decides, so here
    # (and only here) the point's keys choose between a night and a segment.
    if any(k in point for k in _DURATIONS):
        return _night(metric, point, unit or "hr", instants)
    return (_segment(metric, point, unit or "hr", instants),)


# {"date": "2023-01-31 02:44:02 +0800", "core": 3.2999999999999994, "deep": 0.858,
#  "rem": 1.258, "awake": 0.116, "asleep": 0, "inBed": 8.145, "sleepStart": "...",
#  "sleepEnd": "2023-01-31 08:39:12 +0800", "source": "Irvin's iPhone|Irvin’s Apple Watch"}
def _night(
    metric: str, point: dict[str, object], unit: str, instants: dates.Instants
) -> Sequence[Point]:
    start, offset, end, raw = key_time(point, instants)
    if dates.is_day(raw):
        start, offset = _night_start(raw, point, instants, (start, offset))
    # before app 6.6.2 there was no ``source``, only sleepSource and inBedSource
    who = source(point.get("source")) or source(point.get("sleepSource"))
    # sleepStart/End, inBedStart/End (absent in 8.2.12-8.2.13), sleepSource, inBedSource
    more = extra(point, _NIGHT, (("start", raw),))
    return [
        Point(metric, key, who, start, offset, end, qty(point[key]), None, unit, more)
        for key in _DURATIONS
        if key in point
    ]


# {"date": "2026-07-06", "sleepStart": "2026-07-05 23:10:00 +0200", "asleep": 7.5, ...}
def _night_start(
    day: str, point: dict[str, object], instants: dates.Instants, read: tuple[str, int | None]
) -> tuple[str, int | None]:
    """A night sent as a day alone starts at that day's midnight on the night's own clock.

    So the same night sent again as ``2026-07-06 00:00:00 +0200`` (a day's bucket, as
    HAE stamps one) has the same key (docs/hae-format.md, "Sleep"). The clock is the
    offset of the night's first readable time that has one (``_NIGHT_CLOCKS``); with
    none, the account's zone, as CSV's offset-less days are read. ``read``, the day as
    ``dates.instant`` reads it (UTC midnight), stays for a midnight out of range.
    """
    offset = None
    for key in _NIGHT_CLOCKS:
        try:
            offset = instants.read(point.get(key))[1]
        except ValueError:  # absent, null or unreadable: the next one
            continue
        if offset is not None:
            break
    try:
        return dates.day_start(day, offset, instants.zone)
    except ValueError:
        return read


# {"source": "Irvin's Apple Watch", "startDate": "2021-12-18 02:21:06 +0800",
#  "endDate": "2021-12-18 08:57:06 +0800", "value": "Core", "date": null,
#  "qty": 6.108333333333333}
def _segment(metric: str, point: dict[str, object], unit: str, instants: dates.Instants) -> Point:
    start_raw = point.get("startDate")
    if start_raw is None:
        start_raw = point.get("start")  # HAE 9.x
    end_raw = point.get("endDate")
    if end_raw is None:
        end_raw = point.get("end")
    start, offset = instants.read(start_raw)
    end = None if end_raw is None else instants.read(end_raw)[0]
    more = extra(point, _SEGMENT, (("start", start_raw), ("end", end_raw), ("date", start_raw)))
    return Point(
        metric,
        "segment",
        source(point.get("source")),
        start,
        offset,
        end,
        qty(point.get("qty")),
        text(point.get("value")),
        unit,
        more,
    )


def json_field(metric: str, label: str) -> str | None:
    """The field the JSON parser gives ``metric``'s value key ``label``; None if none.

    Spaces and case aside (``In Bed`` is ``inBed``, ``Max`` is ``max``, ``Protection
    Used`` stays as sent): the one mapping by which another form of the same data (HAE's
    CSV headers ``Sleep Analysis [In Bed] (hr)``) keys its points like JSON's.
    """
    if metric == "sleep_analysis":
        fields: Sequence[tuple[str, str]] = tuple((key, key) for key in _DURATIONS)
    else:
        owner = getattr(_BUILDERS.get(metric, _GENERIC.build), "__self__", _GENERIC)
        fields = owner.fields if isinstance(owner, Values) else _GENERIC.fields
    want = _squashed(label)
    return next((name for key, name in fields if _squashed(key) == want), None)


def _squashed(label: str) -> str:
    return "".join(label.split()).lower()


# a missing ``units`` means this unit for these metrics (and only for them)
_DEFAULT_UNITS = {"sleep_analysis": "hr"}

_Builder = Callable[[str, dict[str, object], str, dates.Instants], Sequence[Point]]

_BUILDERS: dict[str, _Builder] = {
    # {"date": "...", "Min": 52, "Avg": 61.5, "Max": 88, "source": "...", "context": "..."}
    "heart_rate": _GENERIC.build,
    # {"date": "...", "qty": 41.2, "source": "...", "heartbeatSeries": [{"date": 1.7e9, ...}]}
    "heart_rate_variability": Values(_GENERIC.fields, skip=(_HEARTBEATS,)).build,
    # {"date": "2024-06-01 08:00:00 +0100", "systolic": 121, "diastolic": 79}
    "blood_pressure": Values((("systolic", "systolic"), ("diastolic", "diastolic"))).build,
    # {"date": "2024-06-01 08:00:00 +0100", "qty": 97, "mealTime": "Before Meal"}
    "blood_glucose": Values(_QTY, text="mealTime").build,
    # {"date": "...", "Unspecified": 0, "Protection Used": 1, "Protection Not Used": 0}
    "sexual_activity": Values(
        tuple((k, k) for k in ("Unspecified", "Protection Used", "Protection Not Used"))
    ).build,
    # {"date": "2024-06-01 07:30:00 +0100", "qty": 21, "value": "Complete"}
    "handwashing": Values(_QTY, text="value").build,
    "toothbrushing": Values(_QTY, text="value").build,
    # {"date": "2024-06-01 07:30:00 +0100", "qty": 4.5, "reason": "Bolus"}
    "insulin_delivery": Values(_QTY, text="reason").build,
    "sleep_analysis": _sleep,
}
