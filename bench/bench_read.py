"""Reads for people over years of minute data: a daily summary costs its days, not its
points, and ``export`` writes a file near the speed of a bare SELECT.

The store (SQLite, or PostgreSQL with ``--backend postgres``) holds five years of one
person's minute-level data, written through the real journal a delivery a day
(``_common.fill``, as ``bench_scale.py`` writes its history): heart rate every minute
(min, avg, max) and steps on most waking minutes, about 4 860 points a day. Then:

* **Daily summaries.** ``Reads.series(metric, field=..., start=..., end=...,
  resolution=Resolution.DAY)``, called as the dashboard's ``/api/series`` and ``plot``
  call it (the catalog read once, the field looked up in it, the series), for heart
  rate (discrete: min/avg/max of ``avg`` per day) and steps (cumulative: the sum per
  day), over the last year and over all five. Each is the median of a few repeats.
  ``ratio_5y_to_1y`` (target at most 1.5: the cost follows the days, not the points)
  and ``ratio_1y_to_scan``, the year's read over a bare indexed range scan of the same
  rows (``SELECT count(*), sum(qty) FROM points WHERE account_id = ? AND metric = ?
  AND field = ? AND start >= ? AND start < ?``; target at most 2).
* **Export.** ``healthlog export --metric heart_rate --from .. --to .. -o FILE``
  (``healthlog.cli.main`` in this process, ``HEALTHLOG_JOURNAL_URL`` naming the store)
  of a million points, against a floor: a bare SELECT of the same rows in the same
  order and ``orjson.dumps`` of each row written to a file. Target: at least 0.5 of the
  floor's points per second.

A read that misses its target is run once more under cProfile, and the top functions by
cumulative time go in its ``profile``.

    .venv/bin/python bench/bench_read.py [--quick] [--backend sqlite|postgres]

``--quick``: 10 days and 50 days stand in for one year and five, and the export writes
a few thousand points.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import math
import os
import pstats
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import _common
import orjson
from _common import (
    Stopwatch,
    Store,
    emit,
    exit_on_sigterm,
    machine,
    median,
    note,
    ranked_functions,
    rounded,
)
from healthlog import cli, tokens
from healthlog.journal.rows import to_text
from healthlog.reads import Reads, Resolution, Series

TARGET_5Y_TO_1Y = 1.5
TARGET_1Y_TO_SCAN = 2.0
TARGET_EXPORT = 0.5
#: the history ends the day before
END = datetime(2024, 6, 1, tzinfo=UTC)
#: the summaries read, as the dashboard names them: (metric, field)
SUMMARIES = (("heart_rate", "avg"), ("step_count", "qty"))
#: the metric exported, and its points a day in ``_common.minute_points``
EXPORTED = "heart_rate"
EXPORTED_PER_DAY = 3 * 1440
PROFILE_TOP = 5

SCAN = (
    "SELECT count(*), sum(qty) FROM points WHERE account_id = {m} AND metric = {m}"
    " AND field = {m} AND start >= {m} AND start < {m}"
)
# export_points' columns and order (the primary key's), without healthlog
SELECT_ROWS = (
    'SELECT account_id, metric, field, source, start, utc_offset, "end", qty, text, unit,'
    " extra, layer_received_at, layer_id FROM points"
    " WHERE account_id = {m} AND metric = {m} AND start >= {m} AND start < {m}"
    " ORDER BY account_id, metric, start, field, source"
)


@dataclass(frozen=True)
class Mode:
    year_days: int
    all_days: int
    export_points: int
    repeats: int


FULL = Mode(year_days=365, all_days=5 * 365 + 1, export_points=1_000_000, repeats=3)
QUICK = Mode(year_days=10, all_days=50, export_points=5_000, repeats=3)


def timed(call: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """The median wall time of ``repeats`` calls, and the last call's result."""
    runs = []
    result = None
    for _ in range(repeats):
        with Stopwatch() as sw:
            result = call()
        runs.append(sw.s)
    return median(runs), result


def profiled(call: Callable[[], Any]) -> dict[str, Any]:
    """One call under cProfile: its time, and the top functions by cumulative time and by
    own time."""
    profiler = cProfile.Profile()
    with Stopwatch() as sw:
        profiler.enable()
        call()
        profiler.disable()
    stats = pstats.Stats(profiler)
    table = stats.stats  # type: ignore[attr-defined]
    return {
        "profiled_s": rounded(sw.s, 3),
        "top_cumulative": ranked_functions(table, 3, sw.s, PROFILE_TOP, "cumulative_s"),
        # the cumulative top is the call's own chain: where the time is spent is here
        "top_own": ranked_functions(table, 2, sw.s, PROFILE_TOP, "own_s"),
    }


def summary(reads: Reads, metric: str, field: str, start: datetime, end: datetime) -> Series:
    """A day a row over [start, end), as ``/api/series`` and ``plot`` ask for it."""
    catalog = reads.catalog()  # read once, for the field and the series
    info = reads.main_field(metric, field, catalog=catalog)
    return reads.series(
        metric,
        field=info.field,
        start=start,
        end=end,
        resolution=Resolution.DAY,
        catalog=catalog,
    )


def scan(conn: Any, marker: str, params: tuple[Any, ...]) -> Callable[[], tuple[int, float]]:
    """The floor: a bare indexed range scan of the rows a read sums up, on an open
    connection (the journal's reads run on its open connection too)."""
    sql = SCAN.format(m=marker)

    def run() -> tuple[int, float]:
        found = conn.execute(sql, params).fetchone()
        return int(found[0]), float(found[1] or 0)

    return run


def measure_summaries(store: Store, account_id: str, mode: Mode, repeats: int) -> dict[str, Any]:
    reads = Reads.of(store.journal, account_id)
    spans = {
        "1y": (END - timedelta(days=mode.year_days), END),
        "5y": (END - timedelta(days=mode.all_days), END),
    }
    out: dict[str, Any] = {}
    for metric, field in SUMMARIES:
        result: dict[str, Any] = {"field": field}
        for label, (start, end) in spans.items():
            note(f"{metric}: a day a row over {label} ({(end - start).days} days)")
            seconds, series = timed(partial(summary, reads, metric, field, start, end), repeats)
            result[label] = {
                "s": rounded(seconds, 4),
                "days": len(series.samples),
                "points": sum(sample.count for sample in series.samples),
            }
        start, end = spans["1y"]
        params = (account_id, metric, field, to_text(start), to_text(end))
        with contextlib.closing(store.connect()) as conn:
            scan_s, (rows, _) = timed(scan(conn, store.marker, params), repeats)
        result["scan_1y"] = {"s": rounded(scan_s, 4), "points": rows}
        if rows != result["1y"]["points"]:
            raise RuntimeError(f"{metric}: the scan found {rows} points, the read counted "
                               f"{result['1y']['points']}")  # fmt: skip
        to_1y = result["5y"]["s"] / result["1y"]["s"]
        to_scan = result["1y"]["s"] / scan_s
        result |= {
            "ratio_5y_to_1y": rounded(to_1y),
            "ratio_1y_to_scan": rounded(to_scan),
            "meets_target": {
                "ratio_5y_to_1y": to_1y <= TARGET_5Y_TO_1Y,
                "ratio_1y_to_scan": to_scan <= TARGET_1Y_TO_SCAN,
            },
        }
        profile: dict[str, Any] = {}
        for target, label in (("ratio_5y_to_1y", "5y"), ("ratio_1y_to_scan", "1y")):
            if not result["meets_target"][target]:
                note(f"{metric}: {target} misses its target; the {label} read under cProfile")
                start, end = spans[label]
                profile[label] = profiled(partial(summary, reads, metric, field, start, end))
        if profile:
            result["profile"] = profile
        out[metric] = result
    return out


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` set, as it was again on the way out."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def export_cli(store: Store, start: datetime, end: datetime, path: Path) -> Callable[[], int]:
    """``healthlog export --metric .. --from .. --to .. -o path``: the points written."""
    argv = ["export", "--metric", EXPORTED, "--format", "csv", "-o", str(path),
            "--from", start.strftime("%Y-%m-%dT%H:%MZ"),
            "--to", end.strftime("%Y-%m-%dT%H:%MZ")]  # fmt: skip

    def run() -> int:
        path.unlink(missing_ok=True)
        with environment(HEALTHLOG_JOURNAL_URL=store.url, HEALTHLOG_LOG_LEVEL="WARNING"):
            status = cli.main(argv)
        if status != 0:
            raise RuntimeError(f"healthlog export exited {status}")
        with path.open("rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b"")) - 1

    return run


def export_floor(store: Store, params: tuple[Any, ...], path: Path) -> Callable[[], int]:
    """The same rows by a bare SELECT, each ``orjson.dumps``-ed to a file: the rows."""
    sql = SELECT_ROWS.format(m=store.marker)

    def run() -> int:
        rows = 0
        with contextlib.closing(store.connect()) as conn, path.open("wb") as out:
            for row in conn.execute(sql, params):
                out.write(orjson.dumps(row) + b"\n")
                rows += 1
        return rows

    return run


def measure_export(
    store: Store, account_id: str, mode: Mode, repeats: int, folder: Path
) -> dict[str, Any]:
    days = math.ceil(mode.export_points / EXPORTED_PER_DAY)
    start = END - timedelta(days=days)
    exported = export_cli(store, start, END, folder / "export.csv")
    floor = export_floor(
        store, (account_id, EXPORTED, to_text(start), to_text(END)), folder / "floor.jsonl"
    )
    export_runs, floor_runs = [], []
    points = rows = 0
    for i in range(repeats):  # alternating: a slow spell of the machine hits both
        note(f"export of {days} days of {EXPORTED}, {i + 1}/{repeats}")
        with Stopwatch() as sw:
            points = exported()
        export_runs.append(sw.s)
        with Stopwatch() as sw:
            rows = floor()
        floor_runs.append(sw.s)
    if points != rows:
        raise RuntimeError(f"export wrote {points} points, the floor's SELECT {rows} rows")
    export_rate = points / median(export_runs)
    floor_rate = rows / median(floor_runs)
    ratio = export_rate / floor_rate
    result: dict[str, Any] = {
        "metric": EXPORTED,
        "days": days,
        "points": points,
        "file_bytes": (folder / "export.csv").stat().st_size,
        "export_s": rounded(median(export_runs), 3),
        "export_points_per_s": round(export_rate),
        "floor_s": rounded(median(floor_runs), 3),
        "floor_points_per_s": round(floor_rate),
        "floor_file_bytes": (folder / "floor.jsonl").stat().st_size,
        "ratio": rounded(ratio),
        "meets_target": ratio >= TARGET_EXPORT,
    }
    if not result["meets_target"]:
        note("export misses its target; once under cProfile")
        result["profile"] = profiled(exported)
    return result


def measure(backend: str, mode: Mode, folder: Path) -> dict[str, Any]:
    with _common.STORES[backend](folder) as store:
        store.journal.migrate()
        account = store.journal.add_account("bench", tokens.hash_token(tokens.new_token()))
        note(f"{backend}: writing {mode.all_days} days of minute-level history")
        written, fill_s = _common.fill(store.journal, account.id, mode.all_days, END)
        db_bytes = store.size()  # SQLite checkpointed, PostgreSQL analyzed: as in use
        summaries = measure_summaries(store, account.id, mode, mode.repeats)
        export = measure_export(store, account.id, mode, mode.repeats, folder)
    met = [target for found in summaries.values() for target in found["meets_target"].values()]
    return {
        "history_points": written,
        "history_days": mode.all_days,
        "history_write_s": rounded(fill_s, 1),
        "db_bytes": db_bytes,
        "summaries": summaries,
        "export": export,
        "meets_target": all(met) and export["meets_target"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 and 50 days for one year and five")
    parser.add_argument("--backend", choices=sorted(_common.STORES), default="sqlite")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    mode = QUICK if args.quick else FULL
    report: dict[str, Any] = {
        "benchmark": "read",
        "mode": "quick" if args.quick else "full",
        "backend": args.backend,
        "machine": machine(),
        "targets": {
            "ratio_5y_to_1y": f"<= {TARGET_5Y_TO_1Y}",
            "ratio_1y_to_scan": f"<= {TARGET_1Y_TO_SCAN}",
            "export_ratio": f">= {TARGET_EXPORT}",
        },
        "days": {"1y": mode.year_days, "5y": mode.all_days},
    }
    reason = _common.pg_unreachable() if args.backend == "postgres" else None
    if reason is not None:
        note(f"postgres unreachable: {reason}")
        report["unavailable"] = reason
        emit(report)
        return 0
    with tempfile.TemporaryDirectory(prefix="healthlog-bench-read-") as tmp:
        report |= measure(args.backend, mode, Path(tmp))
    emit(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
