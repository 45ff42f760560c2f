"""Health app exports for tests: ``export.xml`` texts and the zips the phone writes.

Shaped like the real files (docs/apple-health-export.md; the fixtures' README says
where the knowledge of the format came from); nothing here is copied from a real
export, and every source, device and value is made up.

* ``export_xml(elements)``: an ``export.xml`` around top-level elements, with the
  Health app's internal DTD (``DOCTYPE``), ``ExportDate`` and ``Me``;
* ``quantity(...)``, ``odd_quantities(rng, n)``: ``Record`` elements, the second a mix of
  every quantity type in plain and odd units, with the odd values real exports hold
  (no unit, a fraction, an unreadable number or time, a source too long to be a key,
  metadata too wide to keep inline, a 12-hour time, a DST change);
* ``minutes(...)``: a long run of minute samples from two sources (steps from an iPhone
  and a Watch over the same minutes, heart rate), for exports that fold in many steps;
* ``write_zip(path, xml, ...)``: the phone's ``export.zip`` (``apple_health_export/``
  holding ``export.xml``, ``export_cda.xml``, ``workout-routes/``, ``electrocardiograms/``).
"""

from __future__ import annotations

import random
import zipfile
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from xml.sax.saxutils import quoteattr

from healthlog.applehealth import types

HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    "<!DOCTYPE HealthData [\n"
    "<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary)*)>\n"
    "<!ATTLIST HealthData\n  locale CDATA #REQUIRED\n>\n"
    "<!ELEMENT Record ((MetadataEntry|HeartRateVariabilityMetadataList)*)>\n"
    "]>\n"
    '<HealthData locale="en_US">\n'
    ' <ExportDate value="2024-04-02 09:12:44 +0200"/>\n'
    ' <Me HKCharacteristicTypeIdentifierDateOfBirth="1985-06-15" '
    'HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexFemale"/>\n'
)
TAIL = "</HealthData>\n"

WATCH = "Test’s Apple Watch"
PHONE = "Test’s iPhone"


def export_xml(elements: Iterable[str]) -> bytes:
    """An ``export.xml`` holding ``elements`` (each a top-level element's text)."""
    return (HEAD + "".join(f" {e}\n" for e in elements) + TAIL).encode()


def stamp(at: datetime) -> str:
    """A time as the export writes it: ``2024-03-30 08:02:10 +0100``, here in UTC."""
    return at.strftime("%Y-%m-%d %H:%M:%S +0000")


def quantity(
    kind: str,
    value: str,
    start: str,
    end: str | None = None,
    *,
    unit: str | None = "count",
    source: str | None = WATCH,
    metadata: Mapping[str, str] | None = None,
    **attributes: str,
) -> str:
    """A ``Record`` of ``HKQuantityTypeIdentifier<kind>`` (or a full type name)."""
    full = kind if kind.startswith("HK") else types.QUANTITY_PREFIX + kind
    attrs: dict[str, str] = {"type": full}
    if source is not None:
        attrs["sourceName"] = source
    if unit is not None:
        attrs["unit"] = unit
    attrs.update(attributes)
    attrs["startDate"] = start
    attrs["endDate"] = end or start
    attrs["value"] = value
    inner = "".join(
        f"<MetadataEntry key={quoteattr(k)} value={quoteattr(v)}/>"
        for k, v in (metadata or {}).items()
    )
    text = " ".join(f"{k}={quoteattr(v)}" for k, v in attrs.items())
    return f"<Record {text}>{inner}</Record>" if inner else f"<Record {text}/>"


_UNITS = [
    "count", "count/min", "kJ", "kcal", "km", "mi", "m", "cm", "ft", "kg", "lb", "g",
    "mg", "mcg", "degC", "degF", "%", "ms", "min", "s", "hr", "mL", "fl_oz_us", "L",
    "mg/dL", "mmol<180.1558800000541>/L", "mL/min·kg", "km/hr", "m/s", "dBASPL", "",
    "W", "mmHg", "x" * 300,
]  # fmt: skip
_STARTS = [
    "2024-03-31 01:59:00 +0100",  # the last minute of winter time in Europe/Berlin
    "2024-03-31 03:00:00 +0200",  # the first of summer time, one minute later
    "2024-03-30 08:02:10 +0100",
    "2024-09-21 7:57:00 am +1000",
    "2024-01-02T03:04:05Z",
    "2023-12-31 23:59:59 -0500",
    "yesterday",
]
_VALUES = ["12", "0.97", "1021", "-3.5", "1e3", "0", "nan", "inf", "lots"]
_SOURCES = [WATCH, PHONE, "Ring", "S" * 1100]


def odd_quantities(rng: random.Random, n: int) -> list[str]:
    """``n`` quantity ``Record``s of every type, most plain, some of them odd."""
    kinds = sorted(types.QUANTITIES)
    out = []
    for _ in range(n):
        kind = rng.choice(kinds)
        odd = rng.random() < 0.15
        extra: dict[str, str] = {}
        if rng.random() < 0.7:
            extra["sourceVersion"] = rng.choice(["10.3.1", "17.4"])
        if rng.random() < 0.2:
            extra["device"] = "<<HKDevice: 0x1>, name:Watch, model:Watch>"
        if rng.random() < 0.5:
            extra["creationDate"] = "2024-03-30 09:00:00 +0100"
        metadata: dict[str, str] = {}
        roll = rng.random()
        if roll < 0.3:
            metadata["HKMetadataKeyHeartRateMotionContext"] = rng.choice(["0", "1", "2"])
        if roll < 0.1:
            metadata["HKBloodGlucoseMealTime"] = rng.choice(["1", "2"])
            metadata["HKInsulinDeliveryReason"] = rng.choice(["1", "2"])
        if 0.3 < roll < 0.33:
            metadata["HKTimeZone"] = "Europe/Berlin"
        if 0.33 < roll < 0.345:
            metadata["Big"] = "b" * 17_000  # too wide to keep inline
        end = rng.choice(_STARTS[:4]) if rng.random() < 0.8 else None
        out.append(
            quantity(
                kind,
                rng.choice(_VALUES) if odd else str(round(rng.random() * 200, 3)),
                rng.choice(_STARTS) if odd else rng.choice(_STARTS[:3]),
                end,
                unit=rng.choice([*_UNITS, None]) if odd else rng.choice(_UNITS[:14]),
                source=rng.choice([*_SOURCES, None]) if odd else rng.choice(_SOURCES[:3]),
                metadata=metadata,
                **extra,
            )
        )
    return out


def hrv_with_beats(start: str, beats: int = 5) -> str:
    """An HRV sample with its instantaneous beats (12-hour clock times, as some locales)."""
    listed = "".join(
        f'<InstantaneousBeatsPerMinute bpm="6{i % 10}" time="8:02:1{i % 10}.5{i % 10} AM"/>'
        for i in range(beats)
    )
    return (
        f'<Record type="{types.QUANTITY_PREFIX}HeartRateVariabilitySDNN" sourceName="{WATCH}" '
        f'unit="ms" startDate="{start}" endDate="{start}" value="44.1">'
        f"<HeartRateVariabilityMetadataList>{listed}</HeartRateVariabilityMetadataList></Record>"
    )


def minutes(
    start: datetime, count: int, *, value: float = 0.0, sources: tuple[str, ...] = (PHONE, WATCH)
) -> list[str]:
    """``count`` minutes of steps from each source and a heart rate a minute (Watch).

    Every value differs by ``value``: two exports made with different ``value`` differ
    in every point.
    """
    out = []
    for m in range(count):
        at = start + timedelta(minutes=m)
        s, e = stamp(at), stamp(at + timedelta(minutes=1))
        for n, source in enumerate(sources):
            steps = f"{value + (m * 7 + n * 3) % 120:g}"
            out.append(quantity("StepCount", steps, s, e, source=source, sourceVersion="17.4"))
        out.append(
            quantity(
                "HeartRate",
                f"{value + 50 + m % 70:g}",
                s,
                unit="count/min",
                metadata={"HKMetadataKeyHeartRateMotionContext": "1"},
            )
        )
    return out


T0 = datetime(2024, 3, 30, 6, 0, tzinfo=UTC)


def write_zip(
    path: Path,
    xml: bytes,
    *,
    folder: str = "apple_health_export",
    routes: Mapping[str, bytes] | None = None,
    ecgs: Mapping[str, bytes] | None = None,
    extra: Mapping[str, bytes] | None = None,
) -> Path:
    """The phone's ``export.zip``: ``folder/export.xml`` and the export's other files.

    ``extra`` adds members by their full name in the zip (``../x`` included).
    """
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{folder}/export.xml", xml)
        archive.writestr(f"{folder}/export_cda.xml", b"<ClinicalDocument/>\n")
        for name, data in (routes or {}).items():
            archive.writestr(f"{folder}/workout-routes/{name}", data)
        for name, data in (ecgs or {}).items():
            archive.writestr(f"{folder}/electrocardiograms/{name}", data)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return path


#: the hand-written export of tests/fixtures/applehealth: every kind of element
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "applehealth"


def fixture_xml(*extra: str) -> bytes:
    """The fixture's ``export.xml``, with ``extra`` elements before its end."""
    xml = (FIXTURE / "export.xml").read_bytes()
    tail = xml.rindex(b"</HealthData>")
    return xml[:tail] + "".join(f" {e}\n" for e in extra).encode() + xml[tail:]


def fixture_zip(path: Path, *extra: str, members: Mapping[str, bytes] | None = None) -> Path:
    """The fixture as the phone zips it (its route and ECG), ``extra`` elements added;
    ``members`` as ``write_zip``'s ``extra``."""
    return write_zip(
        path,
        fixture_xml(*extra),
        routes={f.name: f.read_bytes() for f in sorted((FIXTURE / "workout-routes").iterdir())},
        ecgs={f.name: f.read_bytes() for f in sorted((FIXTURE / "electrocardiograms").iterdir())},
        extra=members,
    )
