"""Reading a Health export: records per second and peak memory, against a bare iterparse.

Generates an ``export.xml`` (heart rate, steps, energy, sleep, HRV with beats, a workout
an hour) of about ``--mb`` MB and a quarter of it, then reads each in a fresh process
twice: the **floor**, a bare ``lxml.etree.iterparse`` that clears every element and
builds nothing, and **healthlog.applehealth** (every batch of Points and Records built
and dropped). Peak RSS is the child's ``ru_maxrss``: flat memory means the two sizes
peak within a few MB of each other, whatever the file size. Prints one JSON object.

    .venv/bin/python bench/bench_applehealth.py            # ~200 MB and ~50 MB
    .venv/bin/python bench/bench_applehealth.py --quick    # ~8 MB and ~2 MB
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import emit, machine, note

_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE HealthData [\n'
    "<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary)*)>\n"
    "<!ATTLIST HealthData\n  locale CDATA #REQUIRED\n>\n]>\n"
    '<HealthData locale="en_US">\n <ExportDate value="2024-04-02 09:12:44 +0200"/>\n'
    ' <Me HKCharacteristicTypeIdentifierDateOfBirth="1985-06-15"/>\n'
)
_WATCH = 'sourceName="Bench Watch" sourceVersion="10.3.1"'
_PHONE = 'sourceName="Bench iPhone" sourceVersion="17.4"'


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S +0000")


def generate(path: Path, size: int, seed: int = 7) -> int:
    """Write an export of about ``size`` bytes; returns the number of top-level elements."""
    rng = random.Random(seed)
    at = datetime(2020, 1, 1, tzinfo=UTC)
    elements = 0
    with path.open("w", encoding="utf-8") as out:
        out.write(_HEAD)
        while out.tell() < size:
            for _ in range(200):
                at += timedelta(seconds=rng.randint(5, 30))
                s = _stamp(at)
                out.write(
                    f' <Record type="HKQuantityTypeIdentifierHeartRate" {_WATCH} unit="count/min" '
                    f'creationDate="{s}" startDate="{s}" endDate="{s}" '
                    f'value="{rng.randint(50, 150)}">\n'
                    '  <MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="1"/>\n'
                    " </Record>\n"
                )
                e = _stamp(at + timedelta(minutes=1))
                out.write(
                    f' <Record type="HKQuantityTypeIdentifierStepCount" {_PHONE} unit="count" '
                    f'startDate="{s}" endDate="{e}" value="{rng.randint(0, 120)}"/>\n'
                    ' <Record type="HKQuantityTypeIdentifierActiveEnergyBurned" '
                    f'{_WATCH} unit="kJ" '
                    f'startDate="{s}" endDate="{e}" value="{rng.random() * 20:.3f}"/>\n'
                )
                elements += 3
            s, e = _stamp(at), _stamp(at + timedelta(minutes=40))
            out.write(
                f' <Record type="HKCategoryTypeIdentifierSleepAnalysis" {_WATCH} startDate="{s}" '
                f'endDate="{e}" value="HKCategoryValueSleepAnalysisAsleepCore"/>\n'
                ' <Record type="HKQuantityTypeIdentifierHeartRateVariabilitySDNN" '
                f'{_WATCH} unit="ms" '
                f'startDate="{s}" endDate="{_stamp(at + timedelta(minutes=1))}" value="44.1">\n'
                "  <HeartRateVariabilityMetadataList>\n"
                + "".join(
                    '   <InstantaneousBeatsPerMinute bpm="60" '
                    f'time="{at.hour}:{at.minute:02d}:{i:02d}.00"/>\n'
                    for i in range(1, 40)
                )
                + "  </HeartRateVariabilityMetadataList>\n </Record>\n"
                f' <Workout workoutActivityType="HKWorkoutActivityTypeRunning" duration="40" '
                f'durationUnit="min" {_WATCH} startDate="{s}" endDate="{e}">\n'
                '  <MetadataEntry key="HKIndoorWorkout" value="0"/>\n'
                '  <WorkoutStatistics type="HKQuantityTypeIdentifierActiveEnergyBurned" '
                f'startDate="{s}" '
                f'endDate="{e}" sum="400" unit="kcal"/>\n </Workout>\n'
            )
            elements += 3
        out.write("</HealthData>\n")
    return elements


_FLOOR = """
import resource, sys, time
from lxml import etree
t = time.perf_counter()
n = 0
context = etree.iterparse(sys.argv[1], events=("end",), resolve_entities=False, no_network=True)
root = None
for _, el in context:
    if root is None:
        root = el.getroottree().getroot()
    if el.getparent() is root:
        n += 1
        el.clear()
        while el.getprevious() is not None:
            del root[0]
print(n, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""

_READER = """
import resource, sys, time
from healthlog.applehealth import read_export
t = time.perf_counter()
points = records = 0
with read_export(sys.argv[1]) as reading:
    for batch in reading.batches():
        points += len(batch.points)
        records += len(batch.records)
    n = sum(reading.read.values())
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(n, time.perf_counter() - t, peak, points, records)
"""


def _run(code: str, path: Path) -> list[float]:
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    ).stdout
    return [float(v) for v in out.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    big = 8.0 if args.quick else args.mb
    report: dict[str, object] = {
        "benchmark": "applehealth",
        "mode": "quick" if args.quick else "full",
        "machine": machine(),
        "cases": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-applehealth-") as tmp:
        for mb in (big / 4, big):
            path = Path(tmp) / f"export-{mb:g}.xml"
            note(f"generating {mb:g} MB")
            elements = generate(path, int(mb * 1024 * 1024))
            note("floor: bare iterparse")
            f_n, f_s, f_rss = _run(_FLOOR, path)
            note("healthlog.applehealth")
            r_n, r_s, r_rss, points, records = _run(_READER, path)
            assert int(f_n) == int(r_n) == elements + 2  # + ExportDate and Me
            report["cases"].append(  # type: ignore[attr-defined]
                {
                    "xml_mb": round(path.stat().st_size / 1024 / 1024, 1),
                    "elements": elements,
                    "points": int(points),
                    "records": int(records),
                    "floor_elements_per_s": round(f_n / f_s),
                    "reader_elements_per_s": round(r_n / r_s),
                    "reader_points_per_s": round(points / r_s),
                    "ratio": round(f_s / r_s, 3),
                    "floor_peak_rss_mb": round(f_rss / 1024, 1),
                    "reader_peak_rss_mb": round(r_rss / 1024, 1),
                }
            )
    cases = report["cases"]
    assert isinstance(cases, list)
    report["rss_growth_mb"] = round(
        cases[1]["reader_peak_rss_mb"] - cases[0]["reader_peak_rss_mb"], 1
    )
    report["floor_rss_growth_mb"] = round(
        cases[1]["floor_peak_rss_mb"] - cases[0]["floor_peak_rss_mb"], 1
    )
    emit(report)


if __name__ == "__main__":
    main()
