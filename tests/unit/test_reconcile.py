"""reconcile's recent-days mode: what the daily schedule in AWS looks at."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from healthlog import ids
from healthlog.archive.keys import body_key
from healthlog.journal.port import Journal
from healthlog.ops.reconcile import reconcile
from healthlog.testing import MemoryArchive

TODAY = date(2026, 3, 10)


def orphan(archive: MemoryArchive, account_id: str, days_ago: int) -> str:
    at = datetime(2026, 3, 10, 12, tzinfo=UTC) - timedelta(days=days_ago)
    delivery_id = ids.new_delivery_id(at)
    archive.put(body_key(account_id, delivery_id, "application/json"), b"{}")
    return delivery_id


def test_recent_days_journals_only_the_bodies_of_those_days_by_their_keys(
    journal: Journal,
) -> None:
    archive = MemoryArchive()
    alice, bob = journal.add_account("alice", "a"), journal.add_account("bob", "b")
    today, yesterday = orphan(archive, alice.id, 0), orphan(archive, bob.id, 1)
    old = orphan(archive, alice.id, 2)

    report = reconcile(journal, archive, sweep_age_s=None, recent_days=2, today=TODAY)

    assert (report.seen, report.journalled) == (2, 2)
    assert {d.id for d in journal.deliveries()} == {today, yesterday}
    # the whole archive, as `healthlog reconcile` does by default, finds the older one
    assert reconcile(journal, archive).journalled == 1
    assert journal.get_delivery(old) is not None
