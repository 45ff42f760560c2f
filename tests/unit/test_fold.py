"""The fold pass and the Player: what each guarantees, one test (or a few) per behaviour."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from healthlog import ids
from healthlog.errors import (
    ArchiveUnavailable,
    BodyMissing,
    Cancelled,
    Conflict,
    FoldDeadline,
    JournalBusy,
    NoSuchAccount,
    OutcomeWriteFailed,
    UnreadableBody,
)
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player, PlayOptions
from healthlog.fold.replay import replay
from healthlog.journal.port import Journal
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import OutcomeClass, ParseResult, ParseStatus, Point
from healthlog.testing import FaultyArchive

from tests.conftest import Phone, metrics_body

AT = datetime(2026, 3, 1, 12, 0, tzinfo=ids.EPOCH.tzinfo)


def steps(*values: float, source: str = "Watch") -> dict[str, object]:
    """step_count points a minute apart from 2026-02-01 00:00 +0100."""
    t0 = datetime(2026, 2, 1)
    points = [
        {
            "date": (t0 + timedelta(minutes=i)).strftime("%Y-%m-%d %H:%M:%S +0100"),
            "qty": v,
            "source": source,
        }
        for i, v in enumerate(values)
    ]
    return metrics_body(("step_count", "count", points))


def qty_of(journal: Journal, start_prefix: str = "") -> list[float | None]:
    return [
        sp.point.qty
        for sp in journal.export_points(metric="step_count")
        if sp.point.start.startswith(start_prefix)
    ]


def status_of(journal: Journal, delivery_id: str) -> ParseStatus:
    delivery = journal.get_delivery(delivery_id)
    assert delivery is not None
    return delivery.status


def make_pass(journal: Journal, archive: Any, **kw: Any) -> FoldPass:
    return FoldPass(journal, Player(journal, archive), **kw)


# --- a pass always ends ---------------------------------------------------------------


def test_pass_ends_and_does_not_pick_again_a_delivery_left_pending(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    good = phone.send(steps(1))
    stuck = phone.send(steps(2))
    faulty = FaultyArchive(archive)
    faulty.fail_read_for = {stuck}
    report = FoldPass(journal, Player(journal, faulty), page_size=1).pass_once()
    assert report.stopped is None
    assert report.selected == 2  # stuck was selected once, not over and over
    assert report.tally.classes == {"parsed": 1, "deferred": 1}
    assert status_of(journal, good) is ParseStatus.PARSED
    assert status_of(journal, stuck) is ParseStatus.PENDING


# --- atomicity: an interrupted fold leaves pending and no half-written points -----------


class _BreaksHalfway(Sequence[Point]):
    """Points that stop coming half-way, as a killed or cancelled write would."""

    def __init__(self, points: list[Point]) -> None:
        self._points = points

    def __len__(self) -> int:
        return len(self._points)

    def __getitem__(self, i: Any) -> Any:
        return self._points[i]

    def __iter__(self) -> Iterator[Point]:
        for n, p in enumerate(self._points):
            if n == len(self._points) // 2:
                raise Cancelled()
            yield p


def test_interrupted_fold_leaves_delivery_pending_and_writes_no_points(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    from healthlog.hae import parse

    def parse_then_break(body: bytes, **kw: Any) -> ParseResult:
        result = parse(body, **kw)
        return ParseResult(_BreaksHalfway(result.points), result.uncovered)  # type: ignore[arg-type]

    delivery = phone.send(steps(1, 2, 3, 4))
    outcome = Player(journal, archive, parse=parse_then_break).play(delivery)
    assert outcome.klass is OutcomeClass.DEFERRED
    assert status_of(journal, delivery) is ParseStatus.PENDING
    assert qty_of(journal) == []
    assert journal.summary().points == 0


# --- idempotence ----------------------------------------------------------------------


def test_folding_a_delivery_twice_leaves_the_showcase_the_same(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    delivery = phone.send(steps(1, 2, 3))
    player = Player(journal, archive)
    player.play(delivery)
    once = journal.fingerprint()
    assert player.play(delivery).klass is OutcomeClass.PARSED
    assert journal.fingerprint() == once
    assert qty_of(journal) == [1, 2, 3]


# --- a lost wake-up loses no work -----------------------------------------------------


def test_delivery_whose_wakeup_was_lost_is_folded_by_the_next_pass(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    fold = make_pass(journal, archive)
    assert fold.pass_once().selected == 0
    delivery = phone.send(steps(5))  # journalled, nobody woken
    report = fold.pass_once()
    assert report.tally.classes == {"parsed": 1}
    assert status_of(journal, delivery) is ParseStatus.PARSED


# --- total order ----------------------------------------------------------------------


@pytest.mark.parametrize("page_size", [1, 2, 3, 100])
def test_deliveries_with_equal_received_at_fold_in_id_order_whatever_the_page_size(
    phone: Phone, journal: Journal, archive: Any, page_size: int, caplog: Any
) -> None:
    sent = [phone.send(steps(float(n)), at=AT) for n in range(5)]
    caplog.set_level(logging.INFO, logger="healthlog")
    make_pass(journal, archive, page_size=page_size).pass_once()
    folded = [r.delivery_id for r in caplog.records if r.getMessage() == "delivery.folded"]
    assert folded == sorted(sent)
    # the layer with the greatest id is the newest: its value is the one inherited
    newest = sorted(sent)[-1]
    assert qty_of(journal) == [float(sent.index(newest))]


# --- stopping -------------------------------------------------------------------------


def test_pass_out_of_budget_stops_claiming_work_and_warns(
    phone: Phone, journal: Journal, archive: Any, caplog: Any
) -> None:
    first, second = phone.send(steps(1)), phone.send(steps(2))
    budget = iter([10.0, 0.0])
    caplog.set_level(logging.INFO, logger="healthlog")
    report = make_pass(journal, archive).pass_once(time_left=lambda: next(budget), margin_s=1.0)
    assert report.stopped == "budget"
    assert status_of(journal, first) is ParseStatus.PARSED
    assert status_of(journal, second) is ParseStatus.PENDING
    passes = [r for r in caplog.records if r.getMessage() == "fold.pass"]
    assert passes[-1].levelno == logging.WARNING


# --- a circumstance is not a failure of the delivery ----------------------------------


def test_busy_database_leaves_delivery_pending_and_it_folds_once_released(
    phone: Phone, tmp_path: Path, archive: Any
) -> None:
    delivery = phone.send(steps(7))
    busy = SqliteJournal(str(tmp_path / "journal.db"), busy_timeout_ms=20, retries=2)
    holder = sqlite3.connect(str(tmp_path / "journal.db"))
    holder.execute("BEGIN IMMEDIATE")
    try:
        outcome = Player(busy, archive).play(delivery)
        assert outcome.klass is OutcomeClass.DEFERRED
        assert outcome.reason == "JournalBusy"
    finally:
        holder.rollback()
        holder.close()
    assert status_of(busy, delivery) is ParseStatus.PENDING
    assert Player(busy, archive).play(delivery).klass is OutcomeClass.PARSED
    assert status_of(busy, delivery) is ParseStatus.PARSED
    busy.close()


def test_body_that_is_not_json_fails(phone: Phone, journal: Journal, archive: Any) -> None:
    delivery = phone.send(b"{this is not json}")
    outcome = Player(journal, archive).play(delivery)
    assert (outcome.klass, outcome.reason) == (OutcomeClass.FAILED, "unreadable")
    stored = journal.get_delivery(delivery)
    assert stored is not None
    assert (stored.status, stored.failure, stored.points) == (ParseStatus.FAILED, "unreadable", 0)


def test_failed_deliveries_are_never_picked_by_the_pass(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    phone.send(b"{broken")
    fold = make_pass(journal, archive)
    assert fold.pass_once().tally.classes == {"failed": 1}
    assert fold.pass_once().selected == 0


# --- one classification for both doors -----------------------------------------------


@pytest.mark.parametrize(
    ("exc", "klass", "reason", "status"),
    [
        (JournalBusy(), OutcomeClass.DEFERRED, "JournalBusy", ParseStatus.PENDING),
        (Cancelled(), OutcomeClass.DEFERRED, "Cancelled", ParseStatus.PENDING),
        (ArchiveUnavailable(), OutcomeClass.DEFERRED, "ArchiveUnavailable", ParseStatus.PENDING),
        (NoSuchAccount(), OutcomeClass.DEFERRED, "NoSuchAccount", ParseStatus.PENDING),
        (Conflict(), OutcomeClass.DEFERRED, "Conflict", ParseStatus.PENDING),
        (OutcomeWriteFailed(), OutcomeClass.DEFERRED, "OutcomeWriteFailed", ParseStatus.PENDING),
        (FoldDeadline(), OutcomeClass.FAILED, "deadline", ParseStatus.FAILED),
        (UnreadableBody(), OutcomeClass.FAILED, "unreadable", ParseStatus.FAILED),
        (BodyMissing(), OutcomeClass.FAILED, "missing_body", ParseStatus.FAILED),
        (RuntimeError("parser bug"), OutcomeClass.FAILED, "exception", ParseStatus.FAILED),
        (RecursionError(), OutcomeClass.FAILED, "exception", ParseStatus.FAILED),
    ],
)
def test_player_classifies_every_exception_into_one_outcome(
    phone: Phone,
    journal: Journal,
    archive: Any,
    exc: Exception,
    klass: OutcomeClass,
    reason: str,
    status: ParseStatus,
) -> None:
    def raising(body: bytes, **kw: Any) -> ParseResult:
        raise exc

    delivery = phone.send(steps(1))
    outcome = Player(journal, archive, parse=raising).play(delivery)
    assert (outcome.klass, outcome.reason) == (klass, reason)
    stored = journal.get_delivery(delivery)
    assert stored is not None
    assert stored.status is status
    assert stored.attempts == 0  # every fold that ended let go of its attempt


def test_replay_counts_outcomes_with_the_same_classes_as_the_pass(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    phone.send(steps(1))
    phone.send(b"{broken")
    phone.send({"data": {"metrics": [], "workouts": [{"name": "Walk"}]}})
    by_pass = make_pass(journal, archive).pass_once().tally.classes
    by_replay = replay(journal, Player(journal, archive)).tally.classes
    assert by_pass == by_replay == {"parsed": 1, "failed": 1, "partial": 1}


def test_failed_fold_keeps_the_uncovered_keys_it_had_collected(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    def deadline(body: bytes, **kw: Any) -> ParseResult:
        raise FoldDeadline(uncovered=("workouts",))

    delivery = phone.send(steps(1))
    Player(journal, archive, parse=deadline).play(delivery)
    stored = journal.get_delivery(delivery)
    assert stored is not None
    assert (stored.status, stored.uncovered) == (ParseStatus.FAILED, ("workouts",))


def test_fold_past_its_own_deadline_fails(phone: Phone, journal: Journal, archive: Any) -> None:
    ticks = iter([0.0, 1000.0, 1000.0, 1000.0])
    delivery = phone.send(steps(*range(3000)))
    player = Player(journal, archive, PlayOptions(deadline_s=5), clock=lambda: next(ticks, 1000.0))
    assert player.play(delivery).klass is OutcomeClass.FAILED
    assert status_of(journal, delivery) is ParseStatus.FAILED


# --- crashes: a body that kills the process cannot loop forever --------------------------


def test_delivery_whose_folds_kept_killing_the_process_becomes_failed_crashed(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    """Three deaths in the backlog, then its last try alone died too: crashed."""
    delivery = phone.send(steps(1))
    for _ in range(4):
        journal.begin_attempt(delivery)  # a fold started; the process died before the outcome
    outcome = Player(journal, archive, PlayOptions(max_attempts=3)).play(delivery)
    assert (outcome.klass, outcome.reason) == (OutcomeClass.FAILED, "crashed")
    stored = journal.get_delivery(delivery)
    assert stored is not None
    assert (stored.status, stored.failure, stored.points) == (ParseStatus.FAILED, "crashed", 0)


def a_suspect_and_another(phone: Phone, journal: Journal) -> tuple[str, str]:
    """Two deliveries, the first killed by outside kills at each of its three folds."""
    suspect, other = phone.send(steps(1)), phone.send(steps(2))
    for _ in range(3):
        journal.begin_attempt(suspect)
    return suspect, other


def recording_player(journal: Journal, archive: Any, folded: list[str]) -> Player:
    """A Player that notes ``id:class:reason`` of each play in ``folded``."""
    player = Player(journal, archive, PlayOptions(max_attempts=3))
    play = player.play

    def recording(delivery_id: str, **kw: Any) -> Any:
        outcome = play(delivery_id, **kw)
        folded.append(f"{delivery_id}:{outcome.klass.value}:{outcome.reason}")
        return outcome

    player.play = recording  # type: ignore[method-assign]
    return player


def test_a_crash_suspect_gets_one_more_try_alone_after_the_rest_of_the_backlog(
    phone: Phone, journal: Journal, archive: Any, caplog: Any
) -> None:
    """Kills from outside can land in one innocent fold again and again: the pass
    defers it at the limit and tries it last, on its own, instead of failing it."""
    suspect, other = a_suspect_and_another(phone, journal)
    folded: list[str] = []
    player = recording_player(journal, archive, folded)
    with caplog.at_level(logging.WARNING, logger="healthlog.fold"):
        report = FoldPass(journal, player).pass_once()

    assert folded == [
        f"{suspect}:deferred:crash_suspect",
        f"{other}:parsed:None",
        f"{suspect}:parsed:None",  # last, alone
    ]
    assert report.tally.as_dict()["parsed"] == 2 and report.tally.as_dict()["deferred"] == 0
    assert status_of(journal, suspect) is ParseStatus.PARSED
    assert any("fold.crash_retry" in r.getMessage() for r in caplog.records)


def test_a_crash_suspects_last_try_waits_for_a_pass_with_the_time_for_it(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    """The backlog used the pass's time: the suspect is not begun at its end."""
    suspect, other = a_suspect_and_another(phone, journal)
    folded: list[str] = []
    player = recording_player(journal, archive, folded)
    # an invocation's clock: plenty of time until the backlog is folded, then none
    report = FoldPass(journal, player).pass_once(
        time_left=lambda: 0.5 if f"{other}:parsed:None" in folded else 60.0, margin_s=1.0
    )
    assert folded == [f"{suspect}:deferred:crash_suspect", f"{other}:parsed:None"]
    assert report.stopped == "budget"
    assert status_of(journal, suspect) is ParseStatus.PENDING
    # the next pass, with time, gives it its last try
    FoldPass(journal, player).pass_once(time_left=lambda: 60.0, margin_s=1.0)
    assert folded[-1] == f"{suspect}:parsed:None"


def test_fewer_crashes_than_the_limit_still_fold(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    delivery = phone.send(steps(1))
    journal.begin_attempt(delivery)
    journal.begin_attempt(delivery)
    assert Player(journal, archive, PlayOptions(max_attempts=3)).play(delivery).klass is (
        OutcomeClass.PARSED
    )


# --- lag is observable even without progress ------------------------------------------


def test_lag_warning_is_silent_on_the_first_backlog_and_fires_after(
    phone: Phone, journal: Journal, archive: Any, caplog: Any
) -> None:
    now = [AT]
    faulty = FaultyArchive(archive)
    fold = FoldPass(journal, Player(journal, faulty), now=lambda: now[0])
    phone.send(steps(1), at=AT - timedelta(hours=1))
    caplog.set_level(logging.INFO, logger="healthlog")
    fold.pass_once()  # the backlog found at start: old, expected, no warning
    assert not [r for r in caplog.records if r.getMessage() == "fold.lagging"]
    # a delivery waits ten minutes; the store is down, so nothing is folded:
    # the warning is computed on the selection, not on the fold
    faulty.fail_read = True
    stuck = phone.send(steps(2), at=AT)
    now[0] = AT + timedelta(minutes=10)
    fold.pass_once()
    warnings = [r for r in caplog.records if r.getMessage() == "fold.lagging"]
    assert len(warnings) == 1
    assert warnings[0].__dict__["count"] == 1
    assert warnings[0].__dict__["worst_wait_s"] == 600.0
    assert status_of(journal, stuck) is ParseStatus.PENDING


def test_backlog_is_announced_once_before_the_first_pass(
    phone: Phone, journal: Journal, archive: Any, caplog: Any
) -> None:
    phone.send(steps(1))
    phone.send(steps(2))
    caplog.set_level(logging.INFO, logger="healthlog")
    fold = make_pass(journal, archive)
    fold.pass_once()
    fold.pass_once()
    backlog = [r for r in caplog.records if r.getMessage() == "fold.backlog"]
    assert len(backlog) == 1
    assert backlog[0].__dict__["pending"] == 2


# --- cancel ends the loop -------------------------------------------------------------


def test_cancel_ends_the_pass_between_deliveries(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    sent = [phone.send(steps(float(n))) for n in range(3)]
    cancel = threading.Event()
    cancel.set()
    report = make_pass(journal, archive).pass_once(cancel=cancel)
    assert report.stopped == "cancelled"
    assert [status_of(journal, d) for d in sent] == [ParseStatus.PENDING] * 3


def test_selection_failure_ends_the_pass_not_the_process(
    phone: Phone, journal: Journal, archive: Any, caplog: Any
) -> None:
    phone.send(steps(1))
    fold = make_pass(journal, archive)
    fold.pass_once()
    journal.close()  # the next selection fails
    caplog.set_level(logging.ERROR, logger="healthlog")
    report = fold.pass_once()
    assert report.stopped == "selection_failed"
    # the one error (a test before may have left healthlog's loggers at INFO)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == ["fold.selection_failed"]


def test_a_pass_does_not_run_while_another_holds_the_fold_lock(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    from healthlog.config import Settings
    from healthlog.fold.service import FoldService

    delivery = phone.send(steps(1))
    service = FoldService(journal, archive, Settings())
    with journal.fold_lock() as held:
        assert held
        assert service.run() is None  # another process's pass is running
        assert status_of(journal, delivery) is ParseStatus.PENDING
    report = service.run()
    assert report is not None and report.tally.classes == {"parsed": 1}


def test_a_pass_leaves_alone_a_delivery_another_writer_folded_after_it_was_selected(
    phone: Phone, journal: Journal, archive: Any
) -> None:
    delivery = phone.send(steps(1))
    Player(journal, archive).play(delivery)  # another writer, between selection and fold
    folded = journal.fingerprint()
    outcome = Player(journal, archive).play(delivery, pending_only=True)
    assert (outcome.klass, outcome.reason) == (OutcomeClass.DEFERRED, "Conflict")
    assert status_of(journal, delivery) is ParseStatus.PARSED
    assert journal.fingerprint() == folded
