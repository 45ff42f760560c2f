"""SIGKILL an import's fold at several moments: it resumes to the result of a clean fold.

An export (``tests.export_gen``: the fixture's records of every kind and an hour-by-hour
run of minute samples) is imported with ``fold=False``, so it waits as a pending
delivery; a copy of the journal is taken for the clean fold. Then a driver process
(``import_driver.py``) folds it in small steps and is killed (SIGKILL to its process
group) again and again: right after it starts (before its first step), as soon as a
chosen number of further steps is committed (so the kill lands in the next step's
reading or its write), and at random moments. After every kill the journal is
consistent: the showcase is that of the committed steps (day counts and extents agree
with the rows, the delivery's position and points with its steps). A last run folds to
the end; the result (fingerprint, day counts, late points, catalog, the delivery's
status, keys and points) equals the clean fold's in the copy.

The second test poisons one step (the driver dies each time it would write it): the
deaths without progress count, the delivery becomes a crash suspect and then ``failed``
(``crashed``) after its last try, keeping the steps before it.
"""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from healthlog.applehealth import read_export
from healthlog.archive.local import LocalArchive
from healthlog.config import Settings
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.service import make_player
from healthlog.journal.sqlite import SqliteJournal
from healthlog.local.launcher import ROOT, clean_env
from healthlog.model import ParseStatus
from healthlog.ops import importer

from tests import export_gen
from tests.reliability import import_driver
from tests.reliability.conftest import Figures
from tests.reliability.harness import copy_database, kill, wait_ready_or_exit

pytestmark = pytest.mark.slow

SEED = 20261201
STEP_POINTS = 400
MINUTES = 8000  # 8 000 minutes x (2 step sources + heart rate's 3 fields) = 40 000 points
MAX_FOLD_ATTEMPTS = 3
DEADLINE_S = 240.0


def _env(tmp_path: Path, db: Path, **more: str) -> dict[str, str]:
    return clean_env(
        {
            "HEALTHLOG_JOURNAL_URL": f"sqlite:///{db}",
            "HEALTHLOG_ARCHIVE_URL": f"file://{tmp_path}/archive",
            "HEALTHLOG_FOLD_STEP_POINTS": str(STEP_POINTS),
            "HEALTHLOG_LOG_LEVEL": "WARNING",
            **more,
        }
    )


def _imported(tmp_path: Path) -> tuple[Path, str, Path]:
    """The export, imported and left pending; the journal's path and a clean copy's."""
    path = export_gen.fixture_zip(
        tmp_path / "export.zip", *export_gen.minutes(export_gen.T0, MINUTES)
    )
    db = tmp_path / "journal.db"
    journal = SqliteJournal(str(db))
    journal.migrate()
    account = journal.add_account("alice", "hash")
    report = importer.import_export(
        path,
        journal=journal,
        archive=LocalArchive(tmp_path / "archive"),
        settings=Settings(),
        account_id=account.id,
        fold=False,
    )
    journal.close()
    clean = tmp_path / "clean.db"
    copy_database(db, clean)
    return db, report.delivery_id, clean


def _start(
    tmp_path: Path, env: dict[str, str], n: int, *extra: str
) -> tuple[subprocess.Popen[bytes], Path]:
    ready = tmp_path / f"ready-{n}"
    log = (tmp_path / "driver.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.import_driver", str(ready), *extra],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    return process, ready


def _where(db: Path, delivery_id: str) -> tuple[str, int, int, int]:
    """(status, fold position, points, attempts) as committed, read beside the driver."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        (row,) = conn.execute(
            "SELECT status, fold_position, points, attempts FROM deliveries WHERE id = ?",
            (delivery_id,),
        )
    finally:
        conn.close()
    return row[0], int(row[1]), int(row[2]), int(row[3])


def _wait_for_attempt(
    process: subprocess.Popen[bytes], db: Path, delivery_id: str, before: tuple[str, int, int, int]
) -> int | None:
    """Until the driver has counted its attempt (it starts reading) or committed a step
    since ``before`` (what the journal held before it started); its exit code if it
    ended first."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        _, position, _, attempts = _where(db, delivery_id)
        if attempts > before[3] or position != before[1]:
            return None
        code = process.poll()
        if code is not None:
            return code
        assert time.monotonic() < deadline, "the fold never began"


def _wait_for_steps(
    process: subprocess.Popen[bytes], db: Path, delivery_id: str, after: int, steps: int
) -> int | None:
    """Until ``steps`` more steps than ``after`` (a position) are committed, or the end.

    Returns the driver's exit code if it ended first.
    """
    deadline = time.monotonic() + DEADLINE_S
    seen, counted = after, 0
    while counted < steps:
        code = process.poll()
        if code is not None:
            return code
        status, position, _, _ = _where(db, delivery_id)
        if status != "pending":
            return process.wait()
        if position != seen:
            seen, counted = position, counted + 1
        assert time.monotonic() < deadline, "the fold made no progress"
    return None


def _consistent(db: Path, delivery_id: str) -> None:
    """What a kill leaves: the committed steps and nothing else, their counts agreeing."""
    journal = SqliteJournal(str(db))
    try:
        delivery = journal.get_delivery(delivery_id)
        assert delivery is not None
        (account,) = journal.accounts()
        held = journal.summary().points
        # every point in the showcase counted once on its day, no more, no less
        assert sum(n for *_, n in journal.metric_days(account_id=account.id)) == held
        # the extents hold what the committed steps brought, as the delivery counts it
        assert sum(e.points for e in journal.catalog(account.id)) == delivery.points
    finally:
        journal.close()


def _clean_fold(tmp_path: Path, clean: Path) -> SqliteJournal:
    journal = SqliteJournal(str(clean))
    settings = Settings(fold_step_points=STEP_POINTS)
    player = make_player(journal, LocalArchive(tmp_path / "archive"), settings)
    report = FoldPass(journal, player).pass_once()
    assert dict(report.tally.classes) == {"partial": 1}
    return journal


def test_an_import_killed_at_several_moments_resumes_to_a_clean_fold(
    tmp_path: Path, figures: Figures
) -> None:
    rng = random.Random(SEED)
    db, delivery_id, clean_db = _imported(tmp_path)
    # the export read in a process of its own, as a large one is: a kill of the group
    # takes both
    env = _env(
        tmp_path, db, HEALTHLOG_MAX_FOLD_ATTEMPTS="20", HEALTHLOG_FOLD_READER_PROCESS_BYTES="0"
    )
    # the moments: right after the start; once 1, 2, 5 further steps are committed; at
    # random moments; and again, until the fold ends on its own
    plan: list[str | int] = [
        "start", 1, "random", 2, "start", 5, "random", 1, "random", 3, "start", "random",
    ]  # fmt: skip
    started = time.monotonic()
    kills: list[tuple[str, int, int]] = []  # (moment, position before, position after)
    n = 0
    finished = False
    while not finished:
        assert time.monotonic() - started < DEADLINE_S, "the fold never finished"
        moment = plan[n] if n < len(plan) else None
        before = _where(db, delivery_id)
        process, ready = _start(tmp_path, env, n)
        n += 1
        code = wait_ready_or_exit(process, ready, "import")
        if code is None and moment is not None:
            position = before[1]
            if moment == "start":  # as soon as it begins: before its first step
                code = _wait_for_attempt(process, db, delivery_id, before)
            elif moment == "random":
                code = _timed_wait(process, rng.uniform(0.02, 0.3))
            else:
                assert isinstance(moment, int)
                code = _wait_for_steps(process, db, delivery_id, position, moment)
            if code is None:
                kill(process)
                kills.append((str(moment), position, _where(db, delivery_id)[1]))
                _consistent(db, delivery_id)
                continue
        if code is None:
            code = process.wait(timeout=DEADLINE_S)
        assert code == 0, f"the driver exited with {code}: {_tail(tmp_path)}"
        finished = True
    duration = time.monotonic() - started

    crashed = SqliteJournal(str(db))
    clean = _clean_fold(tmp_path, clean_db)
    try:
        after, serial = crashed.get_delivery(delivery_id), clean.get_delivery(delivery_id)
        assert after is not None and serial is not None
        assert after.status is ParseStatus.PARTIAL
        assert (after.status, after.uncovered, after.points, after.fold_state) == (
            serial.status,
            serial.uncovered,
            serial.points,
            serial.fold_state,
        )
        assert (after.attempts, after.fold_position) == (0, 0)
        assert crashed.fingerprint() == clean.fingerprint()
        (account,) = crashed.accounts()
        for read in ("metric_days", "late_points"):
            assert getattr(crashed, read)(account_id=account.id) == getattr(clean, read)(
                account_id=account.id
            )
        assert crashed.catalog(account.id) == clean.catalog(account.id)
        points = crashed.summary().points
    finally:
        crashed.close()
        clean.close()
    # the kills landed in the fold: some before a run's first step, most after steps
    assert len(kills) >= 9, kills
    before_a_step = [k for k in kills if k[1] == k[2]]
    assert before_a_step and any(after > 0 for *_, after in kills)
    assert len({after for *_, after in kills}) >= 5  # at several positions
    figures(
        seed=SEED,
        steps_of_points=STEP_POINTS,
        process_starts=n,
        kills=len(kills),
        kills_before_a_step=len(before_a_step),
        kill_positions=[after for *_, after in kills],
        showcase_points=points,
        duration_s=round(duration, 1),
    )


def test_a_step_that_kills_the_fold_every_time_ends_crashed_keeping_the_steps_before(
    tmp_path: Path, figures: Figures
) -> None:
    db, delivery_id, _ = _imported(tmp_path)
    with read_export(tmp_path / "export.zip", batch_points=STEP_POINTS) as reading:
        batches = [(batch.position, len(batch.points)) for batch in reading.batches()]
    poison = batches[2][0]  # the fourth step: three are committed before it
    kept = sum(points for _, points in batches[:3])
    env = _env(tmp_path, db, HEALTHLOG_MAX_FOLD_ATTEMPTS=str(MAX_FOLD_ATTEMPTS))
    deaths = 0
    for n in range(MAX_FOLD_ATTEMPTS + 3):
        process, _ = _start(tmp_path, env, n, str(poison))
        code = process.wait(timeout=DEADLINE_S)
        if code == 0:
            break
        assert code == import_driver.POISON_EXIT, _tail(tmp_path)
        deaths += 1
        # each death without progress counts once, the first one after the steps too
        assert _where(db, delivery_id) == ("pending", poison, kept, deaths)
    # the first death after three steps (attempts 1), then max_fold_attempts deaths
    # without progress in all: the last of them the suspect's last try alone
    assert deaths == MAX_FOLD_ATTEMPTS + 1
    journal = SqliteJournal(str(db))
    try:
        delivery = journal.get_delivery(delivery_id)
        assert delivery is not None
        assert (delivery.status, delivery.failure) == (ParseStatus.FAILED, "crashed")
        # the three steps before the poison stay, counted, and nothing of the fourth
        assert delivery.points == kept == journal.summary().points
        assert (delivery.fold_position, delivery.attempts) == (0, 0)
    finally:
        journal.close()
    figures(poison_deaths=deaths, steps_kept=3, points_kept=kept)


def _timed_wait(process: subprocess.Popen[bytes], seconds: float) -> int | None:
    try:
        return process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


def _tail(tmp_path: Path) -> str:
    return (tmp_path / "driver.log").read_text(errors="replace")[-3000:]
