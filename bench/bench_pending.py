"""The fold's queue lookup with a thousand and with a million deliveries journalled.

Steady state: nearly every delivery is folded (``parsed``) and the newest ~100 are
``pending``. The big journal is built fast with direct SQL inside the SqliteJournal's
own database file (a fixture: one INSERT ... SELECT from a recursive CTE, its columns
checked against the table's schema), but every timed lookup goes through the real
adapter method, ``journal.pending_page(cursor, 100)``, from the zero cursor and from a
cursor in the middle of the folded history. The floor is the same lookup on the small
journal: with the partial index, ``ratio_1m_to_1k`` should be about 1.

    .venv/bin/python bench/bench_pending.py [--quick]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _common import Stopwatch, emit, exit_on_sigterm, machine, median, note, percentile, rounded
from healthlog import tokens
from healthlog.journal.port import ZERO_CURSOR
from healthlog.journal.rows import from_text, to_text
from healthlog.journal.sqlite import SqliteJournal
from healthlog.journal.statements import Statements
from healthlog.model import Cursor

PAGE = 100
PENDING = 100
LOOKUPS = 200
WARMUP = 20
# the first delivery's time; one delivery a second after it (1M seconds is ~12 days)
EPOCH_S = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp())

# How the fixture fills each column of ``deliveries`` for row number ``i`` (0-based);
# :n is the row count and :pending how many of the newest rows stay pending. Columns
# not named here must have a default (checked against the schema before the build).
_PENDING_ROW = "i >= :n - :pending"
_AT = "strftime('%Y-%m-%dT%H:%M:%S', :epoch + i, 'unixepoch') || '.000000Z'"
FILL = {
    "id": "printf('00000000-0000-7000-8000-%012d', i)",
    "account_id": ":account",
    "received_at": _AT,
    "archive_key": "printf('%s/bench/%012d.json', :account, i)",
    "size": "100000",
    "content_type": "'application/json'",
    "status": f"CASE WHEN {_PENDING_ROW} THEN 'pending' ELSE 'parsed' END",
    "points": f"CASE WHEN {_PENDING_ROW} THEN 0 ELSE 1440 END",
    "folded_at": f"CASE WHEN {_PENDING_ROW} THEN NULL ELSE {_AT} END",
}


@dataclass(frozen=True)
class Mode:
    sizes: tuple[int, ...]


FULL = Mode((1_000, 1_000_000))
QUICK = Mode((1_000, 20_000))


def check_fill(conn: sqlite3.Connection) -> None:
    """Every column the fixture fills exists, and every other one has a default."""
    # cid, name, type, notnull, dflt_value, pk
    schema = {row[1]: row for row in conn.execute("PRAGMA table_info(deliveries)")}
    unknown = set(FILL) - set(schema)
    unfilled = [
        name
        for name, row in schema.items()
        if name not in FILL and row[3] and row[4] is None and not row[5]
    ]
    if unknown or unfilled:
        raise RuntimeError(
            f"the deliveries schema changed: unknown {sorted(unknown)}, unfilled {unfilled}"
        )


def build(path: Path, rows: int) -> str:
    """A migrated journal at ``path`` with ``rows`` deliveries; returns the account id."""
    journal = SqliteJournal(str(path))
    try:
        journal.migrate()
        account = journal.add_account("bench", tokens.hash_token(tokens.new_token()))
    finally:
        journal.close()
    columns = ", ".join(FILL)
    values = ", ".join(FILL.values())
    sql = (
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < :n)"
        f" INSERT INTO deliveries ({columns}) SELECT {values} FROM n"
    )
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        # a throwaway fixture: no fsync, a big cache
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -262144")
        check_fill(conn)
        conn.execute("BEGIN")
        conn.execute(sql, {"n": rows, "pending": PENDING, "epoch": EPOCH_S, "account": account.id})
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        counts = dict(conn.execute("SELECT status, count(*) FROM deliveries GROUP BY status"))
    finally:
        conn.close()
    if counts.get("pending") != min(PENDING, rows) or sum(counts.values()) != rows:
        raise RuntimeError(f"the fixture came out wrong: {counts}")
    return account.id


def mid_cursor(path: Path, rows: int) -> Cursor:
    """The cursor of the folded delivery halfway through the journal."""
    conn = sqlite3.connect(path)
    try:
        received_at, delivery_id = conn.execute(
            "SELECT received_at, id FROM deliveries ORDER BY received_at, id LIMIT 1 OFFSET ?",
            (rows // 2,),
        ).fetchone()
    finally:
        conn.close()
    return Cursor(from_text(received_at), delivery_id)


def query_plan(path: Path, cursor: Cursor) -> str:
    conn = sqlite3.connect(path)
    try:
        params = {"received_at": to_text(cursor.received_at), "id": cursor.id, "limit": PAGE}
        sql = Statements.load("sqlite", param=":{}")["pending_page"]
        rows = conn.execute("EXPLAIN QUERY PLAN " + sql, params)
        return " | ".join(row[3] for row in rows)
    finally:
        conn.close()


def time_lookups(journal: SqliteJournal, cursor: Cursor) -> dict[str, Any]:
    """``LOOKUPS`` timed calls of ``pending_page(cursor, PAGE)`` through the adapter."""
    expected = len(journal.pending_page(cursor, PAGE))
    for _ in range(WARMUP):
        journal.pending_page(cursor, PAGE)
    times: list[float] = []
    for _ in range(LOOKUPS):
        t0 = time.perf_counter_ns()
        page = journal.pending_page(cursor, PAGE)
        times.append((time.perf_counter_ns() - t0) / 1000)
        if len(page) != expected:
            raise RuntimeError("the page changed between lookups")
    if expected != min(PAGE, PENDING):
        raise RuntimeError(f"expected {min(PAGE, PENDING)} pending rows, got {expected}")
    return {
        "rows": expected,
        "median_us": rounded(median(times), 1),
        "p99_us": rounded(percentile(times, 99), 1),
    }


def measure(folder: Path, rows: int) -> tuple[dict[str, Any], str]:
    path = folder / f"journal-{rows}.db"
    note(f"building {rows} deliveries")
    with Stopwatch() as sw:
        build(path, rows)
    note(f"built in {sw.s:.1f} s; timing {LOOKUPS} lookups from two cursors")
    middle = mid_cursor(path, rows)
    journal = SqliteJournal(str(path))
    try:
        result = {
            "deliveries": rows,
            "pending": PENDING,
            "build_s": rounded(sw.s, 2),
            "db_mib": rounded(path.stat().st_size / 2**20, 1),
            "zero_cursor": time_lookups(journal, ZERO_CURSOR),
            "mid_cursor": time_lookups(journal, middle),
        }
    finally:
        journal.close()
    plan = query_plan(path, middle)
    path.unlink()  # the big file goes as soon as it has been measured
    return result, plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 000 vs 20 000 deliveries")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    mode = QUICK if args.quick else FULL

    sizes: dict[str, dict[str, Any]] = {}
    plans: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="healthlog-bench-pending-") as tmp:
        for rows in mode.sizes:
            sizes[str(rows)], plan = measure(Path(tmp), rows)
            plans.add(plan)

    small, large = (sizes[str(n)] for n in (mode.sizes[0], mode.sizes[-1]))

    def ratio(cursor: str) -> float:
        return rounded(large[cursor]["median_us"] / small[cursor]["median_us"], 2)

    report: dict[str, Any] = {
        "benchmark": "pending",
        "mode": "quick" if args.quick else "full",
        "machine": machine(),
        "page_size": PAGE,
        "lookups": LOOKUPS,
        "sizes": sizes,
        "ratio_large_to_small": ratio("zero_cursor"),
        "ratio_large_to_small_mid_cursor": ratio("mid_cursor"),
        "target_ratio": "about 1 (no slower with more folded deliveries)",
        "query_plan": " ; ".join(sorted(plans)),
    }
    if mode.sizes == FULL.sizes:
        report["ratio_1m_to_1k"] = report["ratio_large_to_small"]
    emit(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
