"""The export's series in HAE's shapes: GPX routes, ECG CSVs, HRV instantaneous beats.

Each function returns what an HAE body would carry for the same thing, so the HAE
modules (``hae.records.items``, ``hae.records.build`` with ``hae.sections.ECG``, the HRV
``heartbeatSeries`` of ``hae.metrics``) make the Items and Records:

* a route: HAE v2 route fixes ``{latitude, longitude, altitude, timestamp, speed,
  course, horizontalAccuracy, verticalAccuracy}``;
* an ECG: HAE's ``ecg`` object ``{start, end, classification, samplingFrequency,
  numberOfVoltageMeasurements, voltageMeasurements: [{date, voltage, units}]}``;
* HRV beats: HAE's ``heartbeatSeries`` ``[{date, timeSinceStart}]`` (plus ``bpm``).

A route and an ECG are read up to a cap (``hae.records.Caps``): past it the file is still
streamed to its end, its elements counted and never built, so what is held is bounded by
the cap, not by the file; the count says the record was cut (``records.build``'s ``sent``).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import IO, NamedTuple

from lxml import etree

from healthlog.hae import dates, records

# the parser options every XML of an export is read with: no DTD, no network, no
# entity expansion (docs/apple-health-export.md, "Safety")
PARSER_OPTIONS: dict[str, bool] = {
    "resolve_entities": False,
    "no_network": True,
    "load_dtd": False,
    "dtd_validation": False,
    "huge_tree": False,
    "remove_comments": True,
    "remove_pis": True,
}

# what a GPX file is fed to the parser at a time
_CHUNK = 64 * 1024
# the longest text of a track point's element that is kept: a number or a time is a few
# dozen characters; a longer one (text split by comments, never cut by libxml2's limit
# on one text node) is left out of the fix instead of held whole
_TEXT_LIMIT = 1024
# GPX extension name -> HAE v2 route key
_GPX_EXTENSIONS = {
    "speed": "speed",
    "course": "course",
    "hAcc": "horizontalAccuracy",
    "vAcc": "verticalAccuracy",
}


def _local(tag: object) -> str:
    text = str(tag)
    return text.rsplit("}", 1)[-1]


def _number(text: str | None) -> float | str | None:
    """A number where the text is one; the text as sent otherwise (kept, never lost)."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return text


class DoctypeRefused(ValueError):
    """An XML file of the export declares a DTD: none is read, so nothing of the file is."""


class RefusesDoctype:
    """The XML policy, as part of an lxml parser target: a DTD met anywhere ends the parse.

    libxml2 calls a target's ``doctype`` as the declaration starts, before its internal
    subset is read, so an entity of the file is never declared, let alone expanded (in
    an attribute value libxml2 would expand it whatever ``resolve_entities`` says). This
    holds wherever the DOCTYPE sits, behind a comment, a processing instruction or the
    first element; ``files.WithoutDoctype`` sets the Health app's own DTD aside before
    the parser sees it, so a real export never meets this.
    """

    def doctype(self, name: object, pubid: object, system: object) -> None:
        raise DoctypeRefused("declares a DTD, which healthlog does not read")


class Route(NamedTuple):
    """A GPX file's fixes, the first up to the limit, and how many track points it holds."""

    fixes: list[dict[str, object]]
    sent: int


class _Route(RefusesDoctype):
    """A GPX file's track points, as lxml's target interface hands them over (no tree).

    Builds the first ``limit`` fixes; the track points past it are counted, not built.
    """

    def __init__(self, limit: int) -> None:
        self.fixes: list[dict[str, object]] = []
        self.limit = limit
        self.sent = 0
        self._fix: dict[str, object] | None = None
        self._text: list[str] = []
        self._size = 0
        self._in_extensions = False

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        name = _local(tag)
        self._text, self._size = [], 0
        if name == "trkpt":
            self.sent += 1
            if len(self.fixes) < self.limit:
                self._fix = {
                    "latitude": _number(attrib.get("lat")),
                    "longitude": _number(attrib.get("lon")),
                }
        elif name == "extensions":
            self._in_extensions = True

    def data(self, text: str) -> None:
        if self._fix is not None and self._size <= _TEXT_LIMIT:
            self._text.append(text)
            self._size += len(text)

    def end(self, tag: str) -> None:
        name, fix = _local(tag), self._fix
        if fix is None:
            return
        text = None if self._size > _TEXT_LIMIT else ("".join(self._text).strip() or None)
        self._text, self._size = [], 0
        if name == "trkpt":
            self.fixes.append({k: v for k, v in fix.items() if v is not None})
            self._fix = None
            self._in_extensions = False
        elif name == "extensions":
            self._in_extensions = False
        elif self._in_extensions:
            fix[_GPX_EXTENSIONS.get(name, name)] = _number(text)
        elif name == "ele":
            fix["altitude"] = _number(text)
        elif name == "time":
            fix["timestamp"] = text

    def close(self) -> Route:
        return Route(self.fixes, self.sent)


def route(stream: IO[bytes], *, limit: int = records.CAPS.items) -> Route:
    """The fixes of a ``workout-routes/*.gpx`` file as HAE v2 route elements: the first
    ``limit`` of them, and the number of track points in the file.

    Raises ``etree.XMLSyntaxError`` for a file that is not well-formed XML and
    ``DoctypeRefused`` for one that declares a DTD.
    """
    target = _Route(limit)
    parser = etree.XMLParser(target=target, **PARSER_OPTIONS)
    while chunk := stream.read(_CHUNK):
        parser.feed(chunk)
    found: Route = parser.close()
    return found


# --- ECG ----------------------------------------------------------------------------------

# header lines that name the person: never copied into the record (the export's ``Me`` has
# what is needed of them)
_PERSONAL = frozenset({"Name", "Date of Birth"})
# header -> HAE ecg key, where HAE has one
_ECG_KEYS = {
    "Recorded Date": "start",
    "Classification": "classification",
    "Symptoms": "symptoms",
    "Software Version": "softwareVersion",
    "Device": "device",
    "Sample Rate": "samplingFrequency",
    "Lead": "lead",
    "Unit": "unit",
}
_SAMPLE = re.compile(r"-?\d+(?:[.,]\d+)?")
_RATE = re.compile(r"(\d+(?:[.,]\d+)?)")
# HAE spells microvolts mcV (docs/hae-format.md, "Other sections")
_ECG_UNITS = {"µV": "mcV", "μV": "mcV", "uV": "mcV"}
# the longest line of an ECG file that is read: a header line or a voltage is short; a
# longer line is skipped to its end, never held whole
_LINE_LIMIT = 4096
_ENDS = ("\n", "\r")


def _lines(text: io.TextIOWrapper) -> Iterator[str]:
    """The file's lines up to ``_LINE_LIMIT`` characters; longer ones are skipped."""
    while line := text.readline(_LINE_LIMIT):
        if len(line) < _LINE_LIMIT or line.endswith(_ENDS):
            yield line
            continue
        while (rest := text.readline(_LINE_LIMIT)) and not rest.endswith(_ENDS):
            pass


def ecg(stream: IO[bytes], name: str, *, limit: int = records.CAPS.ecg) -> dict[str, object]:
    """An ``electrocardiograms/*.csv`` file as an HAE ``ecg`` object.

    The header is ``Key,Value`` lines (``Recorded Date,2024-03-30 10:00:00 +0100``,
    ``Sample Rate,512 hertz``, ``Unit,µV``), then one voltage a line; the decimal comma
    of some locales (``-265,868``) is read as a point. The first ``limit`` voltages are
    kept; ``numberOfVoltageMeasurements`` (and the end) count every one in the file.
    Raises ``ValueError`` when the file has no readable ``Recorded Date``.
    """
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="replace", newline="")
    header: dict[str, object] = {}
    voltages: list[float] = []
    count = 0
    for line in _lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if _SAMPLE.fullmatch(stripped):
            if count < limit:
                voltages.append(float(stripped.replace(",", ".")))
            count += 1
            continue
        if count:
            continue  # a stray line after the samples: the samples are what matters
        row = next(csv.reader([stripped]), [])
        if not row or row[0] in _PERSONAL:
            continue
        key = _ECG_KEYS.get(row[0], row[0])
        header[key] = ",".join(row[1:]).strip()
    start_raw = header.get("start")
    if not isinstance(start_raw, str):
        raise ValueError("an ECG without a recorded date")
    start_utc, _ = dates.instant(start_raw)
    rate = _rate(header.get("samplingFrequency"))
    unit = str(header.pop("unit", "µV"))
    unit = _ECG_UNITS.get(unit, unit)
    begin = _epoch(start_utc)
    element: dict[str, object] = {**header, "file": name}
    if rate:
        element["samplingFrequency"] = rate
        end = datetime.fromtimestamp(begin, UTC) + timedelta(seconds=count / rate)
        element["end"] = end.isoformat(timespec="microseconds")
        element["voltageMeasurements"] = [
            {"date": begin + i / rate, "voltage": v, "units": unit} for i, v in enumerate(voltages)
        ]
    else:  # no rate: the voltages in order, without times
        element["voltageMeasurements"] = [{"voltage": v, "units": unit} for v in voltages]
    element["numberOfVoltageMeasurements"] = count
    return {k: v for k, v in element.items() if v != ""}


def _rate(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    match = _RATE.search(value)
    if match is None:
        return None
    rate = float(match.group(1).replace(",", "."))
    return rate if rate > 0 else None


def _epoch(utc_text: str) -> float:
    """Seconds since the epoch of a fixed-width UTC text (``2024-03-30T09:00:00.000000Z``)."""
    return datetime.fromisoformat(utc_text[:-1]).replace(tzinfo=UTC).timestamp()


# --- HRV beats ----------------------------------------------------------------------------

# 20:14:07.68 / 6:14:48.94 PM / 08:34:05,10 / 3:10:02,11\u202fAM (locale-formatted times)
_CLOCK = re.compile(
    r"(\d{1,2}):(\d\d):(\d\d)(?:[.,](\d+))?(?:[\s\u202f]*([AaPp])\.?[Mm]\.?)?", re.ASCII
)


def clock_seconds(text: str) -> float | None:
    """Seconds since local midnight of a beat's ``time``; None when it cannot be read."""
    match = _CLOCK.fullmatch(text.strip())
    if match is None:
        return None
    hour, minute, second, fraction, meridiem = match.groups()
    h = int(hour)
    if meridiem is not None:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if meridiem in "Pp" else 0)
    if h > 23:
        return None
    return h * 3600 + int(minute) * 60 + int(second) + (float("0." + fraction) if fraction else 0.0)


def beats(
    start_raw: str, start_utc: str, sent: list[tuple[str | None, str | None]]
) -> list[dict[str, object]]:
    """HAE ``heartbeatSeries`` elements from ``InstantaneousBeatsPerMinute`` (bpm, time).

    A beat's time is a clock time in the phone's locale and in the record's own offset;
    ``timeSinceStart`` is its distance from the record's start (wrapping past midnight),
    ``date`` the epoch. A time that cannot be read is kept as sent in ``time``.
    """
    local_start = clock_seconds(start_raw[11:19]) if len(start_raw) >= 19 else None
    begin = _epoch(start_utc)
    out: list[dict[str, object]] = []
    for bpm, time_text in sent:
        beat: dict[str, object] = {}
        if bpm is not None:
            beat["bpm"] = _number(bpm)
        seconds = clock_seconds(time_text) if time_text is not None else None
        if seconds is None or local_start is None:
            if time_text is not None:
                beat["time"] = time_text
        else:
            since = (seconds - local_start) % 86400
            if since > 43200:  # a beat stamped just before the record's start
                since -= 86400
            since = round(since, 6)
            beat["date"] = begin + since
            beat["timeSinceStart"] = since
        out.append(beat)
    return out
