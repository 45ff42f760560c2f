"""point_day_sums (migration 0012): the days the fold keeps summed are what the points say,
on every backend, whatever was sent, re-sent, folded late or in steps."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from healthlog import ids
from healthlog.archive.keys import EXPORT_ZIP
from healthlog.journal.port import DaySum, Journal
from healthlog.model import NewDelivery, ParseStatus, Step
from healthlog.reads.overlap import local_day

from tests.contract.conftest import ADAPTERS, Seed, point
from tests.contract.test_journal_series import at_version_10

EVERY_DAY = ("0000-01-01", "9999-99-99")  # text bounds past any day, as reads has them


def recomputed(journal: Journal, account_id: str) -> dict[tuple[str, str], list[DaySum]]:
    """Per (metric, field), each day summed up from the exported points themselves."""
    imported = journal.imported_deliveries(account_id)
    days: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    for stored in journal.export_points(account_id=account_id):
        p = stored.point
        days[(p.metric, p.field, local_day(p.start, p.utc_offset))].append(
            (p.start, p.qty, p.source, stored.delivery_id in imported)
        )
    found: dict[tuple[str, str], list[DaySum]] = defaultdict(list)
    for (metric, field, day), held in sorted(days.items()):
        values = [qty for _, qty, _, _ in held if qty is not None]
        found[(metric, field)].append(
            DaySum(
                day,
                len(held),
                len(values),
                sum(values) if values else None,
                min(values) if values else None,
                max(values) if values else None,
                min(start for start, *_ in held),
                max(start for start, *_ in held),
                len({source for _, _, source, _ in held}),
                sum(1 for *_, came in held if came),
            )
        )
    return found


def kept(journal: Journal, account_id: str) -> dict[tuple[str, str], list[DaySum]]:
    fields = {(p.point.metric, p.point.field) for p in journal.export_points(account_id=account_id)}
    return {
        (metric, field): journal.day_sums(
            account_id=account_id, metric=metric, field=field,
            day_from=EVERY_DAY[0], day_to=EVERY_DAY[1],
        )
        for metric, field in sorted(fields)
    }  # fmt: skip


def assert_kept_as_recomputed(journal: Journal, account_id: str) -> None:
    found, truth = kept(journal, account_id), recomputed(journal, account_id)
    assert set(found) == set(truth)
    for key, days in truth.items():
        # each day's fields (totals to float rounding: the sums add up in another order)
        kept_days = [day._asdict() for day in found[key]]
        assert kept_days == [pytest.approx(day._asdict()) for day in days], key


def hr(start: str, qty: float | None, offset: int | None = 60, source: str = "Watch") -> Any:
    return point(
        start, qty, metric="heart_rate", field="avg", source=source, unit="count/min",
        utc_offset=offset,
    )  # fmt: skip


def test_the_kept_days_are_what_the_points_sum_up_to(seed: Seed, journal: Journal) -> None:
    alice = seed.account("alice")
    first, older, newer = seed.delivery(), seed.delivery(), seed.delivery()
    seed.fold(
        first,
        [
            hr("2026-03-01T08:00:00.000000Z", 60),
            hr("2026-03-01T23:30:00.000000Z", 70),  # 00:30 on the 2nd, on the phone
            hr("2026-03-02T05:00:00.000000Z", None),  # no value: a point, not a value
            hr("2026-03-02T12:00:00.000000Z", 80, offset=-300),
            hr("2026-03-02T12:00:00.000000Z", 82, source="Phone"),
            point("2026-03-01T09:00:00.000000Z", 100.0),
        ],
    )
    assert_kept_as_recomputed(journal, alice.id)
    # the newest layer re-sends a day with other values, and brings a day of its own
    seed.fold(newer, [hr("2026-03-01T08:00:00.000000Z", 65), hr("2026-03-05T08:00:00.000000Z", 1)])
    # an older delivery folded after it changes nothing it lost, adds what it brings
    seed.fold(older, [hr("2026-03-01T08:00:00.000000Z", 99), hr("2026-03-01T10:00:00.000000Z", 3)])
    assert_kept_as_recomputed(journal, alice.id)
    day = journal.day_sums(
        account_id=alice.id, metric="heart_rate", field="avg", day_from="2026-03-01",
        day_to="2026-03-02",
    )  # fmt: skip
    assert [(d.day, d.points, d.valued, d.total, d.low, d.high) for d in day] == [
        ("2026-03-01", 2, 2, 68.0, 3.0, 65.0)
    ]
    # another account's days are its own
    bob = seed.account("bob")
    seed.fold(seed.delivery(bob), [hr("2026-03-01T08:00:00.000000Z", 200)])
    assert_kept_as_recomputed(journal, alice.id)
    assert_kept_as_recomputed(journal, bob.id)


@pytest.mark.parametrize(
    ("last", "other"),
    [("2026-03-01", "2026-03-05"), ("9999-12-31", "9999-12-30")],
    ids=["a-utc-day", "the-calendars-last-day"],
)
def test_a_point_in_the_last_microsecond_of_a_day_is_counted_on_its_day(
    seed: Seed, journal: Journal, last: str, other: str
) -> None:
    """The fold's tally reads each UTC day up to the next midnight, not up to its last
    written instant: a start of 23:59:59.999999 (an epoch time with a fraction, an ISO
    time) is kept in point_days and in the day sums like any other; on the calendar's
    last day, which has no next midnight, too."""
    alice = seed.account("alice")
    seed.fold(
        seed.delivery(),
        [hr(f"{last}T23:59:59.999999Z", 5, offset=0), hr(f"{other}T12:00:00.000000Z", 7)],
    )
    assert_kept_as_recomputed(journal, alice.id)
    assert [(m, d, n) for m, d, n in journal.metric_days(account_id=alice.id)] == sorted(
        [("heart_rate", last, 1), ("heart_rate", other, 1)]
    )


def test_a_point_sent_again_with_another_offset_leaves_its_old_day(
    seed: Seed, journal: Journal
) -> None:
    """The phone changed time zone: the same key now falls on the next day."""
    alice = seed.account("alice")
    seed.fold(seed.delivery(), [hr("2026-03-01T23:30:00.000000Z", 100, offset=0)])
    seed.fold(seed.delivery(), [hr("2026-03-01T23:30:00.000000Z", 100, offset=60)])
    assert_kept_as_recomputed(journal, alice.id)
    days = journal.day_sums(
        account_id=alice.id, metric="heart_rate", field="avg",
        day_from=EVERY_DAY[0], day_to=EVERY_DAY[1],
    )  # fmt: skip
    assert [(d.day, d.total) for d in days] == [("2026-03-02", 100.0)]
    assert journal.metric_days(account_id=alice.id) == [("heart_rate", "2026-03-02", 1)]
    # an offset of nearly a day (the parser takes any under one) lands on its day too
    seed.fold(seed.delivery(), [hr("2026-02-28T05:30:00.000000Z", 7, offset=1410)])
    assert_kept_as_recomputed(journal, alice.id)


def test_a_fold_in_steps_and_an_import_keep_their_days_too(seed: Seed, journal: Journal) -> None:
    alice = seed.account("alice")
    at = seed.clock + timedelta(minutes=5)
    imported = NewDelivery(
        ids.new_delivery_id(at), alice.id, at, f"{alice.id}/x.zip", 1, EXPORT_ZIP
    )
    assert journal.insert_delivery(imported)
    starts = [
        f"2026-03-{day:02d}T{hour:02d}:00:00.000000Z" for day in (1, 2, 3) for hour in (1, 13)
    ]
    for n, start in enumerate(starts):
        journal.write_step(
            imported.id,
            expected=ParseStatus.PENDING,
            step=Step(after=n, position=n + 1, points=n + 1, state="{}"),
            points=[hr(start, 50 + n, offset=0, source="Phone")],
        )
        assert_kept_as_recomputed(journal, alice.id)
    hae = seed.delivery(at=at + timedelta(minutes=1))
    seed.fold(hae, [hr("2026-03-02T13:00:00.000000Z", 90, offset=0, source="Phone|Watch")])
    assert_kept_as_recomputed(journal, alice.id)
    days = {
        d.day: (d.sources, d.imported, d.points)
        for d in journal.day_sums(
            account_id=alice.id, metric="heart_rate", field="avg",
            day_from=EVERY_DAY[0], day_to=EVERY_DAY[1],
        )
    }  # fmt: skip
    assert days == {"2026-03-01": (1, 2, 2), "2026-03-02": (2, 2, 3), "2026-03-03": (1, 2, 2)}


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_migration_0012_sums_the_points_folded_before_it(adapter: str, tmp_path: Path) -> None:
    with at_version_10(adapter, tmp_path) as (journal, _, alice, bob, _):
        journal.migrate()
        for account in (alice, bob):
            assert_kept_as_recomputed(journal, account)
