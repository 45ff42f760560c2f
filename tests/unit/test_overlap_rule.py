"""The overlap rule on its own: priorities, instants, shares, days on the phone's clock.

End to end (imports, HAE deliveries, both journals, the export's command line):
``tests/integration/test_overlap.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from healthlog import cli, ids, priority
from healthlog.archive.keys import EXPORT_ZIP
from healthlog.config import Settings
from healthlog.errors import ConfigError
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import NewDelivery, ParseStatus, Point
from healthlog.reads import Reads, Resolution, overlap
from healthlog.reads.overlap import Candidate, SourcePriority

WATCH, PHONE, RING = "Jo's Apple Watch", "Jo's iPhone", "Ring"


def at(day: int, hh_mm: str) -> str:
    return f"2026-03-{day:02d}T{hh_mm}:00.000000Z"


def cand(
    start: str,
    qty: float | None,
    source: str,
    *,
    end: str | None = None,
    offset: int | None = 0,
    layer: str = "01",
    imported: bool = False,
    field: str = "qty",
) -> Candidate[str]:
    return Candidate(field, start, end, offset, source, qty, layer, imported, f"{source}@{start}")


def counted(points: list[Candidate[str]], **kw: object) -> list[tuple[str, float | None]]:
    kw.setdefault("cumulative", True)
    return [(c.item, c.counted) for c in overlap.counted(points, **kw)]  # type: ignore[arg-type]


def test_the_priority_ranks_by_name_fragments_then_by_name() -> None:
    default = priority.DEFAULT
    assert sorted([RING, PHONE, WATCH], key=default.rank) == [WATCH, PHONE, RING]
    # HAE's merged sources rank by their best part
    assert default.rank(f"{PHONE}|{WATCH}")[0] == default.rank(WATCH)[0] == 0
    ring_first = SourcePriority.parse(" Ring , WATCH ")
    assert ring_first.fragments == ("ring", "watch")
    assert sorted([PHONE, WATCH, RING], key=ring_first.rank) == [RING, WATCH, PHONE]
    with pytest.raises(ConfigError, match="HEALTHLOG_SOURCE_PRIORITY"):
        SourcePriority.parse(" , ")
    with pytest.raises(ConfigError, match="HEALTHLOG_SOURCE_PRIORITY"):
        Settings.from_env({"HEALTHLOG_SOURCE_PRIORITY": ","})
    assert Settings.from_env({"HEALTHLOG_SOURCE_PRIORITY": "ring"}).priority() == (
        SourcePriority(("ring",))
    )


def test_a_sample_counts_the_time_no_source_before_it_covers() -> None:
    points = [
        cand(at(2, "10:00"), 100, PHONE, end=at(2, "10:10")),
        cand(at(2, "10:02"), 20, WATCH, end=at(2, "10:04")),
        cand(at(2, "10:06"), 40, WATCH, end=at(2, "10:08")),
        cand(at(2, "10:09"), 50, RING, end=at(2, "10:11")),  # after both: half free
    ]
    assert counted(points) == [
        (f"{PHONE}@{at(2, '10:00')}", pytest.approx(60.0)),
        (f"{WATCH}@{at(2, '10:02')}", 20),
        (f"{WATCH}@{at(2, '10:06')}", 40),
        (f"{RING}@{at(2, '10:09')}", pytest.approx(25.0)),
    ]


def test_instants_are_covered_by_the_same_time_or_a_span_before_them() -> None:
    points = [
        cand(at(2, "08:00"), 5, PHONE),  # the Watch at the same time: out
        cand(at(2, "08:00"), 7, WATCH),
        cand(at(2, "08:00"), 9, WATCH, field="other"),  # another field: decided on its own
        cand(at(2, "08:00"), None, RING),  # no value, covered: out too
        cand(at(2, "08:01"), 2, WATCH, end=at(2, "08:03")),
        cand(at(2, "08:02"), 3, PHONE),  # inside the Watch's span: out
        cand(at(2, "08:03"), 1, PHONE),  # the span's end is not in it: counts
        cand(at(2, "08:30"), None, RING),  # no value, free: kept, counting nothing
    ]
    assert counted(points) == [
        (f"{WATCH}@{at(2, '08:00')}", 9),
        (f"{WATCH}@{at(2, '08:00')}", 7),
        (f"{WATCH}@{at(2, '08:01')}", 2),
        (f"{PHONE}@{at(2, '08:03')}", 1),
        (f"{RING}@{at(2, '08:30')}", None),
    ]


def test_one_origin_per_day_the_newest_layers() -> None:
    points = [
        cand(at(2, "09:00"), 10, WATCH, layer="02", imported=True),
        cand(at(2, "09:00"), 12, f"{PHONE}|{WATCH}", layer="01"),  # older HAE layer
        cand(at(3, "09:00"), 30, WATCH, layer="01", imported=True),
        cand(at(3, "10:00"), 33, f"{PHONE}|{WATCH}", layer="03"),  # newer HAE layer
    ]
    assert counted(points, cumulative=False) == [
        (f"{WATCH}@{at(2, '09:00')}", 10),
        (f"{PHONE}|{WATCH}@{at(3, '10:00')}", 33),
    ]
    # keep_all: the other origin's points too, counting nothing
    every = counted(points, cumulative=False, keep_all=True)
    assert [value for _, value in every] == [10, 0.0, 0.0, 33]


def test_days_are_the_phones_and_decided_once_complete() -> None:
    # 23:30 UTC on the 2nd at +01:00 is the 3rd on the phone: it meets the 3rd's Watch
    late = cand(at(2, "23:30"), 4, PHONE, end=at(2, "23:40"), offset=60)
    watch = cand(at(2, "23:35"), 6, WATCH, end=at(2, "23:45"), offset=60)
    other_day = cand(at(2, "22:00"), 8, PHONE, end=at(2, "22:10"), offset=60)
    assert overlap.local_day(late.start, 60) == "2026-03-03"
    assert overlap.local_day(other_day.start, 60) == "2026-03-02"
    assert overlap.local_day(at(2, "01:00"), -120) == "2026-03-01"
    found = counted([other_day, late, watch])
    assert found == [
        (f"{PHONE}@{at(2, '22:00')}", 8),
        (f"{PHONE}@{at(2, '23:30')}", pytest.approx(2.0)),
        (f"{WATCH}@{at(2, '23:35')}", 6),
    ]


def test_the_rule_streams_a_day_at_a_time() -> None:
    """A long run is decided as it is read: days leave once no later point can join them."""
    seen: list[str] = []

    def feed() -> object:
        for day in range(1, 29):
            seen.append(f"read {day}")
            yield cand(at(day, "12:00"), day, WATCH)

    out = overlap.counted(feed(), cumulative=True)  # type: ignore[arg-type]
    first = next(out)
    assert first.counted == 1
    assert len(seen) < 5  # the 1st came out long before the 28th was read


def test_buckets_sum_what_counts_on_the_phones_clock() -> None:
    points = [
        cand(at(2, "23:30"), 4, PHONE, end=at(2, "23:40"), offset=60),
        cand(at(2, "23:35"), 6, WATCH, end=at(2, "23:45"), offset=60),
        cand(at(2, "22:00"), None, PHONE, offset=60),
    ]
    rows = overlap.buckets(overlap.counted(points, cumulative=True), "day")
    assert [(r.start, r.count, r.sum, r.min, r.max) for r in rows] == [
        ("2026-03-02", 1, None, None, None),
        ("2026-03-03", 2, pytest.approx(8.0), pytest.approx(2.0), 6),
    ]
    assert [r.start for r in overlap.buckets(overlap.counted(points, cumulative=True), "week")] == [
        "2026-03-02"
    ]


def test_the_calendars_ends_are_read_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parser takes year 1 and year 9999: with an offset, their local days leave the
    calendar; every read says the UTC day instead of failing."""
    path = tmp_path / "journal.db"
    journal = SqliteJournal(str(path))
    journal.migrate()
    account = journal.add_account("alice", "hash")

    def step(start: str, offset: int, qty: float, source: str) -> Point:
        return Point("step_count", "qty", source, start, offset, None, qty, None, "count", None)

    sent = (
        ("application/json", [step("0001-01-01T05:00:00.000000Z", -300, 5, WATCH),
                              step("9999-12-31T22:00:00.000000Z", 300, 3, PHONE)]),
        (EXPORT_ZIP, [step("2026-01-01T05:00:00.000000Z", 0, 1, PHONE)]),
    )  # fmt: skip
    for content_type, points in sent:
        at = ids.now()
        key = ids.new_delivery_id(at)
        journal.insert_delivery(NewDelivery(key, account.id, at, key, 1, content_type))
        journal.write_outcome(
            key, expected=ParseStatus.PENDING, status=ParseStatus.PARSED, uncovered=(),
            failure=None, points=points,
        )  # fmt: skip
    reads = Reads(journal, account)
    for resolution in (Resolution.RAW, Resolution.MINUTE, Resolution.HOUR, Resolution.DAY):
        found = reads.series("step_count", resolution=resolution).samples
        assert [s.value for s in found] == [5.0, 1.0, 3.0], resolution
    days = reads.series("step_count", resolution=Resolution.DAY).samples
    assert [s.t for s in days] == ["0001-01-01", "2026-01-01", "9999-12-31"]
    journal.close()
    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", f"sqlite:///{path}")
    monkeypatch.setenv("HEALTHLOG_ARCHIVE_URL", f"file://{tmp_path}")
    out = tmp_path / "out.csv"
    for argv in (
        ["export", "--metric", "step_count", "-o", str(out)],
        ["export", "--from", "0001-01-01", "--to", "9999-12-31", "-o", str(out)],
        ["coverage", "--json"],
    ):
        assert cli.main(argv) == 0, argv
