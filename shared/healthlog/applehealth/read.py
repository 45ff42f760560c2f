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

The reader is one class, ``ExportReading``, made of a reader per kind of element, each
in its module: ``elements`` (the element, the batch, the counts they share), ``samples``
(Records: quantity and category samples), ``workouts``; this module is the stream (the
parser target, the batches, the dispatch of each element) and the correlations, activity
summaries and ECGs.
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lxml import etree

from healthlog.applehealth import ios8, series, types
from healthlog.applehealth.elements import (
    _correlated_key,
    _metadata,
    _Node,
    _number_or_text,
    _Pending,
)
from healthlog.applehealth.files import Export, ExportUnreadable
from healthlog.applehealth.samples import _SampleReader, _Shape
from healthlog.applehealth.workouts import _WorkoutReader
from healthlog.hae import dates, records, sections
from healthlog.hae.records import CAPPED, CAPS, Caps, Found
from healthlog.model import Point, Record

#: the default batch: about this many points (plus one element's) per ``Batch``
BATCH_POINTS = 50_000
# what the parser is fed at a time
_CHUNK = 64 * 1024
ECG_FOLDER = "electrocardiograms"

#: quantity samples are built by ``ExportReading._direct``; False hands every one to
#: HAE's builder, the reference the tests hold the direct path to
_DIRECT = True
_HRV = types.QUANTITY_PREFIX + "HeartRateVariabilitySDNN"  # with beats: HAE's builder
_DIRECT_KINDS = frozenset(types.QUANTITIES)
_CORRELATIONS = ("HKCorrelationTypeIdentifierBloodPressure", "HKCorrelationTypeIdentifierFood")
# the sample types a correlation holds
_CORRELATED = frozenset(
    kind
    for kind in types.QUANTITIES
    if kind.removeprefix(types.QUANTITY_PREFIX).startswith(("BloodPressure", "Dietary"))
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


class ExportReading(_SampleReader, _WorkoutReader):
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


def read_export(
    source: str | Path, *, batch_points: int = BATCH_POINTS, resume: int = 0, caps: Caps = CAPS
) -> ExportReading:
    """An ``ExportReading`` of ``source`` (``export.zip``, its folder, or ``export.xml``).

    Raises ``ExportUnreadable`` (the message names what is wrong, never a value) when the
    source is not an export at all.
    """
    return ExportReading(source, batch_points=batch_points, resume=resume, caps=caps)


__all__ = ["BATCH_POINTS", "Batch", "ExportCut", "ExportReading", "read_export"]
