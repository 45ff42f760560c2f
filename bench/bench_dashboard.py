"""The dashboard's reads over a year of minute-level data: is each page's data there in
a second or two?

The journal (SQLite, the embedded default) holds one account's year: heart rate every
minute (min, avg, max: 1.58 million points), steps on most waking minutes, resting heart
rate once a day, sleep segments every night, a run every other day with its route. It is
written through the real journal (``write_outcome``), one delivery a day that re-sends
the day before it as HAE's *Default* period does (every point arrives twice), and each
day's steps from 15:00 to 16:00 come a delivery late, as a watch that synced late
would send them: those are the late samples coverage must find. Each timed
call goes through the dashboard's own app and read API (``/api/...``, Flask's test
client, no network), as the pages ask for it: the overview, the catalog, a year of
resting heart rate per day, a year of heart rate (auto resolution), one day of heart
rate (auto: minutes), the last month's sleep, last week's workouts and one with its
route, and the coverage of every metric; and each page as it opens (``pages_s``: the
calls its script makes at its default view, the summary on the data's last day, a
metric on its last month), against a second. Before the reads, the fold counts the
days the overlap rule counts otherwise than their sums (``counted_days``), as its
passes do; ``count_days_s`` says how long. The floor, measured in the same run, is one
bare scan of every point (``SELECT count(*), sum(qty) FROM points``): the cost of
reading the data once.

    .venv/bin/python bench/bench_dashboard.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import random
import re
import sqlite3
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import emit, exit_on_sigterm, machine, median, minute_points, note, rounded
from healthlog import ids, reads
from healthlog.config import Settings
from healthlog.dashboard.app import DashboardOptions, create_app
from healthlog.fold.service import FoldService
from healthlog.journal.rows import to_text
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import Item, NewDelivery, ParseStatus, Point, Record
from healthlog.testing import MemoryArchive

#: each call's target, seconds: "within a second or two"
TARGET_S = 2.0
#: each page's, all its calls at its default view ("every page loads in under 1 s")
PAGE_TARGET_S = 1.0
#: no heavy request above this, alone or 8 at once (the read side's issue, item 3)
HEAVY_RSS_MIB = 300
HEAVY_S = 10.0
REPEATS = 3
START = datetime(2025, 1, 1, tzinfo=UTC)
OFFSET = 60  # the phone's offset, minutes


@dataclass(frozen=True)
class Mode:
    days: int


FULL = Mode(days=365)
QUICK = Mode(days=14)


def _t(at: datetime) -> str:
    return to_text(at)


def day_points(day: int, rng: random.Random) -> tuple[list[Point], list[Record]]:
    """One day of a well-instrumented life, as the parser would give it."""
    base = START + timedelta(days=day)
    points = minute_points(base, rng, OFFSET)
    # the Watch counts steps too, on about half the minutes the iPhone does: two sources
    # of one cumulative metric, which the overlap rule counts once (a heavy read's case)
    points += [
        p._replace(source="Watch", qty=(p.qty or 0) + 3)
        for p in points
        if p.metric == "step_count" and rng.random() < 0.5
    ]
    points.append(
        Point("resting_heart_rate", "qty", "Watch", _t(base + timedelta(hours=8)), OFFSET,
              None, 52 + rng.random() * 6, None, "count/min")
    )  # fmt: skip
    night = base - timedelta(hours=1)  # 23:00 local the evening before
    for n, stage in enumerate(("Core", "Deep", "Core", "REM", "Awake", "Core")):
        start = night + timedelta(minutes=70 * n)
        points.append(
            Point("sleep_analysis", "segment", "Watch", _t(start), OFFSET,
                  _t(start + timedelta(minutes=70)), 70 / 60, stage, "hr")
        )  # fmt: skip
    records: list[Record] = []
    if day % 2 == 0:
        start = base + timedelta(hours=17)
        route = tuple(
            Item("route", i, _t(start + timedelta(seconds=5 * i)), None,
                 48.1 + i * 0.00005, 11.5 + i * 0.00003, 520 + math.sin(i / 40) * 10)
            for i in range(540)
        )  # fmt: skip
        heart = tuple(
            Item("heartRateData", i, _t(start + timedelta(minutes=i)), 140 + i % 20, unit="bpm")
            for i in range(45)
        )
        records.append(
            Record("workouts", f"run-{day}", _t(start), _t(start + timedelta(minutes=45)),
                   OFFSET, "Outdoor Run", "Watch", '{"duration":2700}', route + heart)
        )  # fmt: skip
    return points, records


def build(folder: Path, mode: Mode) -> tuple[SqliteJournal, str, float, int, int]:
    journal = SqliteJournal(str(folder / "journal.db"))
    journal.migrate()
    account = journal.add_account("alice", "hash")
    rng = random.Random(11)
    started = time.perf_counter()
    total = late = 0
    before: list[Point] = []  # the day before, sent again (the Default period's window)
    for day in range(mode.days):
        points, records = day_points(day, rng)
        on_time = [p for p in points if not _synced_late(p)]
        late += sum(map(_synced_late, before))
        points, before = before + on_time, [*on_time, *(p for p in points if _synced_late(p))]
        at = START + timedelta(days=day + 1)
        delivery_id = ids.new_delivery_id(at)
        journal.insert_delivery(
            NewDelivery(delivery_id, account.id, at, f"{account.id}/x/{delivery_id}.json", 1,
                        "application/json")
        )  # fmt: skip
        journal.write_outcome(
            delivery_id, expected=ParseStatus.PENDING, status=ParseStatus.PARSED, uncovered=(),
            failure=None, points=points, records=records,
        )  # fmt: skip
        total += len(points)
    return journal, account.id, time.perf_counter() - started, total, late


def _synced_late(p: Point) -> bool:
    """The steps of 15:00-16:00 (UTC): sent a delivery late, older than its bar."""
    return p.metric == "step_count" and p.start[11:13] == "15"


def timed(call: Any) -> tuple[float, Any]:
    runs = []
    result = None
    for _ in range(REPEATS):
        started = time.perf_counter()
        result = call()
        runs.append(time.perf_counter() - started)
    return median(runs), result


def _built(folder: str, days: int) -> tuple[float, int, int, float]:
    """``build`` in a process of its own (the reads below start from a small process),
    then the fold's count of the days the overlap rule counts (``counted_days``), as its
    passes do after folding: how long that took."""
    journal, _, build_s, points, late = build(Path(folder), Mode(days))
    fold = FoldService(journal, MemoryArchive(), Settings.from_env({}))
    started = time.perf_counter()
    while fold.count_days():
        pass
    count_s = time.perf_counter() - started
    journal.close()
    return build_s, points, late, count_s


def _status_kib(field: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def _reset_peak() -> bool:
    """Start this process's peak RSS (VmHWM) again from its RSS now (Linux 4.0 and later)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _mib(kib: int | None) -> float | None:
    return None if kib is None else rounded(kib / 1024, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two weeks instead of a year")
    args = parser.parse_args()
    mode = QUICK if args.quick else FULL
    exit_on_sigterm()
    with tempfile.TemporaryDirectory() as tmp:
        note(f"building {mode.days} days of minute-level data (in a process of its own)")
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            build_s, points, late_sent, count_s = pool.apply(_built, (tmp, mode.days))
        journal = SqliteJournal(str(Path(tmp) / "journal.db"))
        app = create_app(journal, MemoryArchive(), DashboardOptions())
        client = app.test_client()
        end = START + timedelta(days=mode.days)
        stamp = "%Y-%m-%dT%H:%M:%SZ"
        last_day = (end - timedelta(days=1)).strftime(stamp)
        month = (end - timedelta(days=30)).strftime(stamp)
        week = (end - timedelta(days=7)).strftime(stamp)
        # the most hours one read gives (reads.MAX_ROWS buckets), ending at the data's end
        hours_span = (end - timedelta(hours=reads.MAX_ROWS - 48)).strftime(stamp)

        def get(url: str, status: int = 200) -> Any:
            reply = client.get(url)
            assert reply.status_code == status, (url, reply.status_code, reply.get_data()[:200])
            return reply.get_json()

        one = get(f"/api/workouts?start={week}")["workouts"][0]["identity"]
        calls = {
            "overview": "/api/status",
            "catalog": "/api/catalog",
            "resting_heart_rate_per_day": "/api/series?metric=resting_heart_rate&resolution=day",
            "heart_rate_year_auto": "/api/series?metric=heart_rate",
            "heart_rate_last_day_auto": f"/api/series?metric=heart_rate&start={last_day}",
            "sleep_last_month": f"/api/sleep?start={month}",
            "workouts_last_week": f"/api/workouts?start={week}",
            "one_workout_with_route": f"/api/workouts/{one}",
            "coverage_every_metric": "/api/coverage",
        }
        # the heavy questions: the finest the data allows, and what it does not
        heavy_calls = {
            "steps_all_minutes_refused": ("/api/series?metric=step_count&resolution=minute", 400),
            "heart_rate_all_minutes_refused": (
                "/api/series?metric=heart_rate&resolution=minute",
                400,
            ),
            "steps_most_hours_two_sources": (
                f"/api/series?metric=step_count&resolution=hour&start={hours_span}",
                200,
            ),
            "heart_rate_most_hours": (
                f"/api/series?metric=heart_rate&resolution=hour&start={hours_span}",
                200,
            ),
            "heart_rate_raw_year": ("/api/series?metric=heart_rate&resolution=raw", 200),
        }
        # each page as it opens: the API calls its script makes at its default view
        until = (end - timedelta(days=1)).date().isoformat()
        pages = {
            "summary": ["/api/session", f"/api/summary?until={until}"],
            "status": ["/api/session", "/api/status"],
            "coverage": ["/api/session", "/api/coverage"],
            "metrics": ["/api/session", "/api/catalog"],
            "metric_steps": ["/api/session", "/api/series?metric=step_count&range=M"],
            "metric_heart_rate": ["/api/session", "/api/series?metric=heart_rate&range=M"],
            "metric_heart_rate_day": [
                "/api/session",
                f"/api/series?metric=heart_rate&range=D&until={until}",
            ],
            "sleep": ["/api/session", "/api/sleep"],
            "workouts": ["/api/session", "/api/workouts"],
            "workout": ["/api/session", f"/api/workouts/{one}"],
            "records": ["/api/session", "/api/sections"],
            "deliveries": ["/api/session", "/api/deliveries?limit=500"],
        }
        page_s: dict[str, float] = {}
        for name, urls in pages.items():
            note(f"timing the {name} page")
            page_s[name], _ = timed(lambda urls=urls: [get(u) for u in urls])
        seconds: dict[str, float] = {}
        rows: dict[str, int] = {}
        peak_mib: dict[str, float | None] = {}
        measured_peak = _reset_peak()
        rss_before = _mib(_status_kib("VmRSS"))
        for name, (url, status) in {
            **{k: (v, 200) for k, v in calls.items()},
            **heavy_calls,
        }.items():
            note(f"timing {name}")
            _reset_peak()
            seconds[name], answer = timed(lambda url=url, status=status: get(url, status))
            peak_mib[name] = _mib(_status_kib("VmHWM")) if measured_peak else None
            rows[name] = len(str(answer))
            if name == "coverage_every_metric":
                late = sum(m["late_points"] for m in answer["metrics"])
        note("8 heavy requests at once")
        concurrent = _at_once(app, [url for url, status in heavy_calls.values() if status == 200])
        conn = sqlite3.connect(journal.path)
        floor_s, _ = timed(lambda: conn.execute("SELECT count(*), sum(qty) FROM points").fetchone())
        conn.close()
        db_mib = Path(journal.path).stat().st_size / 2**20
        journal.close()
    slowest = max(seconds, key=seconds.__getitem__)
    peaks = [v for v in [*peak_mib.values(), concurrent["peak_rss_mib"]] if v is not None]
    emit(
        {
            "benchmark": "dashboard",
            "mode": "quick" if args.quick else "full",
            "machine": machine(),
            "days": mode.days,
            "points_sent": points,
            "late_points_sent": late_sent,
            "late_points_found": late,
            "build_s": rounded(build_s),
            "count_days_s": rounded(count_s),
            "db_mib": rounded(db_mib, 1),
            "floor_full_scan_s": rounded(floor_s, 4),
            "seconds": {k: rounded(v, 4) for k, v in seconds.items()},
            "ratio_to_floor": {k: rounded(v / floor_s, 2) for k, v in seconds.items()},
            "rss_before_mib": rss_before,
            "peak_rss_mib": peak_mib,
            "at_once": concurrent,
            "answer_chars": rows,
            "pages_s": {k: rounded(v, 4) for k, v in page_s.items()},
            "page_target_s": PAGE_TARGET_S,
            "slowest_page": max(page_s, key=page_s.__getitem__),
            "pages_meet_target": max(page_s.values()) <= PAGE_TARGET_S,
            "slowest": slowest,
            "target_s": TARGET_S,
            "meets_target": seconds[slowest] <= TARGET_S,
            "heavy_target": {"rss_mib": HEAVY_RSS_MIB, "s": HEAVY_S},
            "meets_heavy_target": bool(peaks)
            and max(peaks) <= HEAVY_RSS_MIB
            and max([*seconds.values(), concurrent["slowest_s"]]) <= HEAVY_S,
        }
    )


def _at_once(app: Any, urls: list[str], n: int = 8) -> dict[str, Any]:
    """``n`` heavy requests at once (the URLs in turn), each on a client of its own: how
    long the slowest took, how many were answered and how many were told "busy" (503),
    and the process's peak RSS meanwhile."""
    measured = _reset_peak()
    start = threading.Barrier(n)
    took: list[float] = []
    statuses: list[int] = []
    lock = threading.Lock()

    def one(url: str) -> None:
        client = app.test_client()
        start.wait()
        began = time.perf_counter()
        status = client.get(url).status_code
        with lock:
            took.append(time.perf_counter() - began)
            statuses.append(status)

    threads = [threading.Thread(target=one, args=(urls[i % len(urls)],)) for i in range(n)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {
        "requests": n,
        "wall_s": rounded(time.perf_counter() - began, 3),
        "slowest_s": rounded(max(took), 3),
        "answered": statuses.count(200),
        "busy": statuses.count(503),
        "other": len([s for s in statuses if s not in (200, 503)]),
        "peak_rss_mib": _mib(_status_kib("VmHWM")) if measured else None,
    }


if __name__ == "__main__":
    sys.exit(main())
