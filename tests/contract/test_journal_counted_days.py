"""counted_days (migration 0021): the days the overlap rule counts otherwise than their
sums, counted once by the fold and kept, read as the points say, on every backend; a
write to a day's points drops its row until the fold counts it again."""

from __future__ import annotations

from healthlog import priority as source_priority
from healthlog.archive.port import Archive
from healthlog.config import Settings
from healthlog.fold.service import FoldService
from healthlog.journal.port import Journal
from healthlog.reads import Reads, Resolution
from healthlog.testing import MemoryArchive

from tests.contract.conftest import Seed, point

#: two sources counting the same walks, the Watch's a little more (rule 2 keeps one)
DAYS = ("2026-03-01", "2026-03-02", "2026-03-03")


def steps(day: str, watch: float, phone: float) -> list:  # type: ignore[type-arg]
    return [
        point(f"{day}T{hh}:00:00.000000Z", qty, source=source, end=f"{day}T{hh}:10:00.000000Z")
        for hh in ("08", "12", "17")
        for source, qty in (("Alice’s Watch", watch), ("Alice’s iPhone", phone))
    ]


def answer(r: Reads) -> list[tuple[str, float | None, int]]:
    found = r.series("step_count", resolution=Resolution.DAY)
    return [(s.t, s.value, s.count) for s in found.samples]


def service(journal: Journal, archive: Archive | None = None) -> FoldService:
    return FoldService(journal, archive or MemoryArchive(), Settings.from_env({}))


def test_a_counted_day_reads_as_its_points_say_and_a_write_drops_it(
    journal: Journal, seed: Seed
) -> None:
    account = seed.account()
    seed.fold(seed.delivery(), [p for day in DAYS for p in steps(day, 100, 90)])
    r = Reads(journal, account)
    uncounted = answer(r)
    assert [v for _, v, _ in uncounted] == [300.0, 300.0, 300.0]  # the Watch's, once
    priority = source_priority.DEFAULT.key
    assert len(journal.uncounted_days(account_id=account.id, priority=priority, limit=10)) == 3
    assert service(journal).count_days() == 3
    assert journal.uncounted_days(account_id=account.id, priority=priority, limit=10) == []
    kept = journal.counted_days(
        account_id=account.id, metric="step_count", field="qty", priority=priority,
        day_from="2026-03-01", day_to="2026-03-04",
    )  # fmt: skip
    assert [(c.day, c.total) for c in kept] == [(d, 300.0) for d in DAYS]
    assert answer(r) == uncounted  # the kept days say what the points say
    # the phone sends the 2nd again, the Watch's now larger: that day's row goes (and the
    # days a sample of it could spread onto, clock.SPREAD_SPAN), the day before stays;
    # the read counts them from their points until the fold counts them again
    seed.fold(seed.delivery(), steps("2026-03-02", 150, 90))
    left = journal.counted_days(
        account_id=account.id, metric="step_count", field="qty", priority=priority,
        day_from="2026-03-01", day_to="2026-03-04",
    )  # fmt: skip
    assert [c.day for c in left] == ["2026-03-01"]
    assert [v for _, v, _ in answer(r)] == [300.0, 450.0, 300.0]
    assert service(journal).count_days() == 2
    assert [v for _, v, _ in answer(r)] == [300.0, 450.0, 300.0]


def test_a_day_counted_for_one_priority_is_not_read_for_another(
    journal: Journal, seed: Seed
) -> None:
    """HEALTHLOG_SOURCE_PRIORITY changed: the days are counted again for it."""
    account = seed.account()
    seed.fold(seed.delivery(), steps("2026-03-01", 100, 90))
    assert service(journal).count_days() == 1
    phone_first = source_priority.SourcePriority.parse("iphone,watch")
    r = Reads(journal, account, phone_first)
    assert [v for _, v, _ in answer(r)] == [270.0]  # the iPhone's, by its priority
    found = r.count_days()
    assert [(c.day, c.total) for c in found] == [("2026-03-01", 270.0)]
    journal.keep_counted_days(account.id, phone_first.key, found)
    assert [v for _, v, _ in answer(r)] == [270.0]
    assert [v for _, v, _ in answer(Reads(journal, account))] == [300.0]


def test_a_day_of_one_source_needs_no_count(journal: Journal, seed: Seed) -> None:
    account = seed.account()
    seed.fold(seed.delivery(), [point("2026-03-01T08:00:00.000000Z", 5.0)])
    assert journal.uncounted_days(account_id=account.id, priority="watch", limit=5) == []
    assert service(journal).count_days() == 0


def test_no_count_begins_without_the_time_for_it(journal: Journal, seed: Seed) -> None:
    """A Lambda's pass near its end leaves the days to the next pass."""
    account = seed.account()
    seed.fold(seed.delivery(), steps("2026-03-01", 100, 90))
    assert service(journal).count_days(time_left=lambda: 4.0) == 0
    priority = source_priority.DEFAULT.key
    assert len(journal.uncounted_days(account_id=account.id, priority=priority, limit=5)) == 1
    assert service(journal).count_days(time_left=lambda: 60.0, margin_s=10.0) == 1
