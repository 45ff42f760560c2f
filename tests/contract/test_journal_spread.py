"""Days a sample spans (issue "One truth", item 6): a cumulative sample counts in each
bucket of the phone's clock it overlaps its part of its value, in proportion to its time
there, as the Health app's statistics split it. The same on both backends, the same in
the journal's SQL (point_buckets, the day sums the fold keeps) and in the overlap rule's
Python (``overlap.buckets``): both hand the spanning samples to one rule,
``clock.spread``. A reading (heart rate) is never spread.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from healthlog import clock
from healthlog.journal.core import SqlJournal
from healthlog.journal.port import Journal
from healthlog.model import Point
from healthlog.reads import overlap

from tests.contract.conftest import ADAPTERS, Seed, open_journal, point

#: steps from 23:30 to 00:30 on the phone's clock (+01:00), 60 of them: 30 on each day
WALK = point("2026-03-01T22:30:00.000000Z", 60.0, end="2026-03-01T23:30:00.000000Z")
#: on the 1st alone, and one of 5 days (longer than clock.SPREAD_SPAN: booked at its start)
MORNING = point("2026-03-01T07:00:00.000000Z", 10.0, end="2026-03-01T07:10:00.000000Z")
LONG = point("2026-02-20T12:00:00.000000Z", 500.0, end="2026-02-25T12:00:00.000000Z")
#: a reading that lasts across midnight: never spread
PULSE = point(
    "2026-03-01T22:30:00.000000Z", 70.0, metric="heart_rate", field="avg",
    unit="count/min", end="2026-03-01T23:30:00.000000Z",
)  # fmt: skip
EVERY_DAY = ("0000-01-01", "9999-99-99")


def day_totals(journal: Journal, account_id: str, metric: str = "step_count") -> dict[str, float]:
    field = "avg" if metric == "heart_rate" else "qty"
    return {
        kept.day: kept.total or 0.0
        for kept in journal.day_sums(
            account_id=account_id, metric=metric, field=field,
            day_from=EVERY_DAY[0], day_to=EVERY_DAY[1],
        )
    }  # fmt: skip


def buckets(journal: Journal, account_id: str, bucket: str, **bounds: object) -> dict[str, float]:
    return {
        row.start: row.sum or 0.0
        for row in journal.point_buckets(
            account_id=account_id, metric="step_count", field="qty",
            bucket=bucket, spread=True, **bounds,  # type: ignore[arg-type]
        )
    }  # fmt: skip


def folded(seed: Seed, *points: Point) -> str:
    account = seed.account()
    seed.fold(seed.delivery(account), list(points))
    return account.id


def test_the_days_the_fold_keeps_split_a_sample_that_spans_midnight(
    journal: Journal, seed: Seed
) -> None:
    alice = folded(seed, WALK, MORNING, LONG, PULSE)
    assert day_totals(journal, alice) == pytest.approx(
        {"2026-02-20": 500.0, "2026-03-01": 40.0, "2026-03-02": 30.0}
    )
    # a reading's day is its start's, whatever its end
    assert day_totals(journal, alice, "heart_rate") == {"2026-03-01": 70.0}
    # a later delivery re-sends the walk, longer: the days follow it
    longer = WALK._replace(end="2026-03-02T00:30:00.000000Z")  # 23:30 to 01:30: 15 + 45
    seed.fold(seed.delivery(), [longer])
    assert day_totals(journal, alice) == pytest.approx(
        {"2026-02-20": 500.0, "2026-03-01": 25.0, "2026-03-02": 45.0}
    )


def test_buckets_split_it_in_sql_as_the_rule_does_in_python(journal: Journal, seed: Seed) -> None:
    alice = folded(seed, WALK, MORNING)
    days = buckets(journal, alice, "day")
    hours = buckets(journal, alice, "hour")
    assert days == pytest.approx({"2026-03-01": 40.0, "2026-03-02": 30.0})
    assert hours == pytest.approx(
        {"2026-03-01T08:00": 10.0, "2026-03-01T23:00": 30.0, "2026-03-02T00:00": 30.0}
    )
    assert buckets(journal, alice, "week") == pytest.approx(
        {"2026-02-23": 40.0, "2026-03-02": 30.0}
    )
    # the overlap rule's Python, over the same stored points, gives the same buckets
    stored = list(journal.export_points(account_id=alice, metric="step_count"))
    candidates = [
        overlap.Candidate(s.point.field, s.point.start, s.point.end, s.point.utc_offset,
                          s.point.source, s.point.qty, s.delivery_id, False, s, s.point.qty)
        for s in stored
    ]  # fmt: skip
    for bucket, sql in (("day", days), ("hour", hours)):
        python = {r.start: r.sum for r in overlap.buckets(candidates, bucket, spread=True)}
        assert python == pytest.approx(sql), bucket


def test_a_range_counts_the_parts_within_it_of_samples_that_started_before(
    journal: Journal, seed: Seed
) -> None:
    alice = folded(seed, WALK, MORNING)
    the_second = {"start_from": clock.Wall(clock.from_text("2026-03-02T00:00:00")),
                  "start_to": clock.Wall(clock.from_text("2026-03-03T00:00:00"))}  # fmt: skip
    assert buckets(journal, alice, "day", **the_second) == pytest.approx({"2026-03-02": 30.0})
    the_first = {"start_from": clock.Wall(clock.from_text("2026-03-01T00:00:00")),
                 "start_to": clock.Wall(clock.from_text("2026-03-02T00:00:00"))}  # fmt: skip
    assert buckets(journal, alice, "day", **the_first) == pytest.approx({"2026-03-01": 40.0})


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_migration_0018_spreads_the_days_kept_before_it(adapter: str, tmp_path: Path) -> None:
    """A journal whose day sums were kept before samples were spread (the walk booked
    whole on the day it starts, nothing on the next): 0018 sums them again, spread."""
    with ExitStack() as resources:
        journal = open_journal(adapter, tmp_path, resources)
        assert isinstance(journal, SqlJournal)
        journal.migrate(target=17)
        seed = Seed(journal)
        alice = folded(seed, WALK, MORNING)
        sql = journal._sql
        p = sql.param

        def as_before(conn: Any) -> None:  # what the fold of 0017 kept
            conn.execute(
                f"UPDATE point_day_sums SET total = 70 WHERE account_id = {p('a')}"
                f" AND day = {p('d')}",
                {"a": alice, "d": "2026-03-01"},
            )
            conn.execute(
                f"DELETE FROM point_day_sums WHERE account_id = {p('a')} AND day = {p('d')}",
                {"a": alice, "d": "2026-03-02"},
            )

        journal._driver.attempt(as_before, write=True)
        assert day_totals(journal, alice) == {"2026-03-01": 70.0}
        journal.migrate()
        assert day_totals(journal, alice) == pytest.approx({"2026-03-01": 40.0, "2026-03-02": 30.0})
        journal.close()
