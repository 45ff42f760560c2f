"""SIGKILL at random moments: nothing told 200 is lost, nothing is half-written.

Two harnesses, each against real processes on a SQLite journal and a local archive:

* ingest: the functions-framework server takes a few hundred deliveries from several
  client threads while it is killed (SIGKILL to its process group) and restarted,
  again and again. A client re-sends a body until it gets 200, as the phone does on
  its next export. Afterwards: every 200 is journalled with its body archived byte for
  byte; no row lacks its body; the bodies archived without a row (the kill fell
  between the archive commit and the journal insert) are journalled by
  ``reconcile``; every archived body is one the clients sent, whole.
* fold: a driver process (``fold_driver.py``) runs passes and is killed at random
  moments, restarted, killed... while two "poison" bodies kill it each time they are
  parsed. Afterwards: nothing is pending; every delivery's outcome and points are
  those of a clean serial fold of the same deliveries in a fresh copy of the journal,
  and the showcase fingerprints are equal (nothing half-folded); each poison body
  ended ``failed`` (``crashed``) after ``max_fold_attempts`` deaths and its last try.

The kill moments come from a seeded RNG (the seed is printed with the figures); the
assertions hold whatever the timing.
"""

from __future__ import annotations

import queue
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import requests
from healthlog.archive.local import LocalArchive
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player, PlayOptions
from healthlog.hae import parse
from healthlog.journal.sqlite import SqliteJournal
from healthlog.local.launcher import clean_env
from healthlog.model import ParseResult, ParseStatus
from healthlog.ops.reconcile import reconcile

from tests.conftest import Phone
from tests.integration.servers import ROOT, start_function
from tests.reliability import fold_driver
from tests.reliability.conftest import Figures
from tests.reliability.harness import (
    Attempt,
    copy_database,
    kill,
    new_account,
    post,
    steps_body,
    temp_files,
    wait_ready_or_exit,
)

pytestmark = pytest.mark.slow

SEED = 20260501

# --- ingest -----------------------------------------------------------------------------

INGEST_BODIES = 500
INGEST_CLIENTS = 8
# points per body: from a few bytes to ~100 KB, so some kills land mid-body
INGEST_POINTS = (1, 5, 40, 300, 1500)
# a kill comes this long (seconds, uniform) after the server listens again
INGEST_KILL_AFTER_S = (0.05, 0.3)
INGEST_MAX_KILLS = 40
INGEST_DEADLINE_S = 120.0
RESEND_PAUSE_S = 0.05


def test_ingest_killed_at_random_moments_loses_no_delivery(
    tmp_path: Path, figures: Figures
) -> None:
    rng = random.Random(SEED)
    db = tmp_path / "journal.db"
    journal = SqliteJournal(str(db))
    journal.migrate()
    account, token = new_account(journal, "alice")
    journal.close()
    bodies = [
        steps_body(i, points=rng.choice(INGEST_POINTS), start_minute=rng.randrange(5000))
        for i in range(INGEST_BODIES)
    ]
    env = {
        "HEALTHLOG_JOURNAL_URL": f"sqlite:///{db}",
        "HEALTHLOG_ARCHIVE_URL": f"file://{tmp_path}/archive",
        "HEALTHLOG_LOG_LEVEL": "WARNING",
    }
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    logs = tmp_path / "logs"
    logs.mkdir()

    server = start_function("ingest", env, log_dir=logs)
    url = [server.url]  # where the clients post: a restart listens on a new port
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for i in range(INGEST_BODIES):
        todo.put(i)
    attempts: list[Attempt] = []
    lock = threading.Lock()

    def client() -> None:
        session = requests.Session()
        while True:
            try:
                i = todo.get_nowait()
            except queue.Empty:
                return
            # like the phone: send again until it is taken (bounded by the deadline only:
            # while the server is killed every few hundred ms, a body may need many sends)
            while time.monotonic() < deadline:
                attempt = post(session, url[0], i, bodies[i], headers, timeout_s=30)
                with lock:
                    attempts.append(attempt)
                if attempt.status not in (None, 503):
                    break  # 200, or a reply the assertions below will show
                session.close()  # the connection may point at a dead server
                time.sleep(RESEND_PAUSE_S)

    started = time.monotonic()
    deadline = started + INGEST_DEADLINE_S
    threads = [threading.Thread(target=client) for _ in range(INGEST_CLIENTS)]
    for t in threads:
        t.start()
    kills = 0
    try:
        while kills < INGEST_MAX_KILLS and time.monotonic() < deadline:
            time.sleep(rng.uniform(*INGEST_KILL_AFTER_S))
            if not any(t.is_alive() for t in threads):
                break
            kill(server.process)
            kills += 1
            server = start_function("ingest", env, log_dir=logs)
            url[0] = server.url
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()) + 30)
    finally:
        server.stop()
    duration = time.monotonic() - started
    assert not any(t.is_alive() for t in threads), "a client never finished"

    journal = SqliteJournal(str(db))
    archive = LocalArchive(tmp_path / "archive")
    sent = {body: i for i, body in enumerate(bodies)}
    try:
        statuses = Counter(a.status for a in attempts)
        assert set(statuses) <= {200, 503, None}, statuses
        assert all(a.retry_after for a in attempts if a.status == 503)
        ok = [a for a in attempts if a.status == 200]
        missing = set(range(INGEST_BODIES)) - {a.body for a in ok}
        assert not missing, f"bodies that never got a 200: {sorted(missing)}"

        # every 200: journalled, with its body archived byte for byte
        for a in ok:
            assert a.delivery_id is not None
            delivery = journal.get_delivery(a.delivery_id)
            assert delivery is not None, f"200 for {a.delivery_id}, but no row"
            assert delivery.account_id == account.id
            assert archive.read(delivery.archive_key) == bodies[a.body]
            assert delivery.size == len(bodies[a.body])

        # no row lacks its body, and every archived body is one that was sent, whole
        rows = journal.deliveries()
        keys = set(archive.keys())
        assert {d.archive_key for d in rows} <= keys, "a journal row lacks its body"
        for key in keys:
            assert archive.read(key) in sent, f"{key} holds bytes no client sent whole"

        # the bodies archived without a row are found and journalled by reconcile
        orphans = keys - {d.archive_key for d in rows}
        report = reconcile(journal, archive)
        assert report.journalled == len(orphans)
        rows = journal.deliveries()
        assert {d.archive_key for d in rows} == keys
        assert all(d.status is ParseStatus.PENDING for d in rows)

        # and every one of them folds
        folded = FoldPass(journal, Player(journal, archive)).pass_once()
        assert dict(folded.tally.classes) == {"parsed": len(rows)}
    finally:
        journal.close()

    figures(
        seed=SEED,
        bodies=INGEST_BODIES,
        client_threads=INGEST_CLIENTS,
        sends=len(attempts),
        replies_200=statuses[200],
        replies_503=statuses[503],
        no_reply=statuses[None],
        kills=kills,
        rows=len(rows),
        duplicate_rows=len(rows) - INGEST_BODIES,
        orphans_reconciled=report.journalled,
        temp_files_left=temp_files(archive),
        duration_s=round(duration, 1),
    )


# --- fold -------------------------------------------------------------------------------

FOLD_DELIVERIES = 400
FOLD_POISON_AT = (70, 290)
FOLD_SOURCES = ("Watch", "Phone", "Ring")
# above the default (3) on purpose: a SIGKILL of ours that lands in the same delivery's
# fold on consecutive restarts counts as a crash too, and must not make a good body
# "crashed"; kills come 60 ms or more after the driver starts folding, longer than the
# first fold after a restart takes, so that needs this many misfortunes in a row
MAX_FOLD_ATTEMPTS = 4
# a kill comes this long (seconds, uniform) after the driver holds the fold lock
FOLD_KILL_AFTER_S = (0.06, 0.2)
FOLD_MAX_STARTS = 400
FOLD_DEADLINE_S = 150.0


def _fold_body(i: int, rng: random.Random) -> tuple[str, bytes]:
    """The ``i``-th delivery of the fold harness: its kind and its bytes.

    Most are overlapping windows of step counts from a few sources (so the layers
    decide which value wins), some hold a section the parser does not cover, some are
    not JSON, and two are poison.
    """
    if i in FOLD_POISON_AT:
        return "poison", b'{"data": {"metrics": [], "note": "' + fold_driver.POISON + b'"}}'
    if i % 23 == 5:
        return "unreadable", b'{"data": {"metrics": [ broken' + b" }"
    if i % 17 == 3:
        return "partial", b'{"data": {"metrics": [], "workouts": [{"name": "Walk"}]}}'
    body = steps_body(
        i,
        points=rng.randrange(200, 900),
        start_minute=rng.randrange(0, 900),
        source=rng.choice(FOLD_SOURCES),
    )
    return "parsed", body


def _refuse_poison(body: bytes, **kw: object) -> ParseResult:
    """The clean fold's parser: the poison fails there (an exception), not the process."""
    if fold_driver.POISON in body:
        raise RuntimeError("poison")
    return parse(body, **kw)  # type: ignore[arg-type]


def test_fold_killed_at_random_moments_folds_every_delivery_exactly_as_a_clean_fold(
    tmp_path: Path, journal: SqliteJournal, phone: Phone, figures: Figures
) -> None:
    rng = random.Random(SEED + 1)
    kinds: dict[str, str] = {}
    for i in range(FOLD_DELIVERIES):
        kind, body = _fold_body(i, rng)
        kinds[phone.send(body)] = kind
    db = tmp_path / "journal.db"
    clean_db = tmp_path / "clean.db"
    copy_database(db, clean_db)  # the same deliveries, all pending, for the clean fold
    journal.close()

    env = {
        "HEALTHLOG_JOURNAL_URL": f"sqlite:///{db}",
        "HEALTHLOG_ARCHIVE_URL": f"file://{tmp_path}/archive",
        "HEALTHLOG_MAX_FOLD_ATTEMPTS": str(MAX_FOLD_ATTEMPTS),
        "HEALTHLOG_PAGE_SIZE": "20",
        "HEALTHLOG_LOG_LEVEL": "WARNING",
    }
    child_env = clean_env(env)
    started = time.monotonic()
    starts = kills = poison_deaths = mid_fold = 0
    poison_ids = {d for d, kind in kinds.items() if kind == "poison"}
    finished = False
    with open(tmp_path / "driver.log", "wb") as driver_log:
        while not finished:
            assert starts < FOLD_MAX_STARTS, "the fold never finished"
            assert time.monotonic() - started < FOLD_DEADLINE_S, "the fold never finished"
            ready = tmp_path / f"ready-{starts}"
            starts += 1
            process = subprocess.Popen(
                [sys.executable, "-m", "tests.reliability.fold_driver", str(ready)],
                cwd=ROOT,
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=driver_log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            code = wait_ready_or_exit(process, ready, "fold")
            if code is None:
                try:
                    code = process.wait(timeout=rng.uniform(*FOLD_KILL_AFTER_S))
                except subprocess.TimeoutExpired:
                    kill(process)
                    kills += 1
                    mid_fold += _folds_cut_short(db, poison_ids)
                    continue
            if code == fold_driver.POISON_EXIT:
                poison_deaths += 1
                continue
            assert code == 0, f"the driver exited with {code}: {_tail(tmp_path / 'driver.log')}"
            finished = True
    duration = time.monotonic() - started

    crashed = SqliteJournal(str(db))
    clean = SqliteJournal(str(clean_db))
    archive = LocalArchive(tmp_path / "archive")
    try:
        assert crashed.count_pending() == 0
        options = PlayOptions(max_attempts=MAX_FOLD_ATTEMPTS)
        player = Player(clean, archive, options, parse=_refuse_poison)
        FoldPass(clean, player).pass_once()
        assert clean.count_pending() == 0

        expected = {
            "parsed": (ParseStatus.PARSED, None),
            "partial": (ParseStatus.PARTIAL, None),
            "unreadable": (ParseStatus.FAILED, "unreadable"),
            "poison": (ParseStatus.FAILED, "crashed"),
        }
        outcomes: Counter[str] = Counter()
        for delivery_id, kind in kinds.items():
            after = crashed.get_delivery(delivery_id)
            serial = clean.get_delivery(delivery_id)
            assert after is not None and serial is not None
            assert (after.status, after.failure) == expected[kind], (kind, after)
            # the same outcome as the clean fold: nothing half-folded
            assert (after.status, after.uncovered, after.points) == (
                serial.status,
                serial.uncovered,
                serial.points,
            ), kind
            assert after.attempts == 0
            outcomes[
                f"{after.status.value}" + (f" ({after.failure})" if after.failure else "")
            ] += 1
        assert crashed.fingerprint() == clean.fingerprint()
        points = crashed.summary().points
    finally:
        crashed.close()
        clean.close()

    # each poison body killed the driver at most max_fold_attempts times in the backlog
    # and once more in its last try alone: the first attempts may have been cut short
    # by a SIGKILL of ours instead
    assert len(FOLD_POISON_AT) <= poison_deaths <= len(FOLD_POISON_AT) * (MAX_FOLD_ATTEMPTS + 1)
    figures(
        seed=SEED + 1,
        deliveries=FOLD_DELIVERIES,
        process_starts=starts,
        kills=kills,
        kills_mid_fold=mid_fold,
        poison_deaths=poison_deaths,
        outcomes=dict(sorted(outcomes.items())),
        showcase_points=points,
        duration_s=round(duration, 1),
    )


def _folds_cut_short(db: Path, poison: set[str]) -> int:
    """Folds the last kill cut short: begun (attempt counted) and never ended."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT id FROM deliveries WHERE status = 'pending' AND attempts > 0"
        ).fetchall()
    finally:
        conn.close()
    return len({r[0] for r in rows} - poison)


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-3000:]
