"""The Journal contract: behaviour through the port only, run against every adapter.

Adapters are listed in ``conftest.ADAPTERS``; nothing here knows which one it talks to.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import timedelta

import pytest
from healthlog import ids
from healthlog.errors import (
    AccountIdTaken,
    AccountNameTaken,
    AccountNotFound,
    Conflict,
    HealthlogError,
    NoSuchAccount,
    TokenTaken,
)
from healthlog.journal.port import ZERO_CURSOR, Journal, StoredPoint
from healthlog.model import Cursor, Delivery, NewDelivery, ParseStatus
from healthlog.reads.overlap import local_day

from tests.contract.conftest import T0, Seed, point

PENDING, PARSED, PARTIAL, FAILED = (
    ParseStatus.PENDING,
    ParseStatus.PARSED,
    ParseStatus.PARTIAL,
    ParseStatus.FAILED,
)


def page_through(journal: Journal, size: int) -> list[Cursor]:
    """Every pending row, page by page, as the fold pass walks them."""
    cursor, seen = ZERO_CURSOR, []
    while page := journal.pending_page(cursor, size):
        assert len(page) <= size
        seen.extend(page)
        cursor = page[-1]
    return seen


def order(cursors: list[Cursor]) -> list[tuple[object, str]]:
    return [(c.received_at, c.id) for c in cursors]


def same_time_ids(count: int) -> list[str]:
    """Distinct ids for deliveries received in the same microsecond, largest first."""
    return sorted((ids.new_delivery_id(T0) for _ in range(count)), reverse=True)


# --- the queue ---------------------------------------------------------------------------


@pytest.mark.parametrize("page_size", [1, 2, 3, 5, 100])
def test_pending_pages_come_in_received_at_then_id_order_whatever_the_page_size(
    seed: Seed, journal: Journal, page_size: int
) -> None:
    """Equal received_at are ordered by id, also across page boundaries."""
    later = seed.delivery(at=T0 + timedelta(seconds=5))
    same = [seed.delivery(at=T0, delivery_id=i) for i in same_time_ids(4)]
    earlier = seed.delivery(at=T0 - timedelta(microseconds=1))
    inserted = [later, *same, earlier]

    got = page_through(journal, page_size)

    assert order(got) == sorted((d.received_at, d.id) for d in inserted)


def test_pending_page_starts_strictly_after_the_cursor(seed: Seed, journal: Journal) -> None:
    low, high = sorted(same_time_ids(2))
    seed.delivery(at=T0 - timedelta(seconds=1))
    seed.delivery(at=T0, delivery_id=low)
    seed.delivery(at=T0, delivery_id=high)
    last = seed.delivery(at=T0 + timedelta(microseconds=1))

    assert [c.id for c in journal.pending_page(Cursor(T0, low), 10)] == [high, last.id]
    assert [c.id for c in journal.pending_page(Cursor(T0, ""), 10)] == [low, high, last.id]
    assert journal.pending_page(Cursor(last.received_at, last.id), 10) == []


def test_the_zero_cursor_sorts_before_every_row(seed: Seed, journal: Journal) -> None:
    """Even a row received at the zero time itself: no first-page branch is needed."""
    first = seed.delivery(at=ZERO_CURSOR.received_at, delivery_id="0")
    second = seed.delivery()

    page = journal.pending_page(ZERO_CURSOR, 10)

    assert page == [Cursor(ZERO_CURSOR.received_at, "0"), Cursor(second.received_at, second.id)]
    assert journal.get_delivery(first.id) is not None


@pytest.mark.parametrize(
    ("status", "uncovered", "failure"),
    [
        (PARSED, (), None),
        (PARTIAL, ("ecg",), None),
        (FAILED, ("ecg",), "unreadable"),
        (FAILED, (), "crashed"),
    ],
)
def test_a_delivery_leaves_the_queue_once_its_outcome_is_written(
    seed: Seed,
    journal: Journal,
    status: ParseStatus,
    uncovered: tuple[str, ...],
    failure: str | None,
) -> None:
    done, waiting = seed.delivery(), seed.delivery()

    journal.write_outcome(
        done.id, expected=PENDING, status=status, uncovered=uncovered, failure=failure, points=()
    )

    assert [c.id for c in journal.pending_page(ZERO_CURSOR, 10)] == [waiting.id]
    assert journal.count_pending() == 1
    stored = journal.get_delivery(done.id)
    assert stored is not None
    assert (stored.status, stored.uncovered, stored.failure) == (status, uncovered, failure)
    assert stored.folded_at is not None


def test_count_pending_counts_only_pending_rows(seed: Seed, journal: Journal) -> None:
    assert journal.count_pending() == 0
    first, _, _ = seed.delivery(), seed.delivery(), seed.delivery()
    seed.fold(first)
    assert journal.count_pending() == 2


# --- outcomes ----------------------------------------------------------------------------


def test_writing_uncovered_keys_replaces_the_stored_list_wholly(
    seed: Seed, journal: Journal
) -> None:
    delivery = seed.delivery()
    seed.fold(delivery, uncovered=("ecg", "workouts"))

    seed.fold(delivery, uncovered=("symptoms",), expected=PARTIAL)
    stored = journal.get_delivery(delivery.id)
    assert stored is not None and stored.uncovered == ("symptoms",)

    seed.fold(delivery, uncovered=(), expected=PARTIAL)
    stored = journal.get_delivery(delivery.id)
    assert stored is not None
    assert (stored.status, stored.uncovered) == (PARSED, ())
    assert journal.summary().uncovered == {}


def test_an_outcome_whose_expected_status_does_not_hold_raises_conflict_and_writes_nothing(
    seed: Seed, journal: Journal
) -> None:
    delivery = seed.delivery()
    seed.fold(delivery, [point(qty=1.0)])
    journal.begin_attempt(delivery.id)
    before, fingerprint = journal.get_delivery(delivery.id), journal.fingerprint()

    with pytest.raises(Conflict):
        journal.write_outcome(
            delivery.id,
            expected=PENDING,
            status=FAILED,
            uncovered=("ecg",),
            failure="crashed",
            points=[point(qty=2.0), point(start="2026-02-28T11:00:00.000000Z")],
        )

    assert journal.get_delivery(delivery.id) == before
    assert journal.fingerprint() == fingerprint
    assert journal.summary().points == 1


def test_an_outcome_for_a_delivery_the_journal_does_not_hold_raises_conflict(
    journal: Journal,
) -> None:
    with pytest.raises(Conflict):
        journal.write_outcome(
            ids.new_delivery_id(T0),
            expected=PENDING,
            status=PARSED,
            uncovered=(),
            failure=None,
            points=[point()],
        )
    assert journal.summary().points == 0


def test_an_outcome_counts_its_points_and_keeps_its_failure(seed: Seed, journal: Journal) -> None:
    parsed, failed = seed.delivery(), seed.delivery()
    seed.fold(parsed, [point(start=f"2026-02-28T1{h}:00:00.000000Z") for h in range(3)])
    journal.write_outcome(
        failed.id, expected=PENDING, status=FAILED, uncovered=(), failure="deadline", points=()
    )

    assert [d.points for d in journal.deliveries()] == [3, 0]
    assert [d.failure for d in journal.deliveries()] == [None, "deadline"]


# --- layers (docs/architecture.md, "Layers") ---------------------------------------------


def test_an_older_layer_written_after_a_newer_one_leaves_the_newer_value(
    seed: Seed, journal: Journal
) -> None:
    older, newer = seed.delivery(), seed.delivery()

    seed.fold(newer, [point(qty=2.0, unit="steps")])
    seed.fold(older, [point(qty=1.0, unit="count")])

    [stored] = journal.export_points()
    assert (stored.point.qty, stored.point.unit, stored.delivery_id) == (2.0, "steps", newer.id)


def test_between_layers_received_at_the_same_time_the_larger_id_wins(
    seed: Seed, journal: Journal
) -> None:
    high, low = same_time_ids(2)
    seed.delivery(at=T0, delivery_id=high)
    seed.delivery(at=T0, delivery_id=low)

    journal.write_outcome(
        high, expected=PENDING, status=PARSED, uncovered=(), failure=None, points=[point(qty=9.0)]
    )
    journal.write_outcome(
        low, expected=PENDING, status=PARSED, uncovered=(), failure=None, points=[point(qty=1.0)]
    )

    [stored] = journal.export_points()
    assert (stored.point.qty, stored.delivery_id) == (9.0, high)


def test_keys_absent_from_a_newer_layer_are_inherited_from_older_ones(
    seed: Seed, journal: Journal
) -> None:
    older, newer = seed.delivery(), seed.delivery()
    ten, eleven = "2026-02-28T10:00:00.000000Z", "2026-02-28T11:00:00.000000Z"

    seed.fold(older, [point(ten, 1.0), point(eleven, 1.0)])
    seed.fold(newer, [point(ten, 2.0)])

    assert [(p.point.start, p.point.qty, p.delivery_id) for p in journal.export_points()] == [
        (ten, 2.0, newer.id),
        (eleven, 1.0, older.id),
    ]


@pytest.mark.slow  # seconds: a property over many fold orders
def test_the_showcase_is_the_same_whatever_order_deliveries_are_folded_in(
    journal_factory: Callable[[], Journal],
) -> None:
    """Every permutation of three overlapping layers gives the same exported rows."""
    ten, eleven, noon = (f"2026-02-28T{h}:00:00.000000Z" for h in ("10", "11", "12"))
    high, low = same_time_ids(2)
    layers = {
        # (received_at, id): points; the last two share a received_at
        (T0, ids.new_delivery_id(T0)): [point(ten, 1), point(eleven, 1)],
        (T0 + timedelta(seconds=1), low): [point(ten, 2), point(noon, 2, source="Oura")],
        (T0 + timedelta(seconds=1), high): [point(eleven, 3), point(noon, 3)],
    }
    results = []
    for permutation in itertools.permutations(layers):
        journal = journal_factory()
        seed = Seed(journal)
        for at, delivery_id in sorted(layers):
            seed.delivery(at=at, delivery_id=delivery_id)
        for at, delivery_id in permutation:
            journal.write_outcome(
                delivery_id,
                expected=PENDING,
                status=PARSED,
                uncovered=(),
                failure=None,
                points=layers[at, delivery_id],
            )
        results.append([(p.point, p.delivery_id) for p in journal.export_points()])

    assert all(result == results[0] for result in results)
    assert [(p.start, p.source, p.qty) for p, _ in results[0]] == [
        (ten, "Watch", 2),
        (eleven, "Watch", 3),
        (noon, "Oura", 2),
        (noon, "Watch", 3),
    ]


def test_folding_the_same_delivery_again_changes_nothing(seed: Seed, journal: Journal) -> None:
    older, delivery = seed.delivery(), seed.delivery()
    seed.fold(older, [point(qty=1.0), point("2026-02-28T09:00:00.000000Z", 5.0)])
    points = [point(qty=2.5, extra='{"note":"x"}'), point("2026-02-28T12:00:00.000000Z", None)]
    seed.fold(delivery, points)
    fingerprint, rows = journal.fingerprint(), list(journal.export_points())

    seed.fold(delivery, points, expected=PARSED)

    assert journal.fingerprint() == fingerprint
    assert list(journal.export_points()) == rows


# --- attempts ------------------------------------------------------------------------------


def test_attempts_are_counted_released_never_below_zero_and_reset_by_an_outcome(
    seed: Seed, journal: Journal
) -> None:
    delivery = seed.delivery()

    def attempts() -> int:
        stored = journal.get_delivery(delivery.id)
        assert stored is not None
        return stored.attempts

    assert journal.begin_attempt(delivery.id) == 1
    assert journal.begin_attempt(delivery.id) == 2
    journal.release_attempt(delivery.id)
    assert attempts() == 1
    journal.release_attempt(delivery.id)
    journal.release_attempt(delivery.id)
    assert attempts() == 0
    journal.begin_attempt(delivery.id)
    journal.begin_attempt(delivery.id)
    seed.fold(delivery)
    assert attempts() == 0


# --- ingest ----------------------------------------------------------------------------------


def test_a_delivery_reads_back_whole(seed: Seed, journal: Journal) -> None:
    new = seed.delivery(headers=(("automation-name", "Hourly"), ("session-id", "abc…")))

    assert journal.get_delivery(new.id) == Delivery(
        id=new.id,
        account_id=new.account_id,
        received_at=new.received_at,
        archive_key=new.archive_key,
        size=new.size,
        content_type=new.content_type,
        status=PENDING,
        uncovered=(),
        points=0,
        attempts=0,
        failure=None,
        folded_at=None,
        headers=(("automation-name", "Hourly"), ("session-id", "abc…")),
    )
    assert journal.get_delivery(ids.new_delivery_id(T0)) is None


def test_inserting_a_delivery_twice_is_harmless(seed: Seed, journal: Journal) -> None:
    new = seed.delivery()
    before = journal.get_delivery(new.id)
    again = NewDelivery(
        id=new.id,
        account_id=new.account_id,
        received_at=new.received_at + timedelta(seconds=1),
        archive_key="elsewhere",
        size=1,
        content_type="text/plain",
    )

    assert journal.insert_delivery(again) is False
    assert journal.get_delivery(new.id) == before
    assert journal.summary().counts[PENDING] == 1


def test_inserting_a_delivery_for_an_unknown_account_raises_no_such_account(
    journal: Journal,
) -> None:
    new = NewDelivery(
        id=ids.new_delivery_id(T0),
        account_id="nobody",
        received_at=T0,
        archive_key="k",
        size=1,
        content_type="application/json",
    )
    with pytest.raises(NoSuchAccount):
        journal.insert_delivery(new)
    assert journal.count_pending() == 0


# --- reading ---------------------------------------------------------------------------------


def test_summary_of_an_empty_journal_counts_every_status_as_zero(journal: Journal) -> None:
    summary = journal.summary()

    assert summary.counts == {s.value: 0 for s in ParseStatus}
    assert (summary.oldest_pending, summary.last_delivery) == (None, None)
    assert (summary.uncovered, summary.points, summary.backlog) == ({}, 0, 0)


def test_summary_counts_statuses_uncovered_keys_and_points(seed: Seed, journal: Journal) -> None:
    bob = seed.account("bob")
    parsed, partial, failed, pending = (seed.delivery() for _ in range(4))
    bobs = seed.delivery(bob)
    seed.fold(parsed, [point(), point("2026-02-28T11:00:00.000000Z")])
    seed.fold(partial, [point("2026-02-28T12:00:00.000000Z")], uncovered=("ecg", "workouts"))
    journal.write_outcome(
        failed.id, expected=PENDING, status=FAILED, uncovered=("ecg",), failure="x", points=()
    )
    seed.fold(bobs, [point()], uncovered=("ecg",))

    summary = journal.summary()
    assert summary.counts == {"pending": 1, "parsed": 1, "partial": 2, "failed": 1}
    assert summary.backlog == 1
    assert summary.oldest_pending == pending.received_at
    assert summary.last_delivery == bobs.received_at
    assert summary.uncovered == {"ecg": 3, "workouts": 1}
    assert summary.points == 4

    alice = journal.summary(seed.account().id)
    assert alice.counts == {"pending": 1, "parsed": 1, "partial": 1, "failed": 1}
    assert alice.last_delivery == pending.received_at
    assert alice.uncovered == {"ecg": 2, "workouts": 1}
    assert alice.points == 3
    assert journal.summary(bob.id).oldest_pending is None


def test_deliveries_filter_by_status_uncovered_key_and_account_in_journal_order(
    seed: Seed, journal: Journal
) -> None:
    bob = seed.account("bob")
    a1, a2, a3 = seed.delivery(), seed.delivery(), seed.delivery()
    b1 = seed.delivery(bob)
    seed.fold(a1, uncovered=("ecg",))
    seed.fold(a3, uncovered=("ecg", "symptoms"))
    seed.fold(b1, uncovered=("symptoms",))

    def listed(**filters: object) -> list[str]:
        return [d.id for d in journal.deliveries(**filters)]  # type: ignore[arg-type]

    assert listed() == [a1.id, a2.id, a3.id, b1.id]
    assert listed(newest_first=True) == [b1.id, a3.id, a2.id, a1.id]
    assert listed(status=PARTIAL) == [a1.id, a3.id, b1.id]
    assert listed(status=PENDING) == [a2.id]
    assert listed(uncovered_key="symptoms") == [a3.id, b1.id]
    assert listed(uncovered_key="symp") == []
    assert listed(account_id=bob.id) == [b1.id]
    assert listed(status=PARTIAL, uncovered_key="ecg", account_id=seed.account().id) == [
        a1.id,
        a3.id,
    ]
    assert listed(limit=2) == [a1.id, a2.id]
    assert listed(limit=2, newest_first=True) == [b1.id, a3.id]


def test_exported_points_read_back_whole(seed: Seed, journal: Journal) -> None:
    delivery = seed.delivery()
    full = point(
        utc_offset=-300,
        end="2026-02-28T10:30:00.000000Z",
        qty=0.1 + 0.2,
        text="deep",
        unit="hr",
        extra='{"Avg":1}',
        metric="sleep_analysis",
        field="asleep",
        source="Oura Ring ’3",
    )
    bare = point("2026-02-28T11:00:00.000000Z", None, utc_offset=None, unit="")
    seed.fold(delivery, [full, bare])

    assert list(journal.export_points()) == [
        StoredPoint(delivery.account_id, full, delivery.id),
        StoredPoint(delivery.account_id, bare, delivery.id),
    ]


def test_export_filters_by_account_metric_and_start_range_in_export_order(
    seed: Seed, journal: Journal
) -> None:
    bob = seed.account("bob")
    alice = seed.account()
    a, b = seed.delivery(alice), seed.delivery(bob)
    day1, day2 = "2026-01-31T23:00:00.000000Z", "2026-02-01T00:00:00.000000Z"
    seed.fold(
        a,
        [
            point(day2, metric="step_count", field="qty", source="Watch"),
            point(day1, metric="step_count", field="qty", source="Watch"),
            point(day1, metric="step_count", field="qty", source="Phone"),
            point(day1, metric="heart_rate", field="max", source="Watch"),
            point(day1, metric="heart_rate", field="avg", source="Watch"),
        ],
    )
    seed.fold(b, [point(day1, metric="heart_rate")])

    def keys(**filters: str) -> list[tuple[str, str, str, str, str]]:
        rows = journal.export_points(**filters)
        return [(r.account_id, r.point.metric, r.point.start, r.point.field, r.point.source)
                for r in rows]  # fmt: skip

    every = keys()
    assert [k[0] for k in every] == sorted(k[0] for k in every)
    assert [k[1:] for k in every if k[0] == alice.id] == [
        ("heart_rate", day1, "avg", "Watch"),
        ("heart_rate", day1, "max", "Watch"),
        ("step_count", day1, "qty", "Phone"),
        ("step_count", day1, "qty", "Watch"),
        ("step_count", day2, "qty", "Watch"),
    ]
    assert {k[0] for k in keys(account_id=bob.id)} == {bob.id}
    assert len(keys(account_id=alice.id)) == 5
    assert [k[2] for k in keys(account_id=alice.id, metric="step_count")] == [day1, day1, day2]
    # start_from inclusive, start_to exclusive, a date prefix works
    assert {k[2] for k in keys(start_from="2026-02-01")} == {day2}
    assert {k[2] for k in keys(start_from=day2)} == {day2}
    assert {k[2] for k in keys(start_to=day2)} == {day1}
    assert keys(start_from="2026-01-31", start_to="2026-01-31T23:00") == []


def test_the_fingerprint_changes_with_any_column_and_can_be_taken_per_account(
    seed: Seed, journal: Journal
) -> None:
    bob = seed.account("bob")
    empty = journal.fingerprint()
    older, newer, bobs = seed.delivery(), seed.delivery(), seed.delivery(bob)
    seed.fold(older, [point(qty=1.0)])
    after_older = journal.fingerprint()
    seed.fold(newer, [point(qty=1.0)])  # same value, newer layer: a column changed

    assert len({empty, after_older, journal.fingerprint()}) == 3
    alice_only = journal.fingerprint(seed.account().id)
    seed.fold(bobs, [point(qty=7.0)])
    assert journal.fingerprint(seed.account().id) == alice_only
    assert journal.fingerprint(bob.id) != journal.fingerprint(seed.account().id)


# --- accounts --------------------------------------------------------------------------------


def test_accounts_are_found_by_token_hash_and_id(journal: Journal) -> None:
    alice = journal.add_account("alice", "hash-a")
    bob = journal.add_account("bob", "hash-b")

    assert journal.account_by_token_hash("hash-b") == bob
    assert journal.account_by_token_hash("hash-c") is None
    assert journal.get_account(alice.id) == alice
    assert journal.get_account("nobody") is None
    assert {a.name for a in journal.accounts()} == {"alice", "bob"}
    assert alice.created_at.tzinfo is not None


def test_a_taken_account_name_or_token_hash_is_rejected(journal: Journal) -> None:
    journal.add_account("alice", "hash-a")

    with pytest.raises(AccountNameTaken):
        journal.add_account("alice", "hash-other")
    with pytest.raises(TokenTaken):
        journal.add_account("someone", "hash-a")
    assert [a.name for a in journal.accounts()] == ["alice"]


def test_migrating_again_changes_nothing(seed: Seed, journal: Journal) -> None:
    delivery = seed.delivery()
    seed.fold(delivery, [point()])
    fingerprint = journal.fingerprint()

    journal.migrate()

    assert journal.fingerprint() == fingerprint
    assert [d.id for d in journal.deliveries()] == [delivery.id]


def test_the_fold_lock_is_held_by_one_holder_at_a_time(journal: Journal) -> None:
    with journal.fold_lock() as first:
        assert first is True
        with journal.fold_lock() as second:
            assert second is False  # a second pass, in this process or another, stays out
    with journal.fold_lock() as again:
        assert again is True  # released when the first holder's block ended


def test_a_waiting_holder_gets_the_fold_lock_once_it_is_released(journal: Journal) -> None:
    import threading

    holding, release, got = threading.Event(), threading.Event(), []

    def holder() -> None:
        with journal.fold_lock() as held:
            assert held
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    holding.wait(10)

    def waiter() -> None:
        with journal.fold_lock(wait_s=10) as held:
            got.append(held)

    waiting = threading.Thread(target=waiter)
    waiting.start()
    release.set()  # the waiter was already waiting, or arrives after: either way it gets it
    waiting.join(10)
    thread.join(10)
    assert got == [True]


# --- records (every section other than metrics) --------------------------------------------

from healthlog.journal.port import StoredRecord  # noqa: E402
from healthlog.model import Item, Record  # noqa: E402


def record(
    identity: str = "W|2026-02-28T10:00:00.000000Z",
    body: str = '{"name":"W"}',
    *items: Item,
    section: str = "workouts",
    start: str | None = "2026-02-28T10:00:00.000000Z",
) -> Record:
    return Record(section, identity, start, None, 60, "W", "Watch", body, tuple(items))


def fix(seq: int, lat: float, series: str = "route") -> Item:
    return Item(series, seq, f"2026-02-28T10:00:0{seq}.000000Z", None, lat, 2.0, 3.0, None, None)


def write_records(seed: Seed, delivery: NewDelivery, *records: Record) -> None:
    seed.journal.write_outcome(
        delivery.id,
        expected=PENDING,
        status=PARSED,
        uncovered=(),
        failure=None,
        points=(),
        records=records,
    )


def stored_records(journal: Journal, **filters: str) -> list[tuple[str, Record, str]]:
    return [(r.account_id, r.record, r.delivery_id) for r in journal.export_records(**filters)]


def test_records_read_back_whole_with_their_items_in_series_order(
    seed: Seed, journal: Journal
) -> None:
    delivery = seed.delivery()
    hr = Item("heartRateData", 0, "2026-02-28T10:00:00.000000Z", 120.0, None, None, None,
              "count/min", '{"Max":131}')  # fmt: skip
    written = record("id-1", '{"a":1}', fix(1, 1.5), fix(0, 1.0), hr)
    write_records(seed, delivery, written)

    (got,) = journal.export_records()
    assert got == StoredRecord(
        seed.account().id, written._replace(items=(hr, fix(0, 1.0), fix(1, 1.5))), delivery.id
    )


def test_an_older_layer_changes_neither_a_record_nor_its_series(
    seed: Seed, journal: Journal
) -> None:
    older, newer = seed.delivery(), seed.delivery()
    write_records(seed, newer, record("w", '{"v":2}', fix(0, 2.0)))
    write_records(seed, older, record("w", '{"v":1}', fix(0, 1.0), fix(1, 1.0)))

    (_, got, layer), = stored_records(journal)  # fmt: skip
    assert (got.body, got.items, layer) == ('{"v":2}', (fix(0, 2.0),), newer.id)


def test_a_newer_layer_replaces_a_series_wholly_and_inherits_series_it_does_not_carry(
    seed: Seed, journal: Journal
) -> None:
    older, newer = seed.delivery(), seed.delivery()
    hr = Item("heartRateData", 0, None, 100.0, None, None, None, "count/min", None)
    write_records(seed, older, record("w", '{"v":1}', fix(0, 1.0), fix(1, 1.0), fix(2, 1.0), hr))
    write_records(seed, newer, record("w", '{"v":2}', fix(0, 2.0)))

    (_, got, _), = stored_records(journal)  # fmt: skip
    assert got.body == '{"v":2}'
    assert got.items == (hr, fix(0, 2.0))  # the route replaced wholly, heart rate inherited


@pytest.mark.slow  # seconds: a property over many fold orders
def test_records_come_out_the_same_whatever_order_their_layers_are_folded_in(
    journal_factory: Callable[[], Journal],
) -> None:
    layers = [
        record("w", '{"v":1}', fix(0, 1.0)),
        record("w", '{"v":2}', Item("heartRateData", 0, None, 1.0)),
        record("w", '{"v":3}'),
        record("s", '{"v":4}', section="symptoms"),
    ]
    delivery_ids = [ids.new_delivery_id(T0 + timedelta(seconds=n)) for n in range(len(layers))]
    results = []
    for order in itertools.permutations(range(len(layers))):
        journal = journal_factory()
        seed = Seed(journal)
        deliveries = [
            seed.delivery(at=T0 + timedelta(seconds=n), delivery_id=delivery_id)
            for n, delivery_id in enumerate(delivery_ids)
        ]
        for i in order:
            write_records(seed, deliveries[i], layers[i])
        results.append([(r.record, r.delivery_id) for r in journal.export_records()])

    assert all(result == results[0] for result in results)
    _, (workout, layer) = results[0]
    assert (workout.body, layer) == ('{"v":3}', delivery_ids[2])
    # the route of layer 0 and the heart rate of layer 1: nobody newer carried them
    assert [(i.series, i.seq) for i in workout.items] == [("heartRateData", 0), ("route", 0)]


def test_writing_the_same_records_again_changes_nothing(seed: Seed, journal: Journal) -> None:
    delivery = seed.delivery()
    write_records(seed, delivery, record("w", "{}", fix(0, 1.0)))
    fingerprint = journal.fingerprint()
    journal.write_outcome(
        delivery.id, expected=PARSED, status=PARSED, uncovered=(), failure=None, points=(),
        records=(record("w", "{}", fix(0, 1.0)),),
    )  # fmt: skip
    assert journal.fingerprint() == fingerprint


def test_export_records_filters_by_account_section_and_start_range(
    seed: Seed, journal: Journal
) -> None:
    alice, bob = seed.account("alice"), seed.account("bob")
    write_records(
        seed,
        seed.delivery(alice),
        record("a", "{}", start="2026-01-01T00:00:00.000000Z"),
        record("b", "{}", start="2026-01-02T00:00:00.000000Z"),
        record("c", "{}", section="ecg", start="2026-01-01T12:00:00.000000Z"),
    )
    write_records(seed, seed.delivery(bob), record("d", "{}"))

    def ids(**filters: str) -> list[str]:
        return [r.identity for _, r, _ in stored_records(journal, **filters)]

    assert ids(account_id=alice.id) == ["c", "a", "b"]  # ecg sorts before workouts
    assert ids(account_id=alice.id, section="workouts", start_from="2026-01-02") == ["b"]
    assert ids(section="workouts", start_to="2026-01-02") == ["a"]
    assert ids(account_id=bob.id) == ["d"]


def test_records_and_their_items_stay_together_across_many_records_and_pages(
    seed: Seed, journal: Journal
) -> None:
    """Records with and without items, and without a start, each get exactly their own."""
    alice, bob = seed.account("alice"), seed.account("bob")
    written = [
        record(f"w{n:04d}", "{}", *(fix(k, float(n)) for k in range(n % 3)),
               start=f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}.000000Z")
        for n in range(1500)  # more than one page of a server-side cursor
    ] + [record("undated", "{}", fix(0, 9.0), fix(1, 9.0), start=None)]  # fmt: skip
    write_records(seed, seed.delivery(alice), *written)
    write_records(seed, seed.delivery(bob), record("bob's", "{}", fix(0, 7.0)))

    got = [r.record for r in journal.export_records(account_id=alice.id)]

    # the record without a start first, then by start; nobody else's items mixed in
    assert got == [written[-1], *written[:-1]]
    assert [r.record.items for r in journal.export_records(account_id=bob.id)] == [(fix(0, 7.0),)]
    later = list(journal.export_records(account_id=alice.id, start_from="2026-01-01T00:24:59"))
    assert [r.record.identity for r in later] == [f"w{n:04d}" for n in range(1499, 1500)]
    assert later[0].record.items == (fix(0, 1499.0), fix(1, 1499.0))


def test_the_fingerprint_covers_records_and_items_and_summary_counts_them(
    seed: Seed, journal: Journal
) -> None:
    empty = journal.fingerprint()
    write_records(seed, seed.delivery(), record("w", "{}", fix(0, 1.0)))
    with_route = journal.fingerprint()
    write_records(seed, seed.delivery(), record("w", "{}", fix(0, 1.5)))

    assert len({empty, with_route, journal.fingerprint()}) == 3
    assert journal.summary().records == {"workouts": 1}


def test_an_account_time_zone_defaults_to_utc_and_can_be_set(journal: Journal) -> None:
    account = journal.add_account("alice", "hash-a")
    assert journal.get_account(account.id) == account
    assert account.time_zone == "UTC"

    journal.set_time_zone(account.id, "Europe/Berlin")

    stored = journal.get_account(account.id)
    assert stored is not None and stored.time_zone == "Europe/Berlin"
    with pytest.raises(AccountNotFound):
        journal.set_time_zone("no-such-account", "UTC")


def test_an_account_unit_system_defaults_to_metric_and_can_be_set(journal: Journal) -> None:
    """Migration 0020: every read of an account carries it; the database refuses another."""
    account = journal.add_account("alice", "hash-a")
    journal.add_account("bob", "hash-b")
    assert account.unit_system == "metric"

    journal.set_unit_system(account.id, "imperial")

    stored = journal.get_account(account.id)
    assert stored is not None and stored.unit_system == "imperial"
    assert journal.account_by_token_hash("hash-a") == stored
    assert {a.name: a.unit_system for a in journal.accounts()} == {
        "alice": "imperial",
        "bob": "metric",
    }
    with pytest.raises(AccountNotFound):
        journal.set_unit_system("no-such-account", "metric")
    with pytest.raises(HealthlogError):  # the check constraint
        journal.set_unit_system(account.id, "nautical")
    stored = journal.get_account(account.id)
    assert stored is not None and stored.unit_system == "imperial"


def test_a_new_token_hash_replaces_the_old_one_at_once(journal: Journal) -> None:
    alice = journal.add_account("alice", "hash-a")
    journal.add_account("bob", "hash-b")

    journal.set_token_hash(alice.id, "hash-a2")

    assert journal.account_by_token_hash("hash-a") is None
    assert journal.account_by_token_hash("hash-a2") == alice
    assert journal.token_hash(alice.id) == "hash-a2"
    assert journal.token_hash("nobody") is None
    with pytest.raises(AccountNotFound):
        journal.set_token_hash("nobody", "hash-c")
    with pytest.raises(TokenTaken, match="token"):
        journal.set_token_hash(alice.id, "hash-b")  # bob's
    assert journal.token_hash(alice.id) == "hash-a2"


def test_an_account_can_be_added_with_its_id_and_creation_time(journal: Journal) -> None:
    created = T0 - timedelta(days=400, microseconds=1)
    moved = journal.add_account("alice", "hash-a", account_id="acct-1", created_at=created)

    assert (moved.id, moved.created_at) == ("acct-1", created)
    assert journal.get_account("acct-1") == moved
    assert journal.account_by_token_hash("hash-a") == moved
    with pytest.raises(AccountIdTaken, match="this id"):
        journal.add_account("bob", "hash-b", account_id="acct-1")
    assert [a.name for a in journal.accounts()] == ["alice"]


# --- the read side: summaries computed in the database -----------------------------------


def test_the_catalog_counts_each_metric_field_unit_and_source_with_first_and_last(
    seed: Seed, journal: Journal
) -> None:
    alice, bob = seed.account("alice"), seed.account("bob")
    seed.fold(
        seed.delivery(alice),
        [
            point("2026-01-01T00:00:00.000000Z", 1.0),
            point("2026-01-03T00:00:00.000000Z", 2.0),
            point("2026-01-02T00:00:00.000000Z", 3.0, source="iPhone"),
            point("2026-01-02T00:00:00.000000Z", 60.0, metric="heart_rate", field="avg",
                  unit="count/min"),
        ],
    )  # fmt: skip
    seed.fold(seed.delivery(bob), [point("2025-01-01T00:00:00.000000Z", 9.0)])

    got = [
        (e.metric, e.field, e.unit, e.source, e.points, e.first, e.last)
        for e in journal.catalog(alice.id)
    ]

    assert got == [
        ("heart_rate", "avg", "count/min", "Watch", 1,
         "2026-01-02T00:00:00.000000Z", "2026-01-02T00:00:00.000000Z"),
        ("step_count", "qty", "count", "Watch", 2,
         "2026-01-01T00:00:00.000000Z", "2026-01-03T00:00:00.000000Z"),
        ("step_count", "qty", "count", "iPhone", 1,
         "2026-01-02T00:00:00.000000Z", "2026-01-02T00:00:00.000000Z"),
    ]  # fmt: skip
    assert journal.catalog("nobody") == []


def test_buckets_sum_up_on_the_phones_local_clock_at_every_resolution(
    seed: Seed, journal: Journal
) -> None:
    """23:30 UTC at +02:00 is 01:30 the next day there; no offset counts as UTC."""
    account = seed.account()
    seed.fold(
        seed.delivery(account),
        [
            point("2026-01-04T23:30:00.000000Z", 2.0, utc_offset=120),  # Mon 5 Jan 01:30
            point("2026-01-05T00:10:00.000000Z", 4.0, utc_offset=120),  # Mon 5 Jan 02:10
            point("2026-01-05T01:10:30.000000Z", 6.0, utc_offset=120),  # Mon 5 Jan 03:10
            point("2026-01-04T10:00:00.000000Z", 1.0, utc_offset=None),  # Sun 4 Jan 10:00
            point("2026-01-31T23:00:00.000000Z", None, utc_offset=-300),  # Sat 31 Jan 18:00
        ],
    )

    def summed(bucket: str, **bounds: str) -> list[tuple[object, ...]]:
        rows = journal.point_buckets(
            account_id=account.id, metric="step_count", field="qty", bucket=bucket, **bounds
        )  # type: ignore[arg-type]
        return [(r.start, r.count, r.min, r.avg, r.max, r.sum) for r in rows]

    assert summed("day") == [
        ("2026-01-04", 1, 1.0, 1.0, 1.0, 1.0),
        ("2026-01-05", 3, 2.0, 4.0, 6.0, 12.0),
        ("2026-01-31", 1, None, None, None, None),  # counted, with no value
    ]
    assert summed("hour")[1:4] == [
        ("2026-01-05T01:00", 1, 2.0, 2.0, 2.0, 2.0),
        ("2026-01-05T02:00", 1, 4.0, 4.0, 4.0, 4.0),
        ("2026-01-05T03:00", 1, 6.0, 6.0, 6.0, 6.0),
    ]
    assert [r[0] for r in summed("minute")][:2] == ["2026-01-04T10:00", "2026-01-05T01:30"]
    assert summed("week") == [
        ("2025-12-29", 1, 1.0, 1.0, 1.0, 1.0),  # Sunday the 4th: the week of Monday 29 Dec
        ("2026-01-05", 3, 2.0, 4.0, 6.0, 12.0),
        ("2026-01-26", 1, None, None, None, None),
    ]
    assert [r[:2] for r in summed("month")] == [("2026-01-01", 5)]
    # the bounds are the UTC start's, half open
    assert [r[:2] for r in summed("day", start_from="2026-01-05", start_to="2026-01-05T01")] == [
        ("2026-01-05", 1)
    ]


def test_buckets_keep_to_one_field_and_source_and_account(seed: Seed, journal: Journal) -> None:
    alice, bob = seed.account("alice"), seed.account("bob")
    seed.fold(
        seed.delivery(alice),
        [
            point(qty=1.0),
            point(qty=10.0, source="iPhone"),
            point(qty=100.0, field="other"),
        ],
    )
    seed.fold(seed.delivery(bob), [point(qty=1000.0)])

    def total(**also: str) -> list[float | None]:
        rows = journal.point_buckets(
            account_id=alice.id, metric="step_count", field="qty", bucket="day", **also
        )
        return [r.sum for r in rows]

    assert total() == [11.0]
    assert total(source="iPhone") == [10.0]
    with pytest.raises(ValueError, match="no bucket"):
        journal.point_buckets(
            account_id=alice.id,
            metric="step_count",
            field="qty",
            bucket="year",  # type: ignore[arg-type]
        )


def test_buckets_and_exports_keep_to_one_unit_when_asked(seed: Seed, journal: Journal) -> None:
    """A field stored in two units (glucose in mg/dL, then mmol/L) is read in one."""
    alice = seed.account("alice")
    seed.fold(
        seed.delivery(alice),
        [
            point("2026-02-28T06:00:00.000000Z", 100.0, metric="blood_glucose", unit="mg/dL"),
            point("2026-02-28T07:00:00.000000Z", 140.0, metric="blood_glucose", unit="mg/dL"),
            point("2026-02-28T18:00:00.000000Z", 5.5, metric="blood_glucose", unit="mmol/L"),
        ],
    )

    def sums(**unit: str) -> list[tuple[int, float | None]]:
        rows = journal.point_buckets(
            account_id=alice.id, metric="blood_glucose", field="qty", bucket="day", **unit
        )
        return [(r.count, r.sum) for r in rows]

    assert sums() == [(3, 245.5)]
    assert sums(unit="mg/dL") == [(2, 240.0)]
    assert sums(unit="mmol/L") == [(1, 5.5)]
    assert sums(unit="kg") == []
    for metric in ("blood_glucose", None):  # one metric's range, and every metric's
        exported = journal.export_points(account_id=alice.id, metric=metric, unit="mmol/L")
        assert [(p.point.unit, p.point.qty) for p in exported] == [("mmol/L", 5.5)]


def test_metric_days_and_late_points_tell_which_days_have_data_and_what_came_late(
    seed: Seed, journal: Journal
) -> None:
    """A point older than what an earlier delivery of its metric brought is late."""
    account = seed.account()
    first, second, third = seed.delivery(account), seed.delivery(account), seed.delivery(account)
    seed.fold(
        first,
        [
            point("2026-01-01T08:00:00.000000Z", utc_offset=0),
            point("2026-01-03T08:00:00.000000Z", utc_offset=0),
            point("2026-01-01T08:00:00.000000Z", metric="heart_rate", utc_offset=0),
        ],
    )
    seed.fold(
        second,
        [
            point("2026-01-02T08:00:00.000000Z", utc_offset=0),  # before the 3rd: late
            point("2026-01-02T09:00:00.000000Z", utc_offset=0),  # late too
            point("2026-01-04T08:00:00.000000Z", utc_offset=0),  # after it: on time
            point("2026-01-02T08:00:00.000000Z", metric="heart_rate", utc_offset=0),  # 1st: on time
            point("2026-01-01T08:00:00.000000Z", qty=2.0, utc_offset=0),  # sent again
        ],
    )
    # a window that sends everything again (HAE's Default period) and one new point:
    # the points already held keep their first arrival's verdict and count once
    seed.fold(
        third,
        [
            point("2026-01-01T08:00:00.000000Z", utc_offset=0),
            point("2026-01-02T08:00:00.000000Z", utc_offset=0),
            point("2026-01-02T09:00:00.000000Z", utc_offset=0),
            point("2026-01-03T08:00:00.000000Z", utc_offset=0),
            point("2026-01-04T08:00:00.000000Z", utc_offset=0),
            point("2026-01-05T08:00:00.000000Z", utc_offset=0),
        ],
    )

    assert journal.metric_days(account_id=account.id) == [
        ("heart_rate", "2026-01-01", 1),
        ("heart_rate", "2026-01-02", 1),
        ("step_count", "2026-01-01", 1),
        ("step_count", "2026-01-02", 2),
        ("step_count", "2026-01-03", 1),
        ("step_count", "2026-01-04", 1),
        ("step_count", "2026-01-05", 1),
    ]
    assert journal.metric_days(
        account_id=account.id, metric="step_count", day_from="2026-01-02", day_to="2026-01-03"
    ) == [("step_count", "2026-01-02", 2)]
    assert journal.late_points(account_id=account.id) == [("step_count", "2026-01-02", 2)]
    assert journal.late_points(account_id=account.id, day_from="2026-01-03") == []
    assert journal.late_points(account_id=account.id, day_to="2026-01-03") == [
        ("step_count", "2026-01-02", 2)
    ]
    assert journal.late_points(account_id=account.id, metric="heart_rate") == []
    # refolding a delivery counts nothing twice
    seed.fold(
        second, [point("2026-01-02T08:00:00.000000Z", utc_offset=0)], expected=ParseStatus.PARSED
    )
    assert sum(n for *_, n in journal.metric_days(account_id=account.id)) == 8


def test_metric_days_count_the_showcase_points_per_day_of_their_own_clock(
    seed: Seed, journal: Journal
) -> None:
    """What the fold counts as it writes is what the showcase holds, day by local day."""
    account = seed.account()
    sent = [
        point("2026-03-28T23:30:00.000000Z", utc_offset=60),  # the 29th in Paris
        point("2026-03-29T00:30:00.000000Z", utc_offset=120),  # the 29th, after the change
        point("2026-03-29T22:30:00.000000Z", utc_offset=120),  # the 30th
        point("2026-03-29T22:30:00.000000Z", field="other", utc_offset=120),
        point("2026-03-30T10:00:00.000000Z", utc_offset=None),  # no offset: UTC
    ]
    seed.fold(seed.delivery(account), sent[:3])
    seed.fold(seed.delivery(account), sent[1:])
    counted: dict[str, int] = {}
    for p in journal.export_points(account_id=account.id):
        day = local_day(p.point.start, p.point.utc_offset)
        counted[day] = counted.get(day, 0) + 1
    assert journal.metric_days(account_id=account.id) == [
        ("step_count", day, n) for day, n in sorted(counted.items())
    ]
    assert counted == {"2026-03-29": 2, "2026-03-30": 3}


def test_exports_filter_by_field_source_and_identity_and_list_records_without_items(
    seed: Seed, journal: Journal
) -> None:
    account = seed.account()
    seed.fold(seed.delivery(account), [point(qty=1.0), point(qty=2.0, source="iPhone"),
                                       point(qty=3.0, field="other")])  # fmt: skip
    write_records(seed, seed.delivery(account), record("a", "{}", fix(0, 1.0)), record("b", "{}"))

    def qtys(**filters: str) -> list[float | None]:
        return [p.point.qty for p in journal.export_points(**filters)]

    assert qtys(field="qty") == [1.0, 2.0]
    assert qtys(field="qty", source="iPhone") == [2.0]
    (only,) = journal.export_records(identity="a")
    assert only.record.items == (fix(0, 1.0),)
    listed = list(journal.export_records(with_items=False))
    assert [(r.record.identity, r.record.items) for r in listed] == [("a", ()), ("b", ())]


def test_a_delivery_keeps_a_bounded_list_of_uncovered_keys_and_counts_the_rest(
    seed: Seed, journal: Journal
) -> None:
    """A body with ten thousand unknown keys must not make a row of megabytes."""
    delivery = seed.delivery()
    keys = sorted(["k" * 1000, *(f"unknown{n:05d}" for n in range(10_000))])

    seed.fold(delivery, [], uncovered=tuple(keys))

    stored = journal.get_delivery(delivery.id)
    assert stored is not None and stored.status is PARTIAL
    assert len(stored.uncovered) == 101
    assert stored.uncovered[:2] == ("k" * 199 + "\u2026", "unknown00000")
    assert stored.uncovered[-1] == "(+9901 more)"
    assert len(journal.summary().uncovered) == 101


def test_summary_counts_the_failed_deliveries_per_failure_class(
    seed: Seed, journal: Journal
) -> None:
    alice, bob = seed.account("alice"), seed.account("bob")
    for account, failure in [(alice, "crashed"), (alice, "crashed"), (alice, "deadline"),
                             (bob, "crashed")]:  # fmt: skip
        delivery = seed.delivery(account)
        journal.write_outcome(
            delivery.id, expected=PENDING, status=FAILED, uncovered=(), failure=failure,
            points=(),
        )  # fmt: skip
    seed.fold(seed.delivery(alice), [point()])

    assert journal.summary().failures == {"crashed": 3, "deadline": 1}
    assert journal.summary(alice.id).failures == {"crashed": 2, "deadline": 1}
    assert journal.summary(seed.account("carol").id).failures == {}


def test_the_catalog_counts_what_deliveries_brought_and_a_refold_does_not_count_again(
    seed: Seed, journal: Journal
) -> None:
    account = seed.account()
    first, second = seed.delivery(account), seed.delivery(account)
    seed.fold(first, [point("2026-01-01T00:00:00.000000Z"), point("2026-01-02T00:00:00.000000Z")])
    seed.fold(second, [point("2026-01-02T00:00:00.000000Z")])  # the same point again

    def counted() -> list[tuple[str, int, str, str]]:
        return [(e.metric, e.points, e.first, e.last) for e in journal.catalog(account.id)]

    assert counted() == [
        ("step_count", 3, "2026-01-01T00:00:00.000000Z", "2026-01-02T00:00:00.000000Z")
    ]
    assert journal.summary(account.id).points == 2  # what the showcase holds
    seed.fold(second, [point("2026-01-02T00:00:00.000000Z")], expected=PARSED)  # a replay
    assert counted()[0][1] == 3
