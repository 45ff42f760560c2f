"""A large Health Auto Export body folds in steps, as an import does (issue 24, item 8).

A body of more points and items than ``PlayOptions.step_points`` is written a step at a
time, each step its own transaction, so the journal's write lock is never held for the
whole of it (a 200 000-point fold held another account's ingest past 5 s). Every point
lands once; a fold whose last write failed goes on after the steps that committed.
"""

from __future__ import annotations

import orjson
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player, PlayOptions
from healthlog.fold.steps import State
from healthlog.journal.port import Journal
from healthlog.model import ParseStatus
from healthlog.testing import FaultyJournal

from tests.conftest import Phone, metrics_body

POINTS = 5_000
ROUTE = 1_500
STEP = 1_000


def large_body() -> bytes:
    steps = [
        {"date": f"2026-03-{1 + n // 1440:02d} {n // 60 % 24:02d}:{n % 60:02d}:00 +0100",
         "qty": n % 97, "source": "Watch"}
        for n in range(POINTS)
    ]  # fmt: skip
    body = metrics_body(("step_count", "count", steps))
    route = [
        {"latitude": 52.5 + i / 1e5, "longitude": 13.4, "altitude": 30.0,
         "timestamp": f"2026-03-01 07:{i // 60 % 60:02d}:{i % 60:02d} +0100"}
        for i in range(ROUTE)
    ]  # fmt: skip
    body["data"]["workouts"] = [  # type: ignore[index]
        {"id": "run", "name": "Run", "start": "2026-03-01 07:00:00 +0100",
         "end": "2026-03-01 07:45:00 +0100", "route": route}
    ]  # fmt: skip
    return orjson.dumps(body)


def fold(journal: Journal, phone: Phone) -> None:
    player = Player(journal, phone.archive, PlayOptions(step_points=STEP))
    FoldPass(journal, player).pass_once()


def stored_points(journal: Journal) -> int:
    return sum(1 for _ in journal.export_points())


def test_a_body_over_the_step_is_written_in_steps_and_every_point_once(
    journal: Journal, phone: Phone
) -> None:
    delivery_id = phone.send(large_body())
    faulty = FaultyJournal(journal)
    fold(faulty, phone)  # type: ignore[arg-type]
    done = journal.get_delivery(delivery_id)
    assert done is not None and done.status is ParseStatus.PARSED
    assert (done.points, done.records, done.fold_position) == (POINTS, 1, 0)
    # five steps of points, then the record (1 + 1 500 items): each a transaction
    assert faulty.calls["write_step"] == POINTS // STEP
    assert faulty.calls["write_outcome"] == 1
    assert State.from_json(done.fold_state).steps == POINTS // STEP + 1
    assert stored_points(journal) == POINTS
    (workout,) = list(journal.export_records(section="workouts"))
    assert len(workout.record.items) == ROUTE


def test_a_body_within_the_step_is_one_transaction(journal: Journal, phone: Phone) -> None:
    small = metrics_body(("step_count", "count", [
        {"date": "2026-03-01 08:00:00 +0100", "qty": 5, "source": "Watch"}
    ]))  # fmt: skip
    delivery_id = phone.send(small)
    faulty = FaultyJournal(journal)
    fold(faulty, phone)  # type: ignore[arg-type]
    assert (faulty.calls["write_step"], faulty.calls["write_outcome"]) == (0, 1)
    done = journal.get_delivery(delivery_id)
    assert done is not None and done.fold_state is None


def test_a_fold_whose_write_failed_goes_on_after_the_steps_that_committed(
    journal: Journal, phone: Phone
) -> None:
    delivery_id = phone.send(large_body())
    faulty = FaultyJournal(journal)
    # the outcome's write fails (a busy journal): the steps before it are committed
    faulty.fail("write_outcome")
    fold(faulty, phone)  # type: ignore[arg-type]
    half = journal.get_delivery(delivery_id)
    assert half is not None and half.status is ParseStatus.PENDING
    assert half.fold_position == POINTS  # the five steps of points
    assert stored_points(journal) == POINTS
    faulty.heal()
    again = FaultyJournal(journal)
    fold(again, phone)  # type: ignore[arg-type]
    assert again.calls["write_step"] == 0  # nothing written twice
    done = journal.get_delivery(delivery_id)
    assert done is not None and done.status is ParseStatus.PARSED
    assert (done.points, done.records) == (POINTS, 1)
    assert stored_points(journal) == POINTS
