"""The Journal contract for retention: which bodies are due, the mark and its confirmation,
and migrations 0010 and 0013.

Run against every adapter (``conftest.ADAPTERS``); through the port only.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from healthlog.journal.core import SqlJournal
from healthlog.journal.port import ZERO_CURSOR, BodyRef, Journal
from healthlog.model import NewDelivery, ParseStatus

from tests.contract.conftest import ADAPTERS, T0, Seed, open_journal, point

DAY = timedelta(days=1)


def failed(journal: Journal, delivery: NewDelivery) -> None:
    journal.write_outcome(
        delivery.id,
        expected=ParseStatus.PENDING,
        status=ParseStatus.FAILED,
        uncovered=(),
        failure="unreadable",
        points=(),
    )


def due_ids(journal: Journal, before_days: int, page: int = 100) -> list[str]:
    found: list[BodyRef] = []
    after = ZERO_CURSOR
    while batch := journal.retention_due(T0 + before_days * DAY, after, page):
        found += batch
        after = batch[-1].cursor
    return [ref.delivery_id for ref in found]


def test_only_parsed_deliveries_received_before_the_instant_are_due_in_order(
    seed: Seed, journal: Journal
) -> None:
    old = [seed.delivery(at=T0 + n * DAY) for n in range(3)]
    for d in old:
        seed.fold(d, [point()])
    partial = seed.delivery(at=T0 + 3 * DAY)
    seed.fold(partial, uncovered=("workouts",))
    broken = seed.delivery(at=T0 + 4 * DAY)
    failed(journal, broken)
    seed.delivery(at=T0 + 5 * DAY)  # pending
    young = seed.delivery(at=T0 + 20 * DAY)
    seed.fold(young, [point(start="2026-03-21T10:00:00.000000Z")])

    assert due_ids(journal, 10) == [d.id for d in old]
    assert due_ids(journal, 10, page=1) == [d.id for d in old]  # the cursor pages on
    assert due_ids(journal, 1) == [old[0].id]  # strictly before
    refs = journal.retention_due(T0 + 10 * DAY, ZERO_CURSOR, 10)
    assert [(r.archive_key, r.received_at) for r in refs] == [
        (d.archive_key, d.received_at) for d in old
    ]


def test_a_mark_takes_only_parsed_unmarked_rows_and_they_are_due_no_more(
    seed: Seed, journal: Journal
) -> None:
    alice = [seed.delivery() for _ in range(2)]
    bob = seed.delivery(seed.account("bob"))
    broken = seed.delivery()
    for d in (*alice, bob):
        seed.fold(d)
    failed(journal, broken)
    everyone = [d.id for d in (*alice, bob, broken)]

    assert journal.mark_bodies_removed(everyone, T0 + 30 * DAY) == [d.id for d in (*alice, bob)]
    assert journal.mark_bodies_removed(everyone, T0 + 31 * DAY) == []  # marked already
    assert due_ids(journal, 100) == []
    assert journal.count_removed_bodies() == 3
    assert journal.count_removed_bodies(seed.account("bob").id) == 1
    removed = journal.removed_bodies(ZERO_CURSOR, 10)
    assert [r.delivery_id for r in removed] == [d.id for d in (*alice, bob)]
    assert [r.delivery_id for r in journal.removed_bodies(removed[0].cursor, 1)] == [alice[1].id]
    by_bob = journal.removed_bodies(ZERO_CURSOR, 10, seed.account("bob").id)
    assert [r.archive_key for r in by_bob] == [bob.archive_key]
    # the row keeps its outcome: the mark is about the body only
    stored = journal.get_delivery(alice[0].id)
    assert stored is not None and stored.status is ParseStatus.PARSED
    # and says when: the first mark's time (the dashboard shows it), in both reads
    assert stored.body_removed_at == T0 + 30 * DAY
    listed = {d.id: d.body_removed_at for d in journal.deliveries()}
    assert listed == {**{d.id: T0 + 30 * DAY for d in (*alice, bob)}, broken.id: None}


def test_a_mark_is_unconfirmed_until_its_delete_is_confirmed(seed: Seed, journal: Journal) -> None:
    """What a crash between the mark and the delete can leave, and only that, is what the
    next run deletes again; confirmed marks stay removed (status, deliveries) for good."""
    done = [seed.delivery() for _ in range(3)]
    for d in done:
        seed.fold(d)
    ids_ = [d.id for d in done]
    assert journal.mark_bodies_removed(ids_, T0 + 30 * DAY) == ids_
    unconfirmed = journal.unconfirmed_removals(ZERO_CURSOR, 10)
    assert [r.delivery_id for r in unconfirmed] == ids_
    assert [r.archive_key for r in unconfirmed] == [d.archive_key for d in done]
    after_first = journal.unconfirmed_removals(unconfirmed[0].cursor, 1)
    assert [r.delivery_id for r in after_first] == [ids_[1]]

    journal.confirm_bodies_deleted(ids_[:2], T0 + 30 * DAY)
    assert [r.delivery_id for r in journal.unconfirmed_removals(ZERO_CURSOR, 10)] == [ids_[2]]
    journal.confirm_bodies_deleted([*ids_, "no-such-delivery"], T0 + 31 * DAY)
    assert journal.unconfirmed_removals(ZERO_CURSOR, 10) == []
    assert journal.count_removed_bodies() == 3
    assert [r.delivery_id for r in journal.removed_bodies(ZERO_CURSOR, 10)] == ids_
    # an unmarked delivery is not confirmed into a removal
    other = seed.delivery()
    seed.fold(other)
    journal.confirm_bodies_deleted([other.id], T0 + 32 * DAY)
    assert journal.count_removed_bodies() == 3 and due_ids(journal, 10) == [other.id]
    with pytest.raises(ValueError, match="positive"):
        journal.unconfirmed_removals(ZERO_CURSOR, 0)


def settle_at_old_version(journal: Journal, delivery: NewDelivery) -> None:
    """Settle ``delivery`` as ``parsed`` with no points, in columns every version has:
    today's write of an outcome needs today's columns (migration 0014's ``repeated``)."""
    assert isinstance(journal, SqlJournal)
    sql = journal._sql
    statement = (
        f"UPDATE deliveries SET status = 'parsed', folded_at = received_at "
        f"WHERE id = {sql.param('id')}"
    )
    journal._driver.attempt(lambda conn: conn.execute(statement, {"id": delivery.id}), write=True)


@contextmanager
def folded_at(
    adapter: str, tmp_path: Path, version: int
) -> Iterator[tuple[Journal, Seed, NewDelivery]]:
    """A journal of ``adapter`` at schema ``version`` with one delivery received at T0
    folded there (no points: today's write of points needs migration 0011's tables);
    closed after the block."""
    with ExitStack() as resources:
        journal = open_journal(adapter, tmp_path, resources)
        try:
            journal.migrate(target=version)  # type: ignore[call-arg]  # the core's, not the port's
            seed = Seed(journal)
            delivery = seed.delivery(at=T0)
            settle_at_old_version(journal, delivery)
            yield journal, seed, delivery
        finally:
            journal.close()


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_migration_0013_leaves_only_the_newest_runs_marks_unconfirmed(
    adapter: str, tmp_path: Path
) -> None:
    """Before 0013 each run deleted every earlier mark before it marked: only the newest
    run's marks (and any within a day of them) may still hold a body, and only they are
    deleted once more by the next run."""
    with folded_at(adapter, tmp_path, 12) as (journal, seed, oldest):
        later = [seed.delivery(at=T0 + n * timedelta(seconds=1)) for n in (1, 2)]
        for d in later:
            settle_at_old_version(journal, d)
        assert journal.mark_bodies_removed([oldest.id], T0 + DAY) == [oldest.id]
        assert journal.mark_bodies_removed([later[0].id], T0 + 9 * DAY + timedelta(hours=1))
        assert journal.mark_bodies_removed([later[1].id], T0 + 10 * DAY) == [later[1].id]
        journal.migrate()
        unconfirmed = journal.unconfirmed_removals(ZERO_CURSOR, 5)
        assert [r.delivery_id for r in unconfirmed] == [d.id for d in later]
        assert journal.count_removed_bodies() == 3


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_migration_0010_keeps_every_row_unmarked_and_due(adapter: str, tmp_path: Path) -> None:
    with folded_at(adapter, tmp_path, 9) as (journal, _, kept):
        journal.migrate()
        assert journal.count_removed_bodies() == 0
        assert due_ids(journal, 1) == [kept.id]
        journal.migrate()  # again: nothing changes
        assert journal.mark_bodies_removed([kept.id], T0 + DAY) == [kept.id]
