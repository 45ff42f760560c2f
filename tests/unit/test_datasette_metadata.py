"""docs/datasette-metadata.json: it names the real schema, closes the secrets, and its canned
queries give the numbers healthlog.reads gives (run with sqlite3: Datasette is not needed)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from healthlog.journal.port import Journal
from healthlog.reads import Reads, Resolution

from tests.unit.test_reads import Deliveries, hr, night, pt, segment

METADATA = Path(__file__).resolve().parents[2] / "docs" / "datasette-metadata.json"
SECRETS = {"accounts": "token_hash", "deliveries": "headers"}


def metadata() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(METADATA.read_text(encoding="utf-8"))
    return loaded


def database() -> dict[str, Any]:
    (name,) = metadata()["databases"]
    assert name == "healthlog"  # Datasette names a database by its file: var/healthlog.db
    found: dict[str, Any] = metadata()["databases"][name]
    return found


def columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


@pytest.fixture
def db_path(journal: Journal, tmp_path: Path) -> Path:
    return tmp_path / "journal.db"  # the conftest journal's file, migrated


def read_only(path: Path) -> sqlite3.Connection:
    """A connection as Datasette opens a database that may change: read-only."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def test_every_table_and_column_named_exists_and_the_showcase_is_described(db_path: Path) -> None:
    conn = read_only(db_path)
    tables = {
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
    }
    described = database()["tables"]
    assert set(described) == tables  # every table: described, or hidden on purpose
    for table, meta in described.items():
        assert meta.get("description"), table
        named = set(meta.get("columns", {})) | set(meta.get("sortable_columns", []))
        named |= set(meta.get("facets", []))
        assert named <= set(columns(conn, table)), table
    for table in ("points", "records", "record_items", "record_series"):
        assert set(described[table]["columns"]) == set(columns(conn, table)), table


def test_the_secrets_are_closed(db_path: Path) -> None:
    meta = database()
    for table, column in SECRETS.items():
        assert meta["tables"][table]["hidden"] is True
        assert meta["tables"][table]["allow"] is False  # no table page, no row page
        assert column not in meta["tables"][table].get("columns", {})
    # a column cannot be hidden by metadata, and free SQL could read any: it is off
    assert meta["allow_sql"] is False
    for name, query in meta["queries"].items():
        for column in SECRETS.values():
            assert column not in query["sql"], name
    conn = read_only(db_path)
    for table, column in SECRETS.items():
        assert column in columns(conn, table)  # what the metadata closes is really there


@pytest.fixture
def filled(journal: Journal) -> Reads:
    alice = journal.add_account("alice", "hash-of-alice")
    send = Deliveries(journal, alice)
    send.send(
        [
            pt("step_count", "2026-03-02 00:30", 10),
            pt("step_count", "2026-03-02 08:00", 100),
            # another source, not at the same time: healthlog's reads count it too
            pt("step_count", "2026-03-02 08:30", 5, source="Phone"),
            pt("step_count", "2026-03-02 23:30", 40),
            pt("step_count", "2026-03-03 09:00", 7, offset=-240),  # 13:00 UTC, New York
            *(
                pt("resting_heart_rate", f"2026-03-{day:02d} 07:00", bpm, unit="count/min")
                for day, bpm in ((2, 55), (4, 58), (8, 61), (9, 52), (15, 50))
            ),
            *hr("2026-03-02 09:00", 50, 60, 90),
            segment("2026-03-02 23:00", "2026-03-03 01:00", "Core", 2.0),
            segment("2026-03-03 01:00", "2026-03-03 02:30", "Deep", 1.5),
            segment("2026-03-03 02:30", "2026-03-03 02:45", "Awake", 0.25),
            segment("2026-03-03 02:45", "2026-03-03 04:45", "REM", None),
            segment("2026-03-03 02:00", "2026-03-03 06:00", "Core", 4.0, source="Phone"),
            *night("2026-03-05 00:00", totalSleep=7.0, core=4.0, deep=1.0, rem=2.0, awake=0.5),
            *night("2026-03-05 00:00", source="Ring", totalSleep=6.0, asleep=6.0, inBed=7.0),
            *night("2026-03-06 00:00", source="Ring", totalSleep=6.5),
        ]
    )
    bob = journal.add_account("bob", "hash-of-bob")
    Deliveries(journal, bob).send(
        [
            pt("step_count", "2026-03-02 12:00", 1000),
            pt("resting_heart_rate", "2026-03-02 07:00", 90, unit="count/min"),
            *night("2026-03-05 00:00", totalSleep=9.0, asleep=9.0),
        ]
    )
    return Reads(journal, alice)


def run(path: Path, name: str, account: str = "alice") -> list[tuple[Any, ...]]:
    sql = database()["queries"][name]["sql"]
    conn = read_only(path)
    try:
        return [tuple(row) for row in conn.execute(sql, {"account": account})]
    finally:
        conn.close()


def test_steps_per_day_are_the_day_sums_of_reads(filled: Reads, db_path: Path) -> None:
    reads = filled
    rows = run(db_path, "steps_per_day")
    series = reads.series("step_count", resolution=Resolution.DAY)
    assert rows == [(s.t, round(s.value or 0), s.count) for s in reversed(series.samples)]
    assert rows == [("2026-03-03", 7.0, 1), ("2026-03-02", 155.0, 4)]
    everyone = dict((day, steps) for day, steps, _ in run(db_path, "steps_per_day", ""))
    assert everyone["2026-03-02"] == 1155.0


def test_sleep_per_night_is_what_reads_keeps(filled: Reads, db_path: Path) -> None:
    reads = filled
    rows = run(db_path, "sleep_per_night")
    nights = reads.sleep_nights()
    assert [(n, h, s) for n, h, s in reversed(rows)] == [
        (x.night, round(x.asleep_h, 2), x.source) for x in nights
    ]
    assert rows == [
        ("2026-03-06", 6.5, "Ring"), ("2026-03-05", 7.0, "Watch"), ("2026-03-03", 5.5, "Watch"),
    ]  # fmt: skip
    # every account: a row per account and night (bob slept 9 hours that night)
    everyone = [row[:2] for row in run(db_path, "sleep_per_night", "")]
    assert everyone.count(("2026-03-05", 9.0)) == everyone.count(("2026-03-05", 7.0)) == 1


def test_resting_heart_rate_per_week(filled: Reads, db_path: Path) -> None:
    reads = filled
    rows = run(db_path, "resting_heart_rate_per_week")
    weeks = reads.series("resting_heart_rate", resolution=Resolution.WEEK).samples
    assert rows == [(w.t, round(w.value or 0, 1), w.min, w.max, w.count) for w in reversed(weeks)]
    assert rows == [
        ("2026-03-09", 51.0, 50.0, 52.0, 2), ("2026-03-02", 58.0, 55.0, 61.0, 3),
    ]  # fmt: skip


def test_metrics_lists_fields_with_their_days(filled: Reads, db_path: Path) -> None:
    reads = filled
    rows = {(r[0], r[1]): r[2:] for r in run(db_path, "metrics")}
    for info in reads.catalog():
        unit, points, _first, _last = rows[(info.metric, info.field)]
        assert (unit, points) == (info.unit, info.points)
    assert rows[("step_count", "qty")] == ("count", 5, "2026-03-02", "2026-03-03")
    assert run(db_path, "metrics", "nobody") == []
