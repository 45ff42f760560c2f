"""The Journal contract for folds in steps (``write_step``, ``write_outcome(step=...)``).

A delivery too large for one transaction folds in steps: each step's points, records and
position are committed together, guarded by the status and the position the fold read,
and the outcome is written with the last step (docs/architecture.md, "Folds in steps").
Run against every adapter, as the rest of the contract.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from healthlog import ids
from healthlog.errors import Conflict
from healthlog.journal.port import Journal
from healthlog.model import NewDelivery, ParseStatus, Point, Step, distinct_points

from tests.contract.conftest import T0, Seed, point
from tests.contract.test_journal_contract import fix, record

PENDING, PARSED, PARTIAL = ParseStatus.PENDING, ParseStatus.PARSED, ParseStatus.PARTIAL

DAYS = [f"2026-01-0{d}T08:00:00.000000Z" for d in range(1, 7)]


def steps_of(points: list[Point], size: int) -> list[tuple[Step, list[Point]]]:
    """``points`` cut into steps of ``size``, as a fold in steps writes them."""
    out, written = [], 0
    for at in range(0, len(points), size):
        chunk = points[at : at + size]
        written += len(chunk)
        out.append(
            (Step(after=at, position=at + len(chunk), points=written, state=f'{{"n":{at}}}'), chunk)
        )
    return out


def fold_in_steps(journal: Journal, delivery: NewDelivery, points: list[Point], size: int) -> None:
    """As the fold writes an export: each step's points made distinct on their own
    (``distinct_points``), then keyed beside what the earlier steps wrote."""

    def keyed(part: list[Point]) -> list[Point]:
        fresh, equal = journal.beside_own(
            delivery.account_id, delivery.id, distinct_points(part)[0]
        )
        assert equal == []  # no sample is sent twice here
        return fresh

    *steps, (last, chunk) = steps_of(points, size)
    for step, part in steps:
        journal.write_step(delivery.id, expected=PENDING, step=step, points=keyed(part))
    journal.write_outcome(
        delivery.id, expected=PENDING, status=PARSED, uncovered=(), failure=None,
        points=keyed(chunk), step=last,
    )  # fmt: skip


@pytest.mark.slow  # seconds: a property over many fold orders
def test_a_fold_in_steps_gives_what_one_transaction_gives(
    journal_factory: Callable[[], Journal],
) -> None:
    """Showcase, day counts, late points and the catalog: the same, step by step."""
    ids_ = [ids.new_delivery_id(T0 + timedelta(seconds=n)) for n in (1, 2)]
    results = []
    for size in (None, 1, 2, 4):
        journal = journal_factory()
        seed = Seed(journal)
        account = journal.add_account("alice", "hash", account_id="acc-1", created_at=T0)
        earlier = seed.delivery(account, delivery_id=ids_[0], at=T0 + timedelta(seconds=1))
        seed.fold(earlier, [point(DAYS[3]), point(DAYS[5], metric="heart_rate")])
        delivery = seed.delivery(account, delivery_id=ids_[1], at=T0 + timedelta(seconds=2))
        # late points (before the 4th), two samples of one key (both kept, whichever
        # steps they fall in), two metrics, two sources
        points = [point(d, qty=float(n)) for n, d in enumerate(DAYS)]
        points += [point(DAYS[2], source="iPhone")]
        points += [point(DAYS[0], metric="heart_rate", field="avg"), point(DAYS[1], qty=9.0)]
        if size is None:
            seed.fold(delivery, distinct_points(points)[0])
        else:
            fold_in_steps(journal, delivery, points, size)
        stored = journal.get_delivery(delivery.id)
        assert stored is not None
        assert (stored.status, stored.points, stored.fold_position) == (PARSED, len(points), 0)
        results.append(
            (
                journal.fingerprint(),
                journal.metric_days(account_id=account.id),
                journal.late_points(account_id=account.id),
                [
                    (e.metric, e.field, e.source, e.points, e.first, e.last)
                    for e in journal.catalog(account.id)
                ],
            )
        )
    for result in results[1:]:
        assert result == results[0]
    assert results[0][2] != []  # there are late points to compare


def test_a_step_is_committed_pending_with_its_position_state_and_attempt(
    seed: Seed, journal: Journal
) -> None:
    delivery = seed.delivery()
    journal.begin_attempt(delivery.id)
    journal.begin_attempt(delivery.id)  # a fold that died before, and this one
    step = Step(after=0, position=40, points=2, state='{"unreadable":{"x":1}}')
    journal.write_step(
        delivery.id, expected=PENDING, step=step, points=[point(DAYS[0]), point(DAYS[1])]
    )

    stored = journal.get_delivery(delivery.id)
    assert stored is not None
    assert (stored.status, stored.fold_position, stored.fold_state) == (
        PENDING, 40, '{"unreadable":{"x":1}}'
    )  # fmt: skip
    # this fold's attempt only: the crash before made no progress, this one has
    assert (stored.attempts, stored.points) == (1, 2)
    assert journal.count_pending() == 1
    assert [p.point.start for p in journal.export_points()] == DAYS[:2]


def test_a_step_whose_position_moved_on_raises_conflict_and_writes_nothing(
    seed: Seed, journal: Journal
) -> None:
    delivery = seed.delivery()
    first = Step(after=0, position=10, points=1, state="{}")
    journal.write_step(delivery.id, expected=PENDING, step=first, points=[point(DAYS[0])])
    before = journal.fingerprint()
    # a second folder that read the delivery before that step
    with pytest.raises(Conflict):
        journal.write_step(delivery.id, expected=PENDING, step=first, points=[point(DAYS[1])])
    with pytest.raises(Conflict):
        journal.write_outcome(
            delivery.id, expected=PENDING, status=PARSED, uncovered=(), failure=None,
            points=[point(DAYS[1])], step=Step(after=0, position=20, points=2, state="{}"),
        )  # fmt: skip
    # and one that expects another status
    with pytest.raises(Conflict):
        journal.write_step(
            delivery.id, expected=PARSED, step=Step(10, 20, 2, "{}"), points=[point(DAYS[1])]
        )
    assert journal.fingerprint() == before
    stored = journal.get_delivery(delivery.id)
    assert stored is not None and (stored.fold_position, stored.points) == (10, 1)


def test_the_last_step_writes_the_outcome_resets_the_position_and_keeps_the_state(
    seed: Seed, journal: Journal
) -> None:
    delivery = seed.delivery()
    journal.write_step(
        delivery.id, expected=PENDING, step=Step(0, 10, 1, "{}"), points=[point(DAYS[0])]
    )
    journal.write_outcome(
        delivery.id, expected=PENDING, status=PARTIAL, uncovered=("HKDataTypeSleepDurationGoal",),
        failure=None, points=[point(DAYS[1])], step=Step(10, 25, 2, '{"points":2}'),
    )  # fmt: skip
    stored = journal.get_delivery(delivery.id)
    assert stored is not None
    assert (stored.status, stored.uncovered, stored.points, stored.attempts) == (
        PARTIAL, ("HKDataTypeSleepDurationGoal",), 2, 0
    )  # fmt: skip
    assert (stored.fold_position, stored.fold_state) == (0, '{"points":2}')
    assert journal.count_pending() == 0


def test_a_refold_in_steps_of_a_settled_delivery_goes_pending_and_forgets_its_old_extents(
    seed: Seed, journal: Journal
) -> None:
    """A replay's first step takes the delivery back to pending; the extents are the new fold's."""
    account = seed.account()
    delivery = seed.delivery(account)
    fold_in_steps(journal, delivery, [point(d) for d in DAYS], 4)
    assert [e.points for e in journal.catalog(account.id)] == [6]

    journal.write_step(
        delivery.id, expected=PARSED, step=Step(0, 3, 3, "{}"), points=[point(d) for d in DAYS[:3]]
    )
    stored = journal.get_delivery(delivery.id)
    assert stored is not None and stored.status is PENDING
    assert [e.points for e in journal.catalog(account.id)] == [3]  # the new fold's, so far
    journal.write_outcome(
        delivery.id, expected=PENDING, status=PARSED, uncovered=(), failure=None,
        points=[point(d) for d in DAYS[3:]], step=Step(3, 6, 6, "{}"),
    )  # fmt: skip
    assert [e.points for e in journal.catalog(account.id)] == [6]
    assert sum(n for *_, n in journal.metric_days(account_id=account.id)) == 6


def test_an_outcome_in_one_step_after_steps_resets_the_position(
    seed: Seed, journal: Journal
) -> None:
    """A failure written without steps (``crashed``) still ends the fold in steps."""
    delivery = seed.delivery()
    journal.write_step(
        delivery.id, expected=PENDING, step=Step(0, 5, 1, "{}"), points=[point(DAYS[0])]
    )
    journal.write_outcome(
        delivery.id, expected=PENDING, status=ParseStatus.FAILED, uncovered=(),
        failure="crashed", points=(),
    )  # fmt: skip
    stored = journal.get_delivery(delivery.id)
    assert stored is not None
    assert (stored.status, stored.fold_position, stored.fold_state) == (ParseStatus.FAILED, 0, None)


def test_steps_carry_records_with_their_series(seed: Seed, journal: Journal) -> None:
    delivery = seed.delivery()
    journal.write_step(
        delivery.id, expected=PENDING, step=Step(0, 1, 0, "{}"), points=(),
        records=[record("a", "{}", fix(0, 1.0), fix(1, 2.0))],
    )  # fmt: skip
    journal.write_outcome(
        delivery.id, expected=PENDING, status=PARSED, uncovered=(), failure=None, points=(),
        records=[record("b", "{}", fix(0, 3.0))], step=Step(1, 2, 0, "{}"),
    )  # fmt: skip
    found = {r.record.identity: r.record.items for r in journal.export_records()}
    assert found == {"a": (fix(0, 1.0), fix(1, 2.0)), "b": (fix(0, 3.0),)}


def test_a_delivery_counts_the_records_it_brought_in_one_step_or_many(seed: Seed) -> None:
    journal = seed.journal
    account = seed.account()
    once = seed.delivery(account)
    journal.write_outcome(
        once.id, expected=PENDING, status=PARSED, uncovered=(), failure=None,
        points=[point(DAYS[0])], records=[record("a"), record("b", "{}", fix(0, 1.0))],
    )  # fmt: skip
    stored = journal.get_delivery(once.id)
    assert stored is not None and (stored.points, stored.records) == (1, 2)

    stepped = seed.delivery(account)
    first = Step(after=0, position=1, points=0, state="{}", records=2)
    journal.write_step(
        stepped.id, expected=PENDING, step=first, points=[], records=[record("c"), record("d")]
    )
    halfway = journal.get_delivery(stepped.id)
    assert halfway is not None and (halfway.status, halfway.records) == (PENDING, 2)
    last = Step(after=1, position=2, points=1, state="{}", records=3)
    journal.write_outcome(
        stepped.id, expected=PENDING, status=PARSED, uncovered=(), failure=None,
        points=[point(DAYS[1])], records=[record("e")], step=last,
    )  # fmt: skip
    done = journal.get_delivery(stepped.id)
    assert done is not None and (done.status, done.points, done.records) == (PARSED, 1, 3)
    listed = {d.id: d.records for d in journal.deliveries(account_id=account.id)}
    assert listed == {once.id: 2, stepped.id: 3}
