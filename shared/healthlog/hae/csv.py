"""HAE's CSV export: a ``multipart/form-data`` body with a metrics file and a workouts file.

The same Points and Records as the JSON parser gives. CSV times carry no offset
(docs/hae-format.md, "CSV": ``2023-01-02 00:00:00``, workouts ``2023-06-20 17:40``):
they are read in the account's IANA time zone (``tz``, ``accounts.time_zone``), and the
offset that zone had at that moment is kept as the point's ``utc_offset``. A metric
column header is ``Display Name [Field] (unit)``; the display name is snake-cased into
HAE's JSON metric name (``Weight & Body Mass (lb)`` -> ``weight_body_mass``), so CSV and
JSON deliveries fold into the same series. A part that is neither file is an uncovered
key (``csv:<part name>``).
"""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime
from email.parser import BytesParser
from email.policy import HTTP
from zoneinfo import ZoneInfo

from healthlog.errors import UnreadableBody
from healthlog.hae import dates, metrics, records, units
from healthlog.hae.records import Found
from healthlog.model import ParseResult, Point, Record

_FIELD = re.compile(r"^(?P<name>.*?)(?: \[(?P<field>[^\]]*)\])?$")
_LAYOUTS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d")


def parse(body: bytes, *, content_type: str, tz: str, deadline: float | None) -> ParseResult:
    found = Found(deadline=deadline)
    zone = ZoneInfo(tz)
    points: list[Point] = []
    if "boundary=" not in content_type.lower():
        # a delivery journalled by reconcile knows only "multipart/form-data": the
        # boundary is the body's first line
        first = body.lstrip(b"\r\n").split(b"\r\n", 1)[0].split(b"\n", 1)[0]
        if not first.startswith(b"--"):
            raise UnreadableBody("the body is not multipart/form-data")
        content_type = f"{content_type}; boundary={first[2:].decode('ascii', 'replace')}"
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise UnreadableBody("the body is not multipart/form-data")
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition") or "part"
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            found.uncovered.add(f"csv:{name}")
            continue
        try:
            rows = list(csv.reader(io.StringIO(payload.decode("utf-8-sig"))))
        except (UnicodeDecodeError, csv.Error):
            found.uncovered.add(f"csv:{name}")
            continue
        if not rows:
            continue
        header = rows[0]
        if header and header[0] in ("Date/Time", "Date"):
            points.extend(_metrics(header, rows[1:], zone, found))
        elif "Start" in header:
            _workouts(header, rows[1:], zone, found)
        else:
            found.uncovered.add(f"csv:{name}")
        found.check_clock()
    return ParseResult(
        points=points,
        uncovered=tuple(sorted(found.uncovered)),
        records=found.records,
        incomparable=found.incomparable,
    )


def _local(text: str, zone: ZoneInfo) -> tuple[str, int]:
    """UTC text and offset (minutes) of an offset-less local time in ``zone``."""
    for layout in _LAYOUTS:
        try:
            local = datetime.strptime(text.strip(), layout)
            break
        except ValueError:
            continue
    else:
        raise ValueError("not a CSV time")
    return dates.in_zone(local, zone)


def _unit(title: str) -> tuple[str, str]:
    """A header without its trailing ``(unit)``, and the unit: parentheses may nest.

    ``VO2 Max (ml/(kg·min))`` is ``VO2 Max`` in ``ml/(kg·min)``; no unit is ``""``.
    """
    if not title.endswith(")"):
        return title, ""
    depth = 0
    for at in range(len(title) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(title[at], 0)
        if depth == 0:
            return title[:at].rstrip(), title[at + 1 : -1]
    return title, ""  # unbalanced: no unit to take off


def _snake(display: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", display.lower().replace("&", " ")).strip("_")


# Date/Time,Active Energy (kcal),Heart Rate [Min] (count/min),Weight & Body Mass (lb)
# 2023-01-02 00:00:00,512.3,48,154.3
# 2023-01-03 00:00:00,498.1,,
def _metrics(header: list[str], rows: list[list[str]], zone: ZoneInfo, found: Found) -> list[Point]:
    columns = []
    for title in header[1:]:
        rest, unit = _unit(title.strip())
        match = _FIELD.match(rest)
        assert match is not None  # every string matches: the field is optional
        metric = _snake(match["name"])
        label = match["field"]
        # the JSON parser's field for the same key (docs/hae-format.md, "CSV")
        field = "qty" if not label else metrics.json_field(metric, label) or _snake(label)
        columns.append((metric, field, unit, units.conversion(metric, unit)))
    out: list[Point] = []
    for row in rows:
        if not row or not row[0].strip():
            continue
        try:
            start, offset = _local(row[0], zone)
        except ValueError:
            found.uncovered.add("csv:metrics")
            continue
        for (metric, field, unit, conv), cell in zip(columns, row[1:], strict=False):
            if not cell.strip():
                continue
            try:
                qty = float(cell)
            except ValueError:
                out.append(Point(metric, field, "", start, offset, None, None, cell, unit))
                continue
            if conv is None:
                found.incomparable += 1
            elif conv.unit != unit or not conv.identity:
                sent = records.canonical({"sent_qty": qty, "sent_unit": unit})
                out.append(
                    Point(metric, field, "", start, offset, None, conv.apply(qty), None,
                          conv.unit, sent)
                )  # fmt: skip
                continue
            out.append(Point(metric, field, "", start, offset, None, qty, None, unit))
    return out


# Workout Type,Start,End,Duration,Active Energy (kcal),Distance (mi)
# Walking,2023-06-20 17:40,2023-06-20 17:57,00:17:16,67.5,0.59
# (HAE's own export names the activity ``Type``; older ones ``Workout Type`` or ``Name``)
_NAME_COLUMNS = ("Type", "Workout Type", "Name")
_TIME_COLUMNS = ("Start", "End")
# the keys JSON workouts give these quantities (docs/sections.md, workouts v2)
_WORKOUT_KEYS = {
    "Active Energy": "activeEnergyBurned",
    "Total Energy": "totalEnergy",
    "Distance": "distance",
    "Step Count": "stepCount",
    "Flights Climbed": "flightsClimbed",
    "Elevation Ascended": "elevationUp",
    "Elevation Descended": "elevationDown",
    "Avg Heart Rate": "avgHeartRate",
    "Max Heart Rate": "maxHeartRate",
    "Avg Speed": "speed",
    "Swimming Stroke Count": "swimStrokeCount",
    "Step Cadence": "stepCadence",
}


def _workouts(header: list[str], rows: list[list[str]], zone: ZoneInfo, found: Found) -> None:
    for row in rows:
        fields = {k: v for k, v in zip(header, row, strict=False) if v.strip()}
        if not fields:
            continue
        name = next((fields[c] for c in _NAME_COLUMNS if c in fields), "")
        try:
            start, offset = _local(fields["Start"], zone)
        except (KeyError, ValueError):
            found.uncovered.add("csv:workouts")
            continue
        try:
            end: str | None = _local(fields["End"], zone)[0] if "End" in fields else None
        except ValueError:
            end = None
        body = _workout_body(fields)
        found.records.append(
            Record("workouts", f"{name}|{start}", start, end, offset, name, None,
                   records.canonical(body))
        )  # fmt: skip


def _workout_body(fields: dict[str, str]) -> dict[str, object]:
    """A CSV workout's cells in the JSON workouts' shape: ``{"distance": {"qty", "units"}}``.

    ``Duration`` (``00:17:16``) becomes seconds, as JSON's; a cell that is not a number
    stays as sent under its header, so nothing is lost.
    """
    body: dict[str, object] = {}
    for title, cell in fields.items():
        if title in _NAME_COLUMNS or title in _TIME_COLUMNS:
            body[title] = cell  # kept as sent, as before: the record's columns hold them
            continue
        display, unit = _unit(title.strip())
        if display == "Duration":
            seconds = _seconds(cell)
            body["duration"] = cell if seconds is None else seconds
            continue
        try:
            qty = float(cell)
        except ValueError:
            body[title] = cell
            continue
        key = _WORKOUT_KEYS.get(display) or _camel(display)
        body[key] = {"qty": qty, "units": unit} if unit else qty
    return body


def _seconds(text: str) -> float | None:
    parts = text.strip().split(":")
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        return None
    if not 1 <= len(numbers) <= 3:
        return None
    total = 0.0
    for number in numbers:
        total = total * 60 + number
    return total


def _camel(display: str) -> str:
    words: list[str] = re.findall(r"[0-9A-Za-z]+", display)
    if not words:
        return display
    return words[0].lower() + "".join(w[:1].upper() + w[1:].lower() for w in words[1:])
