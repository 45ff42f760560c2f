"""The fold of one ~10 MB metrics body against its floor, read JSON + one bulk insert.

The fold is the real path: the body is archived in a LocalArchive and journalled as a
pending delivery in a SqliteJournal (as ingest leaves it), then
``Player(journal, archive).play(id)`` is timed: journal reads, the attempt count, the
archive read, the parser, and the points upserted with the outcome in one transaction.

The floor, on the same machine in the same run, is the least any fold of these bytes
must do: ``orjson.loads`` the body and ``executemany`` the same number of rows, with as
many columns as the showcase's ``points`` table and values taken from the loaded JSON,
into a bare table (no key, no index) of a fresh WAL database, in one transaction.

    .venv/bin/python bench/bench_fold.py [--quick]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from _common import (
    KB,
    MB,
    Stopwatch,
    emit,
    exit_on_sigterm,
    machine,
    median,
    metrics_body,
    note,
    rounded,
)
from healthlog import ids, tokens
from healthlog.archive.keys import body_key
from healthlog.archive.local import LocalArchive
from healthlog.fold.player import Player
from healthlog.hae import parse
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import NewDelivery, OutcomeClass

TARGET_RATIO = 0.8  # issue #13, item 2 (it was 0.5)
RECEIVED_AT = datetime(2026, 1, 1, tzinfo=UTC)
# heart_rate points become one row per summary field, as the parser makes them
_SUMMARY = ("Min", "Avg", "Max")
_QTY = ("qty",)


@dataclass(frozen=True)
class Mode:
    body_bytes: int
    repeats: int


FULL = Mode(10 * MB, 3)
QUICK = Mode(200 * KB, 1)


@dataclass(frozen=True)
class FoldRun:
    fold_s: float
    cpu_s: float
    points: int
    columns: tuple[str, ...]


@dataclass(frozen=True)
class FloorRun:
    floor_s: float
    cpu_s: float
    loads_s: float
    rows_s: float
    insert_s: float
    rows: int


def fold_once(body: bytes, folder: Path) -> FoldRun:
    """Archive and journal ``body`` as a pending delivery, then time its fold."""
    journal = SqliteJournal(str(folder / "journal.db"))
    try:
        journal.migrate()
        account = journal.add_account("bench", tokens.hash_token(tokens.new_token()))
        archive = LocalArchive(folder / "archive")
        delivery_id = ids.new_delivery_id(RECEIVED_AT)
        key = body_key(account.id, delivery_id, "application/json")
        archive.put(key, body)
        journal.insert_delivery(
            NewDelivery(
                id=delivery_id,
                account_id=account.id,
                received_at=RECEIVED_AT,
                archive_key=key,
                size=len(body),
                content_type="application/json",
            )
        )
        player = Player(journal, archive)
        with Stopwatch() as sw:
            outcome = player.play(delivery_id)
        if outcome.klass is not OutcomeClass.PARSED:
            raise RuntimeError(f"the fold did not parse the body: {outcome}")
    finally:
        journal.close()
    return FoldRun(sw.s, sw.cpu_s, outcome.points, points_columns(folder / "journal.db"))


def points_columns(path: Path) -> tuple[str, ...]:
    """The showcase table's column names, read from the journal itself."""
    with sqlite3.connect(path) as conn:
        return tuple(row[1] for row in conn.execute("PRAGMA table_info(points)"))


def floor_once(body: bytes, path: Path, columns: tuple[str, ...]) -> FloorRun:
    """``orjson.loads`` + one ``executemany`` of one row per point into a bare table."""
    names = ", ".join(f'"{c}"' for c in columns)
    insert = f"INSERT INTO points ({names}) VALUES ({', '.join('?' * len(columns))})"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")  # as the journal commits
        conn.execute(f"CREATE TABLE points ({names})")
        with Stopwatch() as loads:
            document = orjson.loads(body)
        with Stopwatch() as build:
            rows = floor_rows(document, len(columns))
        with Stopwatch() as write:
            conn.execute("BEGIN")
            conn.executemany(insert, rows)
            conn.execute("COMMIT")
    finally:
        conn.close()
    cpu_s = loads.cpu_s + build.cpu_s + write.cpu_s
    return FloorRun(loads.s + build.s + write.s, cpu_s, loads.s, build.s, write.s, len(rows))


def floor_rows(document: Any, width: int) -> list[tuple[object, ...]]:
    """One row per value, as wide as the showcase, its values straight from the JSON."""
    account, layer_at, layer_id = "account", "2026-01-01T00:00:00.000000Z", "delivery"
    rows: list[tuple[object, ...]] = []
    append = rows.append
    for metric in document["data"]["metrics"]:
        name, unit = metric["name"], metric["units"]
        for p in metric["data"]:
            for key in _QTY if "qty" in p else _SUMMARY:
                # account, metric, field, source, start, utc_offset, end, qty, text,
                # unit, extra, layer_received_at, layer_id, seq
                append(
                    (
                        account,
                        name,
                        key,
                        p["source"],
                        p["date"],
                        None,
                        None,
                        p[key],
                        None,
                        unit,
                        None,
                        layer_at,
                        layer_id,
                        0,
                    )
                )
    if rows and len(rows[0]) != width:
        raise RuntimeError(f"the floor's rows have {len(rows[0])} columns, points has {width}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a ~200 KB body, one run")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    mode = QUICK if args.quick else FULL

    body = metrics_body(mode.body_bytes)
    folds: list[FoldRun] = []
    floors: list[FloorRun] = []
    parses: list[float] = []
    with tempfile.TemporaryDirectory(prefix="healthlog-bench-fold-") as tmp:
        for i in range(mode.repeats):
            note(f"run {i + 1}/{mode.repeats}: fold, parse alone, floor")
            run = Path(tmp) / f"run{i}"
            run.mkdir()
            folds.append(fold_once(body, run / "fold"))
            with Stopwatch() as sw:
                parse(body)
            parses.append(sw.s)
            floors.append(floor_once(body, run / "floor.db", folds[-1].columns))

    points = folds[0].points
    if any(f.points != points for f in folds) or any(f.rows != points for f in floors):
        raise RuntimeError("the fold and the floor did not handle the same number of rows")
    fold_s = median([f.fold_s for f in folds])
    floor_s = median([f.floor_s for f in floors])
    parse_s = median(parses)
    fold_pps = points / fold_s
    fold_cpu_s = median([f.cpu_s for f in folds])
    floor_cpu_s = median([f.cpu_s for f in floors])
    floor_pps = points / floor_s
    emit(
        {
            "benchmark": "fold",
            "mode": "quick" if args.quick else "full",
            "machine": machine(),
            "body_bytes": len(body),
            "points": points,
            "repeats": mode.repeats,
            "fold_s": rounded(fold_s, 4),
            "fold_points_per_s": round(fold_pps),
            "floor_s": rounded(floor_s, 4),
            "floor_points_per_s": round(floor_pps),
            "ratio": rounded(fold_pps / floor_pps),
            "target_ratio": TARGET_RATIO,
            "meets_target": fold_pps / floor_pps >= TARGET_RATIO,
            # the same comparison in this process's CPU time: steadier when other work
            # shares the machine (it leaves out the commits' fsync waits on both sides)
            "fold_cpu_s": rounded(fold_cpu_s, 4),
            "floor_cpu_s": rounded(floor_cpu_s, 4),
            "cpu_ratio": rounded(floor_cpu_s / fold_cpu_s),
            "fold_breakdown": {
                "parse_s": rounded(parse_s, 4),
                "parse_points_per_s": round(points / parse_s),
                # journal reads, the archive read, the upserts and the commit
                "rest_s": rounded(max(fold_s - parse_s, 0.0), 4),
            },
            "floor_breakdown": {
                "loads_s": rounded(median([f.loads_s for f in floors]), 4),
                "rows_s": rounded(median([f.rows_s for f in floors]), 4),
                "insert_s": rounded(median([f.insert_s for f in floors]), 4),
            },
            "runs_fold_s": [rounded(f.fold_s, 4) for f in folds],
            "runs_floor_s": [rounded(f.floor_s, 4) for f in floors],
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
