"""The Health app's ``export.xml`` as healthlog's Points and Records, streamed in batches.

Every element is turned into what a Health Auto Export body would carry for the same
data (an HAE metric point, an HAE section object) and handed to the HAE parser's own
modules (``hae.metrics.points``, ``hae.records.build``, ``hae.records.items``), so names,
fields, unit conversions and identities are HAE's by construction, not by a copy of its
rules (quantity samples, most of an export, are built directly, held to HAE's builder
by a test: ``_direct``). docs/apple-health-export.md has the mapping and the reasons.

Memory is flat and no tree is built: the file is fed to libxml2 in 64 KiB chunks
through lxml's *target* interface (``_Target``), which hands over each element's tag and
attributes as it starts and ends; a top-level element is kept (``_Node``) only until it
ends. What is held is one batch. What one element may expand into is capped
(``records.Caps``): an element keeps at most ``Caps.items`` children, a workout's route
and an ECG their cap of Items (the GPX and CSV readers count the rest, never build it),
and a batch counts the Items of its records with its points.
"""

from __future__ import annotations

import hashlib
import math
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from lxml import etree

from healthlog.applehealth import ios8, series, types
from healthlog.applehealth.files import Export, ExportUnreadable, safe_member
from healthlog.hae import dates, metrics, records, sections, units
from healthlog.hae.records import CAPPED, CAPS, Caps, Found, Spec
from healthlog.model import Point, Record

#: the default batch: about this many points (plus one element's) per ``Batch``
BATCH_POINTS = 50_000
# what the parser is fed at a time
_CHUNK = 64 * 1024
ECG_FOLDER = "electrocardiograms"

_SECONDS = {"s": 1.0, "sec": 1.0, "min": 60.0, "hr": 3600.0, "h": 3600.0, "d": 86400.0}
_MEAL_TIMES = {"1": "Before Meal", "2": "After Meal"}
_INSULIN_REASONS = {"1": "Basal", "2": "Bolus"}
_MOTION_CONTEXTS = {"1": "Sedentary", "2": "Active"}
# the metadata entry a quantity's point takes out of its metadata: heart rate as its
# ``context``, glucose and insulin as its text
_SPECIAL_METADATA = {
    "heart_rate": ("HKMetadataKeyHeartRateMotionContext", _MOTION_CONTEXTS),
    "blood_glucose": ("HKBloodGlucoseMealTime", _MEAL_TIMES),
    "insulin_delivery": ("HKInsulinDeliveryReason", _INSULIN_REASONS),
}
_PROTECTION = {"1": "Protection Used", "0": "Protection Not Used"}
_SEXUAL_FIELDS = ("Unspecified", "Protection Used", "Protection Not Used")
# the export's attributes of a sample kept in a point's extra, beside its metadata
_SAMPLE_EXTRAS = ("sourceVersion", "device", "creationDate")


#: quantity samples are built by ``ExportReading._direct``; False hands every one to
#: HAE's builder, the reference the tests hold the direct path to
_DIRECT = True
_HRV = types.QUANTITY_PREFIX + "HeartRateVariabilitySDNN"  # with beats: HAE's builder
_DIRECT_KINDS = frozenset(types.QUANTITIES)
_isfinite = math.isfinite
_TIMES_KEPT = 512
_new = tuple.__new__
_MAX_SOURCE = metrics.MAX_SOURCE
_MAX_INLINE = metrics.MAX_INLINE
_SORTED = orjson.OPT_SORT_KEYS
_dumps = orjson.dumps
_instant = dates.instant
# the value key of HAE's point -> the Points' fields (hae.metrics: Min/Avg/Max are the
# fields min/avg/max; blood pressure's systolic/diastolic keep their names)
_HEART_RATE_FIELDS = ("min", "avg", "max")
_CORRELATIONS = ("HKCorrelationTypeIdentifierBloodPressure", "HKCorrelationTypeIdentifierFood")
# the sample types a correlation holds
_CORRELATED = frozenset(
    kind
    for kind in types.QUANTITIES
    if kind.removeprefix(types.QUANTITY_PREFIX).startswith(("BloodPressure", "Dietary"))
)


@dataclass(frozen=True, slots=True)
class _Shape:
    """What becomes of one quantity type's samples in one unit, decided once per reading.

    The decisions HAE's builder makes per metric and unit (``hae.metrics._metric``): the
    fields, the unit stored, the conversion, whether the unit is too long to keep.
    """

    metric: str
    key: str  # the metric's uncovered key (``metrics.<name>``)
    fields: tuple[str, ...]
    sent: str  # the unit as HAE spells it: what the sample was sent in
    percent: bool  # HealthKit's fraction, HAE's percentage
    unit: str  # the unit stored
    too_long: bool  # a unit too long to be part of a key: every point is left out
    convert: bool  # stored in the canonical unit, what was sent kept in extra
    identity: bool
    factor: float
    offset: float
    incomparable: bool  # a unit that does not convert to the series' canonical one
    weight: int  # points per sample
    #: (metadata key, its values' texts) the point takes from its metadata
    metadata: tuple[str, dict[str, str]] | None
    note: bool  # ...as its text (else as its ``context``)

    @classmethod
    def of(cls, kind: str, raw_unit: str | None) -> _Shape:
        metric = types.QUANTITIES[kind]
        unit = types.unit_spelling(raw_unit or "")
        fields = (
            _HEART_RATE_FIELDS if metric == "heart_rate" else (types.VALUE_KEYS.get(kind, "qty"),)
        )
        conv = units.conversion(metric, unit)
        convert = conv is not None and not (conv.unit == unit and conv.identity)
        return cls(
            metric=metric,
            key=f"metrics.{metric}",
            fields=fields,
            sent=unit,
            percent=unit == types.PERCENT,
            unit=conv.unit if conv is not None and convert else unit,
            too_long=len(metric) > metrics.MAX_NAME or len(unit) > metrics.MAX_NAME,
            convert=convert,
            identity=conv is None or conv.identity,
            factor=1.0 if conv is None else conv.factor,
            offset=0.0 if conv is None else conv.offset,
            incomparable=conv is None,
            weight=len(fields),
            metadata=_SPECIAL_METADATA.get(metric),
            note=metric != "heart_rate",
        )


class ExportCut(ExportUnreadable):
    """export.xml ends before its last element closes, or is not well-formed from some point on."""


@dataclass(frozen=True, slots=True)
class Batch:
    """What one step of the reading gave.

    ``position`` counts the export's units read so far (each top-level element of
    ``export.xml``, then each ECG file): ``ExportReading(..., resume=position)`` goes on
    after this batch. ``bytes_read`` is how much of ``export.xml`` (as unpacked) was read.
    """

    points: list[Point]
    records: list[Record]
    position: int
    bytes_read: int


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


class _Target(series.RefusesDoctype):
    """lxml's parser target: each top-level element, once it ends, to the reading.

    Counts the top-level elements (the position), skips those a resumed reading has
    folded already (parsed, never built), and closes a batch where it reaches its
    bound; ``take`` hands the closed batches to ``batches`` between two chunks. A DTD
    the parser meets ends the reading (``series.RefusesDoctype``).
    """

    def __init__(self, reading: ExportReading) -> None:
        self.reading = reading
        self.pending = reading._pending()
        self.position = 0
        self.ready: list[Batch] = []
        self._depth = 0
        self._stack: list[_Node] = []
        self._skip = False
        #: the most children an element keeps; past it they are counted, not built
        self._children = reading.caps.items
        #: the depth of the child being left out (0: none), and how many were
        self._left_out_at = 0
        self._left_out = 0
        #: spelled as iOS 8 exports are (``ios8``): decided by the first element with a time
        self._ios8: bool | None = None

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        depth = self._depth = self._depth + 1
        if depth == 2:
            reading = self.reading
            self._skip = self.position < reading.resume and tag not in ("Me", "ExportDate")
            if self._skip:
                return
            self._left_out = 0
            _ampersands(attrib)
            node = _Node(tag, attrib)
            if self._ios8 is None:
                self._ios8 = ios8.compact(tag, attrib)
            if self._ios8:
                ios8.respell(node)
            self._stack.append(node)
        elif depth > 2:
            if self._skip or self._left_out_at:
                return
            children = self._stack[-1].children
            if len(children) >= self._children:
                self._left_out_at = depth
                self._left_out += 1
                return
            _ampersands(attrib)
            node = _Node(tag, attrib)
            if self._ios8:
                ios8.respell(node)
            children.append(node)
            self._stack.append(node)
        else:
            _ampersands(attrib)
            self.reading.locale = attrib.get("locale")

    def end(self, tag: str) -> None:
        depth = self._depth
        self._depth = depth - 1
        if depth != 2:
            if depth > 2 and not self._skip:
                if not self._left_out_at:
                    self._stack.pop()
                elif depth == self._left_out_at:
                    self._left_out_at = 0
            return
        self.position += 1
        if self._skip:
            return
        element = self._stack.pop()
        pending = self.pending
        reading = self.reading
        if self._left_out:
            reading.uncovered[f"{element.attrib.get('type') or tag}{CAPPED}"] += 1
        if tag == "Record":
            # the hot path, without the dispatch of ``_element``: a quantity sample
            kind = element.attrib.get("type")
            if kind in _CORRELATED:
                reading.top_level.add(_correlated_key(element))
            if (
                _DIRECT
                and kind in _DIRECT_KINDS
                and not (kind == _HRV and element.children)
                and not (self._ios8 and "min" in element.attrib)  # a day's statistics
            ):
                reading.read[tag] += 1
                try:
                    reading._direct(kind, element, pending)
                except ValueError:  # a value, a time or a source that cannot be read
                    reading.unreadable[kind] += 1
            else:
                reading._element(element, pending)
        else:
            reading._element(element, pending)
        if pending.size >= reading.batch_points:
            self.ready.append(self.reading._batch(pending, self.position))
            self.pending = reading._pending()

    def close(self) -> None:
        pass

    def take(self) -> Iterator[Batch]:
        ready, self.ready = self.ready, []
        yield from ready


def _ampersands(attrib: dict[str, str]) -> None:
    """Undo lxml's ``&#38;``: its target interface gives a literal ampersand so when the
    parser does not resolve entities (it does not: docs/apple-health-export.md, "No
    DTD"). Exact: every ``&`` of a value comes as ``&#38;``, so ``&amp;#38;`` comes as
    ``&#38;#38;`` and goes back to ``&#38;``."""
    for key, value in attrib.items():
        if "&#38;" in value:
            attrib[key] = value.replace("&#38;", "&")


class ExportReading:
    """One reading of an export: its batches, and what it found besides.

    Use as a context manager (it holds the zip or files open)::

        with ExportReading("export.zip") as reading:
            for batch in reading.batches():
                ...  # fold batch.points and batch.records; remember batch.position
            reading.uncovered  # Counter: HealthKit type (or element) -> how many

    ``me``, ``locale`` and ``export_date`` are known after the first batch (they come
    first in the file). ``uncovered`` counts the elements of a type this reader has no
    mapping for; ``unreadable`` the elements of a mapped type that could not be read (a
    value that is not a number, a time that is not a time, a missing route file).
    ``caps`` bound what an element expands into (``records.Caps``): what is cut there
    is counted in ``uncovered`` (``workouts.route:capped``, ``Workout:capped``).
    """

    def __init__(
        self,
        source: str | Path,
        *,
        batch_points: int = BATCH_POINTS,
        resume: int = 0,
        caps: Caps = CAPS,
    ) -> None:
        self.export = Export(Path(source))
        self.batch_points = max(1, batch_points)
        self.resume = resume
        self.caps = caps
        self.me: dict[str, str] = {}
        self.locale: str | None = None
        self.export_date: str | None = None
        self.uncovered: Counter[str] = Counter()
        self.unreadable: Counter[str] = Counter()
        self.incomparable = 0
        self.read: Counter[str] = Counter()
        self.xml_size = self.export.xml_size
        self.bytes_read = 0
        self._shapes: dict[tuple[str, str | None], _Shape] = {}
        #: the top-level samples of the types a correlation holds (blood pressure, food):
        #: a correlation's own sample is read where the export has no top-level copy
        self.top_level: set[tuple[str | None, ...]] = set()
        # the times read lately, as ``dates.instant`` reads them: samples of several
        # types share their start and end (a Watch writes heart rate, energy and steps
        # for the same minute), and a series' next sample often starts where one ended
        self._times: dict[str, tuple[str, int | None]] = {}

    def __enter__(self) -> ExportReading:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.export.close()

    def _pending(self) -> _Pending:
        # a batch is bounded by its size (points and Items), not by a body's cap
        return _Pending(Found(caps=replace(self.caps, body=sys.maxsize)))

    def _found(self) -> Found:
        """The accumulator of one element's record."""
        return Found(caps=self.caps)

    def _took(self, found: Found) -> None:
        """What one element's accumulator counted, into the reading's counts."""
        self.incomparable += found.incomparable
        for key in found.uncovered:
            self.uncovered[key] += 1

    # --- the loop ---------------------------------------------------------------------

    def batches(self) -> Iterator[Batch]:
        """Batches in file order; raises ``ExportCut`` after the last readable batch of a
        cut or malformed ``export.xml`` (what was read before is yielded first)."""
        stream = self.export.open_xml()
        target = _Target(self)
        parser = etree.XMLParser(target=target, **series.PARSER_OPTIONS)
        try:
            try:
                while chunk := stream.read(_CHUNK):
                    self.bytes_read = stream.bytes_read
                    parser.feed(chunk)
                    yield from target.take()
                parser.close()
            except series.DoctypeRefused:
                raise ExportUnreadable(
                    "export.xml declares a DTD where the Health app writes none (after a"
                    " comment or an instruction that the app does not write): healthlog"
                    " reads no DTD, so nothing of the file was read"
                ) from None
            except etree.XMLSyntaxError as exc:
                self.bytes_read = stream.bytes_read
                yield from target.take()
                if target.pending.size:
                    yield self._batch(target.pending, target.position)
                raise ExportCut(
                    f"export.xml is cut short or not well-formed at {_where(exc)}: read"
                    f" {self.bytes_read} of {self.xml_size} bytes; {target.position}"
                    " elements read"
                ) from None
            yield from target.take()
            self.bytes_read = stream.bytes_read
        finally:
            stream.close()
        pending, position = target.pending, target.position
        for name in self.export.members(ECG_FOLDER, ".csv"):
            position += 1
            if position > self.resume:
                self._ecg(name, pending)
            if pending.size >= self.batch_points:
                yield self._batch(pending, position)
                pending = self._pending()
        yield self._batch(pending, position)

    def _batch(self, pending: _Pending, position: int) -> Batch:
        found = pending.found
        for key in found.uncovered:  # rare: every value and time was checked before
            (self.uncovered if key.endswith(CAPPED) else self.unreadable)[key] += 1
        self.incomparable += found.incomparable
        return Batch(pending.points, pending.records + found.records, position, self.bytes_read)

    # --- one top-level element --------------------------------------------------------

    def _element(self, element: Any, pending: _Pending) -> None:
        tag = element.tag
        self.read[tag] += 1
        if tag == "Record":
            kind = element.get("type")
            if (
                _DIRECT
                and kind in _DIRECT_KINDS
                and not (kind == _HRV and len(element))
                and "min" not in element.attrib  # an iOS 8 day's statistics (``ios8``)
            ):
                try:
                    self._direct(kind, element, pending)
                except ValueError:  # a value, a time or a source that cannot be read
                    self.unreadable[kind] += 1
                return
            self._record(element, pending)
        elif tag == "Workout":
            self._workout(element, pending)
        elif tag == "Correlation":
            self._correlation(element, pending)
        elif tag == "ActivitySummary":
            self._activity_summary(element, pending)
        elif tag == "Me":
            self.me = {str(k): str(v) for k, v in element.attrib.items()}
        elif tag == "ExportDate":
            self.export_date = element.get("value")
        else:  # Audiogram, VisionPrescription, ClinicalRecord, ...
            self.uncovered[str(tag)] += 1

    def _record(self, element: Any, pending: _Pending) -> None:
        kind = element.get("type") or ""
        try:
            if kind in types.QUANTITIES:
                self._quantity(kind, element, pending)
            elif kind in types.CATEGORY_METRICS:
                self._category_metric(kind, element, pending)
            elif kind in types.SYMPTOMS:
                self._event(sections.SYMPTOMS, kind, element, pending)
            elif kind in types.CYCLE_TRACKING:
                self._event(sections.CYCLE_TRACKING, kind, element, pending)
            elif kind in types.NOTIFICATIONS:
                self._event(sections.HEART_RATE_NOTIFICATIONS, kind, element, pending)
            else:
                self.uncovered[kind or "Record"] += 1
        except ValueError:  # a value or a time that cannot be read, or no stable key
            self.unreadable[kind] += 1

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

    def _quantity(self, kind: str, element: Any, pending: _Pending) -> None:
        metric = types.QUANTITIES[kind]
        value = _finite(element.get("value"))
        unit = types.unit_spelling(element.get("unit") or "")
        if unit == types.PERCENT:  # HealthKit's fraction, HAE's percentage
            value *= 100.0
        point, start_utc, _ = self._sample(element)
        meta = _metadata(element)
        weight = 1
        if metric == "heart_rate":
            # a raw sample is HAE's un-aggregated (per-second) point: Min = Avg = Max; an
            # iOS 8 export's day of statistics has its own min and max (``ios8``)
            low, high = element.get("min"), element.get("max")
            point.update(
                Min=value if low is None else _finite(low),
                Avg=value,
                Max=value if high is None else _finite(high),
            )
            context = _MOTION_CONTEXTS.get(meta.get("HKMetadataKeyHeartRateMotionContext", ""))
            if context is not None:
                point["context"] = context
                del meta["HKMetadataKeyHeartRateMotionContext"]
            weight = 3
        else:
            point[types.VALUE_KEYS.get(kind, "qty")] = value
        if metric == "blood_glucose" and (
            meal := _MEAL_TIMES.get(meta.get("HKBloodGlucoseMealTime", ""))
        ):
            point["mealTime"] = meal
            del meta["HKBloodGlucoseMealTime"]
        if metric == "insulin_delivery" and (
            why := _INSULIN_REASONS.get(meta.get("HKInsulinDeliveryReason", ""))
        ):
            point["reason"] = why
            del meta["HKInsulinDeliveryReason"]
        if metric == "heart_rate_variability":
            sent = [
                (beat.get("bpm"), beat.get("time"))
                for beat in element.iter("InstantaneousBeatsPerMinute")
            ]
            if sent:
                point["heartbeatSeries"] = series.beats(str(point["date"]), start_utc, sent)
        if meta:
            point["metadata"] = meta
        pending.add(metric, unit, point, weight)

    def _direct(self, kind: str, element: Any, pending: _Pending) -> None:
        """A quantity sample straight to its Points: what ``_quantity`` hands HAE's builder
        (``metrics.points``) and what that builder makes of it, without the HAE point dict
        between them. The one hot path of an export (most of its elements are quantity
        samples); tests/unit/test_applehealth_direct.py holds it to HAE's builder, field
        by field, over every quantity type and the odd values of real exports.

        Raises ValueError where ``_quantity`` does (a value, a time or a source that
        cannot be read); what HAE's builder leaves out is its uncovered key, as there.
        """
        get = element.attrib.get
        raw_unit = get("unit")
        shape = self._shapes.get((kind, raw_unit))
        if shape is None:
            shape = self._shapes[(kind, raw_unit)] = _Shape.of(kind, raw_unit)
        text = get("value")
        if text is None:
            raise ValueError("no value")
        value = float(text)
        if not _isfinite(value):
            raise ValueError("not a finite number")
        if shape.percent:  # HealthKit's fraction, HAE's percentage
            value *= 100.0
        times = self._times
        start_raw = get("startDate")
        if start_raw is None:
            raise ValueError("no start")
        when = times.get(start_raw)
        if when is None:
            when = _instant(start_raw)
            if len(times) >= _TIMES_KEPT:
                times.clear()
            times[start_raw] = when
        start, offset = when
        end_raw = get("endDate")
        if end_raw is None:
            end = None
        else:
            when = times.get(end_raw)
            if when is None:
                when = times[end_raw] = _instant(end_raw)
            end = when[0]
        who = get("sourceName")
        if who is None:
            who = ""
        elif len(who) > _MAX_SOURCE:
            metrics.source(who)  # raises: a source too long to be part of a key
        rest: dict[str, object] = {}
        for key in _SAMPLE_EXTRAS:
            extra_value = get(key)
            if extra_value is not None:
                rest[key] = extra_value
        note = None
        if len(element):
            meta = _metadata(element)
            special = shape.metadata
            if special is not None:
                mapped = special[1].get(meta.get(special[0], ""))
                if mapped is not None:
                    del meta[special[0]]
                    if shape.note:
                        note = mapped
                    else:
                        rest["context"] = mapped
            if meta:
                rest["metadata"] = meta
        pending.size += shape.weight  # counted as read, as for the points HAE builds
        found = pending.found
        if shape.too_long:
            found.uncovered.add(shape.key)
            return
        extra = _dumps(rest, option=_SORTED).decode() if rest else None
        if extra is not None and len(extra) > _MAX_INLINE:
            found.uncovered.add(shape.key)  # fields too wide to keep inline
            return
        if shape.convert:
            rest["sent_unit"] = shape.sent
            if not shape.identity:
                rest["sent_qty"] = value
                value = units.justified(value * shape.factor + shape.offset, value, shape.factor)
            extra = _dumps(rest, option=_SORTED).decode()
        elif shape.incomparable:
            found.incomparable += shape.weight
        metric, unit = shape.metric, shape.unit
        append = pending.points.append
        for name in shape.fields:
            append(
                _new(Point, (metric, name, who, start, offset, end, value, note, unit, extra, 0))
            )

    def _category_metric(self, kind: str, element: Any, pending: _Pending) -> None:
        metric = types.CATEGORY_METRICS[kind]
        value = element.get("value")
        point, start_utc, end_utc = self._sample(element)
        seconds = _seconds_between(start_utc, end_utc)
        meta = _metadata(element)
        unit, weight = "count", 1
        if metric == "sleep_analysis":
            stage = types.SLEEP_STAGES.get(value or "")
            if stage is None:
                raise ValueError("a sleep value this reader does not know")
            # HAE's unaggregated segment: startDate, endDate, qty (hours), value
            point["startDate"] = point.pop("date")
            point["endDate"] = point.pop("end", point["startDate"])
            point.update(qty=seconds / 3600, value=stage)
            unit = "hr"
        elif metric == "mindful_minutes":
            point["qty"], unit = seconds / 60, "min"
        elif metric in ("handwashing", "toothbrushing"):
            point["qty"], unit = seconds, "s"
        elif metric == "apple_stand_hour":
            stood = value == "HKCategoryValueAppleStandHourStood"
            if not stood and value != "HKCategoryValueAppleStandHourIdle":
                raise ValueError("a stand-hour value this reader does not know")
            point["qty"] = 1.0 if stood else 0.0
        else:  # sexual_activity: HAE's three counts, one of them 1
            used = _PROTECTION.get(meta.pop("HKSexualActivityProtectionUsed", ""), "Unspecified")
            point.update({key: 1.0 if key == used else 0.0 for key in _SEXUAL_FIELDS})
            weight = 3
        if value not in (None, "HKCategoryValueNotApplicable") and metric not in (
            "sleep_analysis",
            "apple_stand_hour",
        ):
            point["categoryValue"] = value
        if meta:
            point["metadata"] = meta
        pending.add(metric, unit, point, weight)

    def _event(self, spec: Spec, kind: str, element: Any, pending: _Pending) -> None:
        """A category sample that HAE sends in one of its event sections."""
        point, _, _ = self._sample(element)
        meta = _metadata(element)
        event: dict[str, object] = {
            "start": point.pop("date"),
            "end": point.pop("end", None),
            **point,
        }
        value = types.category_text(element.get("value"))
        if spec is sections.SYMPTOMS:
            event["name"] = types.SYMPTOMS[kind]
            if value is not None:
                event["severity"] = value
            if "HKWasUserEntered" in meta:
                event["userEntered"] = meta.pop("HKWasUserEntered") == "1"
        elif spec is sections.CYCLE_TRACKING:
            event["name"] = types.CYCLE_TRACKING[kind]
            if value is not None:
                event["value"] = value
            if "HKMenstrualCycleStart" in meta:
                event["isCycleStart"] = meta.pop("HKMenstrualCycleStart") == "1"
        else:
            event["heartNotification"] = types.NOTIFICATIONS[kind]
            threshold = meta.pop("HKHeartRateEventThreshold", None)
            if threshold is not None:
                qty, unit = _quantity_text(threshold)
                event["threshold"] = qty if qty is not None else threshold
                if unit:
                    event["thresholdUnits"] = unit
        if meta:
            event["metadata"] = meta
        found = self._found()
        pending.records.append(records.build(spec, _without_none(event), found))
        self._took(found)
        pending.size += 1

    # --- correlations, workouts, activity summaries, ECGs -------------------------------

    def _correlation(self, element: Any, pending: _Pending) -> None:
        """A blood pressure or a meal. The export's DTD says every sample of a correlation
        is written as a top-level Record too, and there it gives its points (blood
        pressure's systolic/diastolic, ``dietary_*``); some exports hold a sample only
        inside its correlation, and then it is read here. Either way it is read once
        (``top_level``: the top-level Records come before the correlations)."""
        kind = element.get("type") or "Correlation"
        if kind not in _CORRELATIONS:
            self.uncovered[kind] += 1
            return
        children = [child for child in element if child.tag == "Record"]
        for child in children:
            if child.get("type") in _CORRELATED and _correlated_key(child) not in self.top_level:
                self._element(child, pending)
        if kind == "HKCorrelationTypeIdentifierBloodPressure":
            return
        try:
            point, start_utc, end_utc = self._sample(element)
        except ValueError:
            self.unreadable[kind] += 1
            return
        nutrients = {
            types.QUANTITIES.get(child.get("type") or "", child.get("type") or ""): {
                "qty": _number_or_text(child.get("value")),
                "units": child.get("unit"),
            }
            for child in children
        }
        body: dict[str, object] = {
            **{k: v for k, v in point.items() if k not in ("date", "end", "source")},
            "type": kind,
            "nutrients": nutrients,
        }
        meta = _metadata(element)
        if meta:
            body["metadata"] = meta
        source = str(point["source"])
        canonical = records.canonical(body)
        # foods logged at one minute are distinct entries: what each holds tells them apart
        digest = hashlib.blake2b(canonical.encode(), digest_size=6).hexdigest()
        pending.records.append(
            Record(
                "food",
                f"{start_utc}|{source}|{digest}",
                start_utc,
                end_utc,
                dates.instant(element.get("startDate"))[1],
                meta.get("HKFoodType"),
                source,
                canonical,
            )
        )
        pending.size += 1

    def _workout(self, element: Any, pending: _Pending) -> None:
        activity = element.get("workoutActivityType") or ""
        try:
            point, _, _ = self._sample(element)
        except ValueError:
            self.unreadable["Workout"] += 1
            return
        meta = _metadata(element)
        body: dict[str, object] = {
            "name": types.workout_name(activity),
            "workoutActivityType": activity,
            "start": point.pop("date"),
            "end": point.pop("end", None),
            **point,
        }
        duration = _finite_or_none(element.get("duration"))
        factor = _SECONDS.get(element.get("durationUnit") or "min")
        if duration is not None and factor is not None:
            body["duration"] = duration * factor
        _workout_totals(element, body)
        stats = [child for child in element if child.tag == "WorkoutStatistics"]
        if stats:
            body["statistics"] = {_stat_name(s): _stat(s) for s in stats}
            _workout_summary(stats, body)
        if "HKIndoorWorkout" in meta:
            body["isIndoor"] = meta["HKIndoorWorkout"] == "1"
        for key, target in (
            ("HKWeatherTemperature", "temperature"),
            ("HKWeatherHumidity", "humidity"),
            ("HKElevationAscended", "elevationUp"),
            ("HKAverageMETs", "intensity"),
        ):
            if key in meta:
                qty, unit = _quantity_text(meta[key])
                if qty is not None and target == "humidity" and unit == "%" and qty > 100:
                    qty /= 100  # newer exports write hundredths: 8100 % is 81 %
                if qty is not None:
                    body[target] = {"qty": qty, "units": unit}
        if meta:
            body["metadata"] = meta
        events = [
            _without_none(
                {
                    "date": e.get("date"),
                    "type": e.get("type"),
                    "duration": _finite_or_none(e.get("duration")),
                    "units": e.get("durationUnit"),
                    "metadata": _metadata(e) or None,
                }
            )
            for e in element
            if e.tag == "WorkoutEvent"
        ]
        if events:
            body["events"] = events
        activities = [_activity(a) for a in element if a.tag == "WorkoutActivity"]
        if activities:
            body["activities"] = activities
        files: set[str] = set()
        fixes: list[dict[str, object]] = []
        sent = 0
        for route in element.iter("WorkoutRoute"):
            sent += self._route(route, body, fixes, files)
        if fixes:
            body["route"] = fixes
        found = self._found()
        record = records.build(_WORKOUTS, _without_none(body), found, sent={"route": sent})
        self._took(found)
        pending.records.append(record)
        pending.size += 1 + len(record.items)

    def _route(
        self, route: Any, body: dict[str, object], fixes: list[dict[str, object]], files: set[str]
    ) -> int:
        """A WorkoutRoute's fixes onto ``fixes``, up to the workout's cap: from the GPX
        files it names (each file once per workout, however often it is named: ``files``),
        or written inline as ``Location`` elements, as exports before iOS 13 do. How many
        fixes the route holds, those past the cap included (counted, not built)."""
        cap = self.caps.per_record(_WORKOUTS.section)
        sent = 0
        for place in route:
            if place.tag == "Location":
                sent += 1
                if len(fixes) < cap:
                    fixes.append(_location(place))
        for reference in route.iter("FileReference"):
            path = reference.get("path") or ""
            name = safe_member("", path)
            if name in files:
                continue
            stream = self.export.open_member(path)
            if name is None or stream is None:
                self.unreadable["WorkoutRoute"] += 1
                continue
            files.add(name)
            try:
                with stream:
                    read = series.route(stream, limit=max(0, cap - len(fixes)))
            except (etree.XMLSyntaxError, series.DoctypeRefused):
                self.unreadable["WorkoutRoute"] += 1
                continue
            fixes.extend(read.fixes)
            sent += read.sent
            body["routeFile"] = path.lstrip("/")
        return sent

    def _activity_summary(self, element: Any, pending: _Pending) -> None:
        day = element.get("dateComponents")
        try:
            start, _ = dates.instant(day)
        except ValueError:
            self.unreadable["ActivitySummary"] += 1
            return
        body = {str(k): _number_or_text(str(v)) for k, v in element.attrib.items()}
        pending.records.append(
            Record(
                "activitySummary", str(day), start, None, None, None, None, records.canonical(body)
            )
        )
        pending.size += 1

    def _ecg(self, name: str, pending: _Pending) -> None:
        self.read["electrocardiogram"] += 1
        stream = self.export.open_member(name)
        if stream is None:
            self.unreadable["electrocardiogram"] += 1
            return
        try:
            with stream:
                element = series.ecg(stream, name, limit=self.caps.per_record(sections.ECG.section))
            found = self._found()
            sent = element["numberOfVoltageMeasurements"]
            record = records.build(
                sections.ECG, element, found, sent={"voltage": sent if isinstance(sent, int) else 0}
            )
        except ValueError:
            self.unreadable["electrocardiogram"] += 1
            return
        self._took(found)
        pending.records.append(record)
        pending.size += 1 + len(record.items)


def _workout_identity(element: dict[str, object], start: str | None, end: str | None) -> str:
    # The export has no workout UUID: the activity type, the start (UTC) and the source
    # name are written for every workout and do not change between two exports.
    return records.keyed(
        records.field_text(element, "workoutActivityType"),
        records.field_text(element, "source"),
        start,
    )


_WORKOUTS = Spec(
    "workouts",
    _workout_identity,
    name_key="name",
    qty_keys={"route": (), "events": ("duration",), "activities": ()},
)


# --- small readers ------------------------------------------------------------------------


def _correlated_key(element: _Node) -> tuple[str | None, ...]:
    """What tells a correlation's sample from another: the same sample written at top level
    and inside its correlation has the same key."""
    get = element.attrib.get
    return (get("type"), get("sourceName"), get("startDate"), get("endDate"), get("value"))


def _where(exc: etree.XMLSyntaxError) -> str:
    """``line 12, column 7`` of a parser's error (libxml2 counts both from 1)."""
    line, column = exc.position if isinstance(exc.position, tuple) else (exc.lineno, 0)
    if not isinstance(line, int) or line <= 0:
        return "an unknown line"
    return (
        f"line {line}, column {column}"
        if isinstance(column, int) and column > 0
        else f"line {line}"
    )


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


def _stat_name(stat: Any) -> str:
    kind = stat.get("type") or ""
    return types.QUANTITIES.get(kind, kind)


def _stat(stat: Any) -> dict[str, object]:
    out: dict[str, object] = {}
    for key in ("sum", "average", "minimum", "maximum"):
        value = _finite_or_none(stat.get(key))
        if value is not None:
            out[key] = value
    out["units"] = stat.get("unit")
    for key in ("startDate", "endDate"):
        if stat.get(key) is not None:
            out[key] = stat.get(key)
    return _without_none(out)


def _workout_totals(element: Any, body: dict[str, object]) -> None:
    """The attributes of workouts exported before iOS 16 (no WorkoutStatistics)."""
    for attribute, target in (
        ("totalDistance", "distance"),
        ("totalEnergyBurned", "activeEnergyBurned"),
    ):
        qty = _finite_or_none(element.get(attribute))
        if qty is not None:
            body[target] = {"qty": qty, "units": element.get(attribute + "Unit")}
    for attribute in ("totalSwimmingStrokeCount", "totalFlightsClimbed"):
        qty = _finite_or_none(element.get(attribute))
        if qty is not None:
            body[attribute] = qty


def _workout_summary(stats: list[Any], body: dict[str, object]) -> None:
    """HAE v2's summary quantities from the workout's statistics."""
    for stat in stats:
        kind = (stat.get("type") or "").removeprefix(types.QUANTITY_PREFIX)
        unit = stat.get("unit")
        total = _finite_or_none(stat.get("sum"))
        if kind == "ActiveEnergyBurned" and total is not None:
            body["activeEnergyBurned"] = {"qty": total, "units": unit}
        elif kind.startswith("Distance") and total is not None:
            body["distance"] = {"qty": total, "units": unit}
        elif kind == "HeartRate":
            parts = {
                name: {"qty": value, "units": unit}
                for name, key in (("min", "minimum"), ("avg", "average"), ("max", "maximum"))
                if (value := _finite_or_none(stat.get(key))) is not None
            }
            if parts:
                body["heartRate"] = parts
            if "avg" in parts:
                body["avgHeartRate"] = parts["avg"]
            if "max" in parts:
                body["maxHeartRate"] = parts["max"]


# a Location's attributes that HAE v2's route fix has by the same name
_LOCATION_KEYS = (
    "latitude",
    "longitude",
    "altitude",
    "speed",
    "course",
    "horizontalAccuracy",
    "verticalAccuracy",
)


def _location(element: _Node) -> dict[str, object]:
    """An inline route fix (``<Location date= latitude= longitude= .../>``) as HAE v2's."""
    fix: dict[str, object] = {
        key: _number_or_text(element.attrib.get(key)) for key in _LOCATION_KEYS
    }
    fix["timestamp"] = element.attrib.get("date")
    return _without_none(fix)


def _activity(element: Any) -> dict[str, object]:
    """A WorkoutActivity (iOS 16 and later: one part of a multi-sport workout)."""
    out: dict[str, object] = {
        str(k): _number_or_text(str(v)) for k, v in element.attrib.items() if k != "startDate"
    }
    out["start"] = element.get("startDate")
    stats = [child for child in element if child.tag == "WorkoutStatistics"]
    if stats:
        out["statistics"] = {_stat_name(s): _stat(s) for s in stats}
    meta = _metadata(element)
    if meta:
        out["metadata"] = meta
    return _without_none(out)


def read_export(
    source: str | Path, *, batch_points: int = BATCH_POINTS, resume: int = 0, caps: Caps = CAPS
) -> ExportReading:
    """An ``ExportReading`` of ``source`` (``export.zip``, its folder, or ``export.xml``).

    Raises ``ExportUnreadable`` (the message names what is wrong, never a value) when the
    source is not an export at all.
    """
    return ExportReading(source, batch_points=batch_points, resume=resume, caps=caps)


__all__ = ["BATCH_POINTS", "Batch", "ExportCut", "ExportReading", "read_export"]
