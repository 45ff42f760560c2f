"""The export's series in HAE's shapes: GPX routes, ECG CSVs, HRV instantaneous beats.

Each function returns what an HAE body would carry for the same thing, so the HAE
modules (``hae.records.items``, ``hae.records.build`` with ``hae.sections.ECG``, the HRV
``heartbeatSeries`` of ``hae.metrics``) make the Items and Records:

* a route: HAE v2 route fixes ``{latitude, longitude, altitude, timestamp, speed,
  course, horizontalAccuracy, verticalAccuracy}``;
* an ECG: HAE's ``ecg`` object ``{start, end, classification, samplingFrequency,
  numberOfVoltageMeasurements, voltageMeasurements: [{date, voltage, units}]}``;
* HRV beats: HAE's ``heartbeatSeries`` ``[{date, timeSinceStart}]`` (plus ``bpm``).
"""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta
from typing import IO

from lxml import etree

from healthlog.hae import dates

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


class _Route(RefusesDoctype):
    """A GPX file's track points, as lxml's target interface hands them over (no tree)."""

    def __init__(self) -> None:
        self.fixes: list[dict[str, object]] = []
        self._fix: dict[str, object] | None = None
        self._text: list[str] = []
        self._in_extensions = False

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        name = _local(tag)
        self._text = []
        if name == "trkpt":
            self._fix = {
                "latitude": _number(attrib.get("lat")),
                "longitude": _number(attrib.get("lon")),
            }
        elif name == "extensions":
            self._in_extensions = True

    def data(self, text: str) -> None:
        self._text.append(text)

    def end(self, tag: str) -> None:
        name, fix = _local(tag), self._fix
        if fix is None:
            return
        text = "".join(self._text).strip() or None
        self._text = []
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

    def close(self) -> list[dict[str, object]]:
        return self.fixes


def route(stream: IO[bytes]) -> list[dict[str, object]]:
    """The fixes of a ``workout-routes/*.gpx`` file as HAE v2 route elements.

    Raises ``etree.XMLSyntaxError`` for a file that is not well-formed XML and
    ``DoctypeRefused`` for one that declares a DTD.
    """
    target = _Route()
    parser = etree.XMLParser(target=target, **PARSER_OPTIONS)
    while chunk := stream.read(_CHUNK):
        parser.feed(chunk)
    fixes: list[dict[str, object]] = parser.close()
    return fixes


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


def ecg(stream: IO[bytes], name: str) -> dict[str, object]:
    """An ``electrocardiograms/*.csv`` file as an HAE ``ecg`` object.

    The header is ``Key,Value`` lines (``Recorded Date,2024-03-30 10:00:00 +0100``,
    ``Sample Rate,512 hertz``, ``Unit,µV``), then one voltage a line; the decimal comma
    of some locales (``-265,868``) is read as a point. Raises ``ValueError`` when the file
    has no readable ``Recorded Date``.
    """
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="replace", newline="")
    header: dict[str, object] = {}
    voltages: list[float] = []
    for line in text:
        stripped = line.strip()
        if not stripped:
            continue
        if _SAMPLE.fullmatch(stripped):
            voltages.append(float(stripped.replace(",", ".")))
            continue
        if voltages:
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
        end = datetime.fromtimestamp(begin, UTC) + timedelta(seconds=len(voltages) / rate)
        element["end"] = end.isoformat(timespec="microseconds")
        element["voltageMeasurements"] = [
            {"date": begin + i / rate, "voltage": v, "units": unit} for i, v in enumerate(voltages)
        ]
    else:  # no rate: the voltages in order, without times
        element["voltageMeasurements"] = [{"voltage": v, "units": unit} for v in voltages]
    element["numberOfVoltageMeasurements"] = len(voltages)
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
