"""A bounded load on loopback: thousands of deliveries while passes run, on SQLite.

The ingest and fold functions run as real servers; ingest wakes the fold after each
delivery, so passes write to the journal while the clients post. Every reply must be
200 or the documented 503 with Retry-After (a client then sends the body again, as
the phone does); every 200 must be journalled with its body archived byte for byte;
a last synchronous pass folds everything. Throughput and latency are printed.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import requests
from healthlog.archive.local import LocalArchive
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import ParseStatus

from tests.integration.servers import function_server
from tests.reliability.conftest import Figures
from tests.reliability.harness import Attempt, new_account, post, steps_body

pytestmark = pytest.mark.slow

DELIVERIES = 3000
CLIENTS = 16
ACCOUNTS = 4
POINTS = 10
DEADLINE_S = 90.0
DRAIN_DEADLINE_S = 120.0
RESEND_PAUSE_S = 0.1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _pending(db: Path) -> int:
    journal = SqliteJournal(str(db))
    try:
        return journal.count_pending()
    finally:
        journal.close()


def test_thousands_of_deliveries_under_running_passes_are_all_accounted_for(
    tmp_path: Path, figures: Figures
) -> None:
    db = tmp_path / "journal.db"
    journal = SqliteJournal(str(db))
    journal.migrate()
    tokens = [new_account(journal, f"user{n}")[1] for n in range(ACCOUNTS)]
    journal.close()
    # overlapping windows: each delivery re-sends part of the one before it
    bodies = [
        steps_body(i, points=POINTS, start_minute=(i // ACCOUNTS) * (POINTS // 2))
        for i in range(DELIVERIES)
    ]
    env = {
        "HEALTHLOG_JOURNAL_URL": f"sqlite:///{db}",
        "HEALTHLOG_ARCHIVE_URL": f"file://{tmp_path}/archive",
        "HEALTHLOG_LOG_LEVEL": "WARNING",
    }
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(DELIVERIES):
        todo.put(i)
    attempts: list[Attempt] = []
    lock = threading.Lock()

    with function_server("fold", env, log_dir=tmp_path) as fold:
        ingest_env = {**env, "HEALTHLOG_FOLD_URL": fold.url}
        with function_server("ingest", ingest_env, log_dir=tmp_path) as ingest:
            started = time.monotonic()
            deadline = started + DEADLINE_S

            def client() -> None:
                session = requests.Session()
                while time.monotonic() < deadline:
                    try:
                        i = todo.get_nowait()
                    except queue.Empty:
                        return
                    headers = {"Authorization": f"Bearer {tokens[i % ACCOUNTS]}"}
                    while time.monotonic() < deadline:
                        attempt = post(session, ingest.url, i, bodies[i], headers)
                        with lock:
                            attempts.append(attempt)
                        if attempt.status != 503:
                            break
                        time.sleep(RESEND_PAUSE_S)

            threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=DEADLINE_S + 30)
            duration = time.monotonic() - started
            waiting = _pending(db)  # what the passes beside the load had not folded yet

            # then a synchronous pass (after any running one) until nothing waits
            drained = time.monotonic()
            passes = 0
            while True:
                reply = requests.post(fold.url + "?wait=1", timeout=DRAIN_DEADLINE_S)
                assert reply.status_code == 200, reply.text
                passes += 1
                report = reply.json()
                if report["stopped"] is None and report["deferred"] == 0:
                    break
                assert time.monotonic() - drained < DRAIN_DEADLINE_S, report
            drain_s = time.monotonic() - drained

    statuses = Counter(a.status for a in attempts)
    assert set(statuses) <= {200, 503}, {a.error for a in attempts if a.status != 200}
    assert all(a.retry_after for a in attempts if a.status == 503)
    ok = [a for a in attempts if a.status == 200]
    assert sorted(a.body for a in ok) == list(range(DELIVERIES)), "not every body got its 200"

    journal = SqliteJournal(str(db))
    archive = LocalArchive(tmp_path / "archive")
    try:
        for a in ok:
            assert a.delivery_id is not None
            delivery = journal.get_delivery(a.delivery_id)
            assert delivery is not None
            assert archive.read(delivery.archive_key) == bodies[a.body]
        counts = journal.summary().counts
        assert counts == {
            ParseStatus.PENDING.value: 0,
            ParseStatus.PARSED.value: len(ok),
            ParseStatus.PARTIAL.value: 0,
            ParseStatus.FAILED.value: 0,
        }
        points = journal.summary().points
    finally:
        journal.close()

    latencies = [a.latency_s for a in ok]
    figures(
        deliveries=DELIVERIES,
        client_threads=CLIENTS,
        accounts=ACCOUNTS,
        replies_200=statuses[200],
        replies_503=statuses[503],
        duration_s=round(duration, 1),
        throughput_per_s=round(len(ok) / duration, 1),
        latency_p50_ms=round(percentile(latencies, 0.50) * 1000, 1),
        latency_p99_ms=round(percentile(latencies, 0.99) * 1000, 1),
        latency_max_ms=round(max(latencies) * 1000, 1),
        pending_when_clients_finished=waiting,
        final_passes=passes,
        final_drain_s=round(drain_s, 1),
        showcase_points=points,
    )
