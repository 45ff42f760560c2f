"""Series (migration 0011): a point's identity and the layer rule across units, and the
migration of the points folded before it, on every backend."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from healthlog.journal import rows as journal_rows
from healthlog.journal.core import SqlJournal
from healthlog.journal.port import Journal, StoredPoint
from healthlog.model import Point

from tests.contract.conftest import ADAPTERS, T0, Seed, open_journal, point

START = "2026-02-28T10:00:00.000000Z"


def weight(qty: float, unit: str, start: str = START) -> Point:
    return point(start, qty, metric="weight_body_mass", source="Scale", unit=unit)


def in_one_statement(journal: SqlJournal) -> tuple[list[StoredPoint], str]:
    """Every point and the fingerprint as one statement per table reads them: how the
    journal read them before migration 0011, whose ``series`` now lists the metrics an
    export of every metric reads one by one (the journal's ``_points_by_metric``)."""
    sql, every = journal._sql, {"and": ""}

    def before_0014(name: str) -> str:
        # the points had no seq before migration 0014: each was the only one of its key
        text = sql.render(name, **every)
        text = re.sub(r"\bextra,\s+seq,", "extra, 0 AS seq,", text)
        return text.replace(", source, seq", ", source")

    with journal._driver.streaming() as stream:
        found = stream(before_0014("export_points"), {})
        points = list(map(journal_rows.stored_point, found))
        names = journal_rows.FINGERPRINT_STATEMENTS
        tables = [stream(before_0014(name), {}) for name in names]
        return points, journal_rows.fingerprint(tables)


def reads(journal: Journal, account_id: str, *, before_0011: bool = False) -> dict[str, Any]:
    """What the port's reads of points give (before the migration: what they gave)."""
    if before_0011:
        assert isinstance(journal, SqlJournal)
        points, fingerprint = in_one_statement(journal)
    else:
        points, fingerprint = list(journal.export_points()), journal.fingerprint()
    one_metric = [
        p
        for p in points  # the journal's own read of one metric is compared after the migration
        if p.account_id == account_id
        and p.point.metric == "heart_rate"
        and p.point.start >= "2026-03-01T00:00:00.000000Z"
    ]
    if not before_0011:
        assert one_metric == list(
            journal.export_points(
                account_id=account_id, metric="heart_rate", start_from="2026-03-01T00:00:00Z"
            )
        )
    return {
        "points": points,
        "one_metric": one_metric,
        "fingerprint": fingerprint,
        "summary": journal.summary().points,
        "buckets": journal.point_buckets(
            account_id=account_id, metric="heart_rate", field="avg", bucket="day"
        ),
        "days": journal.metric_days(account_id=account_id),
    }


def test_a_point_sent_again_in_another_unit_replaces_its_key_and_is_held_once(
    seed: Seed, journal: Journal
) -> None:
    """The unit is one of the point's values: the newest layer's wins, with its value."""
    older, newer = seed.delivery(), seed.delivery()
    seed.fold(newer, [weight(154.0, "lb")])
    seed.fold(older, [weight(70.0, "kg")])  # older, folded after: changes nothing

    (held,) = list(journal.export_points())
    assert (held.point.unit, held.point.qty, held.delivery_id) == ("lb", 154.0, newer.id)
    assert journal.summary().points == 1
    assert journal.metric_days(account_id=seed.account().id) == [
        ("weight_body_mass", "2026-02-28", 1)
    ]

    newest = seed.delivery()
    seed.fold(newest, [weight(70.5, "kg"), weight(71.0, "kg", "2026-03-01T10:00:00.000000Z")])
    assert [(p.point.start, p.point.unit, p.point.qty) for p in journal.export_points()] == [
        (START, "kg", 70.5),
        ("2026-03-01T10:00:00.000000Z", "kg", 71.0),
    ]
    assert journal.summary().points == 2


@pytest.mark.slow  # seconds: a property over many fold orders
def test_units_changing_back_and_forth_give_one_showcase_whatever_the_fold_order(
    journal_factory: Any,
) -> None:
    sends = [[weight(70.0, "kg")], [weight(154.0, "lb")], [weight(11.0, "st")]]
    held_in = set()
    for order in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        journal = journal_factory()
        seed = Seed(journal)
        deliveries = [seed.delivery(at=T0 + timedelta(seconds=n)) for n in range(3)]
        for n in order:
            seed.fold(deliveries[n], sends[n])
        (held,) = list(journal.export_points())
        ids = [d.id for d in deliveries]
        held_in.add((held.point, ids.index(held.delivery_id)))
    assert held_in == {(weight(11.0, "st"), 2)}


def test_a_key_sent_twice_in_one_delivery_in_two_units_keeps_the_last(
    seed: Seed, journal: Journal
) -> None:
    seed.fold(seed.delivery(), [weight(70.0, "kg"), weight(154.0, "lb")])

    assert [(p.point.unit, p.point.qty) for p in journal.export_points()] == [("lb", 154.0)]


# --- the migration ---------------------------------------------------------------------------


def old_points(accounts: tuple[str, str]) -> list[tuple[Any, ...]]:
    """Points as a fold at version 10 left them: two accounts, several metrics, fields,
    sources and units, offsets, ends, texts and extras."""
    return [
        (account, metric, field, source, start, offset, end, qty, text, unit, extra)
        for account in accounts
        for metric, field, source, unit in (
            ("heart_rate", "avg", "Watch", "count/min"),
            ("heart_rate", "min", "Watch", "count/min"),
            ("heart_rate", "avg", "Phone", "count/min"),
            ("step_count", "qty", "Watch", "count"),
            ("weight_body_mass", "qty", "Scale", "kg" if account == accounts[0] else "lb"),
        )
        for start, offset, end, qty, text, extra in (
            ("2026-02-28T23:30:00.000000Z", 60, None, 61.5, None, None),
            ("2026-03-01T08:00:00.000000Z", None, "2026-03-01T08:01:00.000000Z", 70.0, None, None),
            ("2026-03-02T12:00:00.000000Z", -300, None, None, "awake", '{"k":1}'),
        )
    ]


def insert_old_points(journal: SqlJournal, rows: list[tuple[Any, ...]], at: str, id_: str) -> None:
    # the points table of version 10 had no seq (migration 0014)
    columns = [*(f for f in Point._fields if f != "seq"), "layer_received_at", "layer_id"]
    columns.insert(0, "account_id")
    sql = journal._sql
    insert = (
        "INSERT INTO points ("
        + ", ".join(f'"{c}"' for c in columns)
        + ") VALUES ("
        + ", ".join(sql.param(f"v{n}") for n in range(len(columns)))
        + ")"
    )

    def work(conn: Any) -> None:
        for row in rows:
            conn.execute(insert, {f"v{n}": v for n, v in enumerate((*row, at, id_))})

    journal._driver.attempt(work, write=True)


def at_version_10_with_points(journal: SqlJournal) -> tuple[Seed, str, str, list[Any]]:
    """The journal at version 10 holding ``old_points`` of two accounts, as a fold left them.

    Returns the seed, alice's and bob's ids, and the rows."""
    journal.migrate(target=10)
    seed = Seed(journal)
    alice, bob = seed.account("alice").id, seed.account("bob").id
    layer = seed.delivery()  # the delivery whose fold left the points
    rows = old_points((alice, bob))
    insert_old_points(journal, rows, f"{layer.received_at:%Y-%m-%dT%H:%M:%S.%fZ}", layer.id)
    return seed, alice, bob, rows


@contextmanager
def at_version_10(
    adapter: str, tmp_path: Path
) -> Iterator[tuple[SqlJournal, Seed, str, str, list[Any]]]:
    """A journal of ``adapter`` left at version 10 with ``old_points`` in it
    (``at_version_10_with_points``), closed after the block."""
    with ExitStack() as resources:
        journal = open_journal(adapter, tmp_path, resources)
        assert isinstance(journal, SqlJournal)
        try:
            yield (journal, *at_version_10_with_points(journal))
        finally:
            journal.close()


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_migration_0011_keeps_every_point_and_every_read(adapter: str, tmp_path: Path) -> None:
    with at_version_10(adapter, tmp_path) as (journal, seed, alice, _, rows):
        before = reads(journal, alice, before_0011=True)
        assert len(before["points"]) == len(rows)

        journal.migrate()

        # also: every metric read one by one gives the one statement's rows and hash
        assert reads(journal, alice) == before
        assert in_one_statement(journal) == (before["points"], before["fingerprint"])
        # the keys go on working: a newer layer replaces a migrated point, in another
        # unit too, and adds nothing beside it
        start = "2026-03-01T08:00:00.000000Z"
        seed.fold(
            seed.delivery(),
            [point(start, 154.0, metric="weight_body_mass", source="Scale", unit="lb")],
        )
        after = list(journal.export_points())
        assert len(after) == len(rows)
        changed = [p for p in after if p not in before["points"]]
        assert [(p.account_id, p.point.start, p.point.unit, p.point.qty) for p in changed] == [
            (alice, start, "lb", 154.0)
        ]
