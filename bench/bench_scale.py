"""Costs flat as the store grows: the same fold into an empty showcase and a full one.

One account's history is written through the real journal (``write_outcome``, a delivery
a day): heart rate every minute (min, avg, max) and steps on most waking minutes, about
4 900 points a day, up to ``--points`` (10 million: five and a half years of one
person's minute-level data). Then the fold benchmark's metrics body (``bench_fold``'s,
the real fold: archive read, parse, write) is folded into that store and into an empty
one, on SQLite and on PostgreSQL. Each repeat folds a body of the same shape on days of
its own after the history, so each fold brings new points, as the next day's delivery
does. The ratio is the empty store's time over the full store's: 1.0 is flat, the
target is at least 0.8.

It also reports the database's bytes per point (SQLite: the file after a checkpoint;
PostgreSQL: the showcase's tables with their indexes) and what a year of this
profile's minute-level data adds.

    .venv/bin/python bench/bench_scale.py [--quick] [--points N] [--backend sqlite|postgres]

PostgreSQL: ``HEALTHLOG_BENCH_PG_URL`` (default the local server's ``postgres``
database, as the tests use it); a database of its own is created and dropped. When the
server cannot be reached, that backend's entry says why instead of figures.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import _common
from _common import (
    Stopwatch,
    emit,
    exit_on_sigterm,
    machine,
    median,
    metrics_body,
    minute_points,
    note,
    rounded,
)
from healthlog import ids, tokens
from healthlog.archive.keys import body_key
from healthlog.archive.local import LocalArchive
from healthlog.fold.player import Player
from healthlog.journal.core import SqlJournal
from healthlog.model import NewDelivery, OutcomeClass

TARGET_RATIO = 0.8
#: the history ends the day before the bodies' own days begin
BODIES_START = datetime(2024, 6, 1, tzinfo=UTC)
OFFSET = _common.HISTORY_OFFSET


@dataclass(frozen=True)
class Mode:
    history_points: int
    body_bytes: int
    repeats: int


FULL = Mode(10_000_000, 2_000_000, 3)
QUICK = Mode(100_000, 200_000, 1)


def fill(journal: SqlJournal, account_id: str, points: int) -> tuple[int, int, float]:
    """Write about ``points`` of history (``_common.fill``), ending before BODIES_START.

    Returns (points written, days, seconds).
    """
    per_day = len(minute_points(BODIES_START, random.Random(5), OFFSET))
    days = max(1, round(points / per_day))
    written, seconds = _common.fill(journal, account_id, days, BODIES_START)
    return written, days, seconds


def bodies(mode: Mode) -> list[bytes]:
    """A body per repeat, the same shape, each on days of its own after the history."""
    out = []
    for i in range(mode.repeats):
        _common._START = BODIES_START + timedelta(days=30 * i)  # the body's days
        out.append(metrics_body(mode.body_bytes))
    _common._START = BODIES_START
    return out


def fold(journal: SqlJournal, archive: LocalArchive, account_id: str, body: bytes) -> float:
    """Archive and journal ``body``, then time its fold (the real player)."""
    at = datetime.now(UTC)
    delivery_id = ids.new_delivery_id(at)
    key = body_key(account_id, delivery_id, "application/json")
    archive.put(key, body)
    journal.insert_delivery(
        NewDelivery(delivery_id, account_id, at, key, len(body), "application/json")
    )
    with Stopwatch() as sw:
        outcome = Player(journal, archive).play(delivery_id)
    if outcome.klass is not OutcomeClass.PARSED:
        raise RuntimeError(f"the fold did not parse the body: {outcome}")
    return sw.s


def measure(backend: str, mode: Mode, history: int, folder: Path) -> dict[str, Any]:
    store_of = _common.STORES[backend]
    sent = bodies(mode)
    empty_s: list[float] = []
    for i, body in enumerate(sent):
        note(f"{backend}: fold {i + 1}/{len(sent)} into an empty store")
        run = folder / f"{backend}-empty-{i}"
        run.mkdir()
        with store_of(run) as store:
            store.journal.migrate()
            account = store.journal.add_account("bench", tokens.hash_token(tokens.new_token()))
            empty_s.append(fold(store.journal, LocalArchive(run / "archive"), account.id, body))
    run = folder / f"{backend}-full"
    run.mkdir()
    with store_of(run) as store:
        store.journal.migrate()
        account = store.journal.add_account("bench", tokens.hash_token(tokens.new_token()))
        empty_bytes = store.size()
        note(f"{backend}: writing {history:,} points of history")
        written, days, fill_s = fill(store.journal, account.id, history)
        full_bytes = store.size()
        full_s = []
        archive = LocalArchive(run / "archive")
        for i, body in enumerate(sent):
            note(f"{backend}: fold {i + 1}/{len(sent)} into the full store")
            full_s.append(fold(store.journal, archive, account.id, body))
    per_point = (full_bytes - empty_bytes) / written
    per_year = per_point * written / days * 365
    ratio = median(empty_s) / median(full_s)
    return {
        "history_points": written,
        "history_days": days,
        "history_write_s": rounded(fill_s, 1),
        "history_points_per_s": round(written / fill_s),
        "body_bytes": len(sent[0]),
        "fold_empty_s": rounded(median(empty_s), 4),
        "fold_full_s": rounded(median(full_s), 4),
        "runs_empty_s": [rounded(s, 4) for s in empty_s],
        "runs_full_s": [rounded(s, 4) for s in full_s],
        "ratio": rounded(ratio),
        "target_ratio": TARGET_RATIO,
        "meets_target": ratio >= TARGET_RATIO,
        "db_bytes": full_bytes,
        "bytes_per_point": round(per_point, 1),
        "mib_per_year_of_this_profile": rounded(per_year / 2**20, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 000 points of history")
    parser.add_argument("--points", type=int, help="points of history (default 10 million)")
    parser.add_argument("--backend", choices=sorted(_common.STORES), action="append")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    mode = QUICK if args.quick else FULL
    history = args.points or mode.history_points
    report: dict[str, Any] = {
        "benchmark": "scale",
        "mode": "quick" if args.quick else "full",
        "machine": machine(),
    }
    with tempfile.TemporaryDirectory(prefix="healthlog-bench-scale-") as tmp:
        for backend in args.backend or sorted(_common.STORES):
            folder = Path(tmp) / backend
            folder.mkdir()
            reason = _common.pg_unreachable() if backend == "postgres" else None
            if reason is not None:
                report[backend] = {"unavailable": reason}
                continue
            report[backend] = measure(backend, mode, history, folder)
    emit(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
