"""Importing a Health export, whole (archive + fold), against a floor in the same run.

Generates an ``export.xml`` (bench_applehealth's mix: heart rate with its motion
context, steps, energy in kJ, sleep, HRV with 39 beats, a workout an hour) of about
``--mb`` MB and of 100 MB, zips each as the phone does (``apple_health_export/``), and
for each, in fresh processes:

* **the import**: ``healthlog.ops.importer.import_export`` of the zip into a fresh SQLite
  journal and local archive (the embedded default): checked, archived (copied, fsynced),
  journalled, and folded in steps of ``HEALTHLOG_FOLD_STEP_POINTS`` (the default,
  50 000 points): every point upserted under its layer with the day counts and extents,
  the XML parsed in a process of its own beside the writes (16 MB and more, the
  default); timed whole and per phase, the peak RSS (``ru_maxrss``) of the import's
  process and of its reader's;
* **the floor**, the least any import of these bytes must do: a bare
  ``lxml.etree.iterparse`` of the same ``export.xml`` from the same zip (every element
  cleared, nothing built), plus an ``executemany`` of the same rows (the showcase's
  points, as the import wrote them, streamed from its journal) into a bare table (no
  key, no index) of a fresh WAL database with ``synchronous=FULL``, in one transaction.

``records`` are the export's top-level elements (HealthKit's records). The ratio is
floor seconds / import seconds (target >= 0.5); the memory target is the two sizes'
peak RSS within 32 MB of each other. Prints one JSON object.

    .venv/bin/python bench/bench_import.py             # ~1 GB and 100 MB of XML
    .venv/bin/python bench/bench_import.py --mb 300    # ~300 MB and 100 MB
    .venv/bin/python bench/bench_import.py --quick     # ~16 MB and ~4 MB
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from _common import emit, exit_on_sigterm, machine, note
from bench_applehealth import generate

TARGET_RATIO = 0.5
TARGET_RSS_MB = 32.0

_IMPORT = """
import json, resource, sqlite3, sys, time
from pathlib import Path
from healthlog.ops import importer
from healthlog.archive.local import LocalArchive
from healthlog.config import Settings
from healthlog.journal.sqlite import SqliteJournal

zipped, folder = Path(sys.argv[1]), Path(sys.argv[2])
journal = SqliteJournal(str(folder / "journal.db"))
journal.migrate()
account = journal.add_account("bench", "hash")
archive = LocalArchive(folder / "archive")
settings = Settings.from_env()
steps = []
started = time.perf_counter()
# import_export, phase by phase: checked, archived and journalled, folded
source = importer.inspect(zipped, max_bytes=settings.max_import_bytes)
stored = importer.archive_export(source, journal, archive, account_id=account.id)
archived = time.perf_counter()
outcome = importer.fold_import(
    journal, archive, settings, stored.delivery_id, progress=steps.append
)
report = importer.report(journal, stored, outcome)
done = time.perf_counter()
journal.close()
print(json.dumps({
    "import_s": done - started,
    "archive_s": archived - started,
    "fold_s": done - archived,
    "steps": len(steps),
    "status": report.status.value,
    "points": report.points,
    "records": report.records,
    "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    # the process that read export.xml beside the writes (an export of 16 MB and more)
    "reader_peak_rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
}))
"""

_FLOOR = """
import json, os, resource, sqlite3, sys, time, zipfile
from lxml import etree

zipped, journal, bare = sys.argv[1], sys.argv[2], sys.argv[3]
started = time.perf_counter()
records = 0
with zipfile.ZipFile(zipped) as archive, archive.open("apple_health_export/export.xml") as xml:
    root = None
    for _, element in etree.iterparse(
        xml, events=("end",), resolve_entities=False, no_network=True, load_dtd=False
    ):
        if root is None:
            root = element.getroottree().getroot()
        if element.getparent() is root:
            records += 1
            element.clear()
            while element.getprevious() is not None:
                del root[0]
parsed = time.perf_counter()
source = sqlite3.connect(journal)
columns = [row[1] for row in source.execute("PRAGMA table_info(points)")]
select = source.execute("SELECT " + ", ".join(f'"{c}"' for c in columns) + " FROM points")
target = sqlite3.connect(bare, isolation_level=None)
target.execute("PRAGMA journal_mode = WAL")
target.execute("PRAGMA synchronous = FULL")
target.execute("CREATE TABLE rows (" + ", ".join(f'"{c}"' for c in columns) + ")")
insert = "INSERT INTO rows VALUES (" + ", ".join("?" for _ in columns) + ")"
rows = 0
read_s = 0.0
started_insert = time.perf_counter()
target.execute("BEGIN")
while True:
    t = time.perf_counter()
    chunk = select.fetchmany(50_000)
    read_s += time.perf_counter() - t
    if not chunk:
        break
    target.executemany(insert, chunk)
    rows += len(chunk)
target.execute("COMMIT")
inserted = time.perf_counter()
print(json.dumps({
    "records": records,
    "iterparse_s": parsed - started,
    # the source's own reads are not the floor's work: left out of its time
    "insert_s": inserted - started_insert - read_s,
    "rows": rows,
    "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
}))
"""


def _child(code: str, *args: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"a benchmark child failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _zip(xml: Path, zipped: Path) -> None:
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(xml, "apple_health_export/export.xml")
        archive.writestr("apple_health_export/export_cda.xml", "<ClinicalDocument/>\n")


def case(folder: Path, mb: float) -> dict[str, Any]:
    xml = folder / "export.xml"
    note(f"generating {mb:g} MB of export.xml")
    elements = generate(xml, int(mb * 1024 * 1024))
    xml_mb = xml.stat().st_size / 1024 / 1024
    zipped = folder / "export.zip"
    _zip(xml, zipped)
    xml.unlink()
    note(f"importing {zipped.stat().st_size / 1024 / 1024:.1f} MB of zip")
    done = _child(_IMPORT, zipped, folder)
    note("floor: bare iterparse + executemany of the same rows")
    floor = _child(_FLOOR, zipped, folder / "journal.db", folder / "bare.db")
    assert floor["records"] == elements + 2  # + ExportDate and Me
    assert done["status"] == "parsed" and floor["rows"] > 0
    records = floor["records"]
    floor_s = floor["iterparse_s"] + floor["insert_s"]
    return {
        "xml_mb": round(xml_mb, 1),
        "zip_mb": round(zipped.stat().st_size / 1024 / 1024, 1),
        "records": records,
        "points": done["points"],
        "showcase_rows": floor["rows"],
        "steps": done["steps"],
        "import_s": round(done["import_s"], 2),
        "import_breakdown_s": {
            "check_and_archive": round(done["archive_s"], 2),
            "fold": round(done["fold_s"], 2),
        },
        "import_records_per_s": round(records / done["import_s"]),
        "floor_s": round(floor_s, 2),
        "floor_breakdown_s": {
            "iterparse": round(floor["iterparse_s"], 2),
            "executemany": round(floor["insert_s"], 2),
        },
        "floor_records_per_s": round(records / floor_s),
        "ratio": round(floor_s / done["import_s"], 3),
        "import_peak_rss_mb": round(done["peak_rss_kib"] / 1024, 1),
        "reader_peak_rss_mb": round(done["reader_peak_rss_kib"] / 1024, 1),
        "floor_peak_rss_mb": round(floor["peak_rss_kib"] / 1024, 1),
    }


def main() -> None:
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=1024.0, help="the larger export.xml, MB")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes = (4.0, 16.0) if args.quick else (100.0, args.mb)
    cases = []
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        for n, mb in enumerate(sizes):
            folder = Path(tmp) / f"case-{n}"
            folder.mkdir()
            cases.append(case(folder, mb))
    small, big = cases
    growth = round(big["import_peak_rss_mb"] - small["import_peak_rss_mb"], 1)
    reader_growth = round(big["reader_peak_rss_mb"] - small["reader_peak_rss_mb"], 1)
    emit(
        {
            "benchmark": "import",
            "mode": "quick" if args.quick else "full",
            "machine": machine(),
            "cases": cases,
            "ratio": big["ratio"],
            "rss_growth_mb": growth,
            "reader_rss_growth_mb": reader_growth,
            "targets": {"ratio": TARGET_RATIO, "rss_growth_mb": TARGET_RSS_MB},
            "meets_target": big["ratio"] >= TARGET_RATIO
            and max(abs(growth), abs(reader_growth)) <= TARGET_RSS_MB,
        }
    )


if __name__ == "__main__":
    main()
