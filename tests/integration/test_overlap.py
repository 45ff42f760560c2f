"""One truth when sources overlap: the same days from an import and HAE, an iPhone and a Watch.

Real imports of generated exports (``tests.export_gen``) and real HAE deliveries folded
by the fold, into SQLite and PostgreSQL; the daily totals are read the way the
dashboard, ``plot`` and the MCP server read them (``Reads``), and the export's rows
the way ``healthlog export`` writes them (through its command line).
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from healthlog import cli, ids, priority, tokens
from healthlog.archive.local import LocalArchive
from healthlog.config import Settings
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.journal.port import BucketRow, Journal
from healthlog.journal.postgres import PostgresJournal
from healthlog.journal.rows import to_text
from healthlog.journal.sqlite import SqliteJournal
from healthlog.ops import importer
from healthlog.reads import Reads, Resolution, overlap

from tests import export_gen, pg
from tests.conftest import Phone, metrics_body

PHONE, WATCH = export_gen.PHONE, export_gen.WATCH
MERGED = f"{PHONE}|{WATCH}"  # HAE's aggregates name every source they merged


def steps(start: str, end: str, value: int, source: str) -> str:
    day = "2024-03-"
    return export_gen.quantity(
        "StepCount", str(value), f"{day}{start}:00 +0000", f"{day}{end}:00 +0000", source=source
    )


#: the export's raw samples, and what each day counts (Watch before iPhone)
EXPORT = [
    # the 28th: the iPhone's 10:00-10:10 is half covered by the Watch's 10:05-10:15
    steps("28 10:00", "28 10:10", 100, PHONE),
    steps("28 10:05", "28 10:15", 80, WATCH),
    steps("28 12:00", "28 12:10", 30, PHONE),  # the Watch was off: the iPhone counts
    # the 29th: the iPhone's walk wholly inside the Watch's
    steps("29 09:00", "29 09:30", 500, WATCH),
    steps("29 09:05", "29 09:25", 450, PHONE),
    # the 30th: the iPhone alone, until the export was taken
    steps("30 10:00", "30 11:00", 300, PHONE),
]
EXPORT_DAYS = {"2024-03-28": 80 + 50 + 30, "2024-03-29": 500, "2024-03-30": 300}
#: HAE's minute aggregates of the 30th (the whole day) and the 31st
HAE = metrics_body(
    (
        "step_count",
        "count",
        [
            {"date": "2024-03-30 10:00:00 +0000", "qty": 300, "source": MERGED},
            {"date": "2024-03-30 18:00:00 +0000", "qty": 20, "source": MERGED},
            {"date": "2024-03-31 08:00:00 +0000", "qty": 200, "source": MERGED},
        ],
    )
)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def journal_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'journal.db'}"
    else:
        with pg.fresh_database() as url:
            yield url


@pytest.fixture
def phone(journal_url: str, tmp_path: Path) -> Iterator[Phone]:
    with ExitStack() as resources:
        journal: Journal
        if journal_url.startswith("sqlite:///"):
            journal = SqliteJournal(journal_url.removeprefix("sqlite:///"))
        else:
            journal = PostgresJournal(journal_url)
        resources.callback(journal.close)
        journal.migrate()
        token = tokens.new_token()
        account = journal.add_account("alice", tokens.hash_token(token))
        yield Phone(journal, LocalArchive(tmp_path / "archive"), account, token)


def import_export(phone: Phone, folder: Path, elements: list[str]) -> None:
    path = export_gen.write_zip(folder / "export.zip", export_gen.export_xml(elements))
    report = importer.import_export(
        path,
        journal=phone.journal,
        archive=phone.archive,
        settings=Settings(),
        account_id=phone.account.id,
    )
    assert report.outcome is not None and report.points == len(elements)


def fold(phone: Phone) -> None:
    report = FoldPass(phone.journal, Player(phone.journal, phone.archive)).pass_once()
    assert report.tally.classes == {"parsed": report.selected}


def daily_steps(reads: Reads) -> dict[str, float | None]:
    return {row["day"]: row["step_count"] for row in reads.daily(["step_count"])}


def test_iphone_and_watch_over_the_same_minutes_count_once(phone: Phone, tmp_path: Path) -> None:
    import_export(phone, tmp_path, EXPORT)
    reads = Reads(phone.journal, phone.account)
    assert daily_steps(reads) == EXPORT_DAYS
    # every resolution counts the same: the hours of the 28th, the week, the month
    hours = reads.series("step_count", resolution=Resolution.HOUR, end="2024-03-29")
    assert [(s.t, s.value) for s in hours.samples] == [
        ("2024-03-28T10:00", 130.0), ("2024-03-28T12:00", 30.0),
    ]  # fmt: skip
    week = reads.series("step_count", resolution=Resolution.WEEK).samples
    assert [(s.t, s.value) for s in week] == [("2024-03-25", sum(EXPORT_DAYS.values()))]
    # one source asked for: its own samples, whole
    phone_only = reads.series("step_count", resolution=Resolution.DAY, source=PHONE).samples
    assert [(s.t, s.value) for s in phone_only] == [
        ("2024-03-28", 130.0), ("2024-03-29", 450.0), ("2024-03-30", 300.0),
    ]  # fmt: skip
    # the priority is a setting: the iPhone first, and the Watch counts what it left
    iphone_first = Reads(phone.journal, phone.account, priority.SourcePriority.parse("iphone"))
    assert daily_steps(iphone_first) == pytest.approx(
        {"2024-03-28": 100 + 40 + 30, "2024-03-29": 450 + 500 / 3, "2024-03-30": 300}
    )


def test_hae_after_the_import_wins_the_days_it_sends(phone: Phone, tmp_path: Path) -> None:
    import_export(phone, tmp_path, EXPORT)
    phone.send(HAE, at=ids.now() + timedelta(hours=1))  # set up after the export was taken
    fold(phone)
    assert daily_steps(Reads(phone.journal, phone.account)) == {
        **EXPORT_DAYS, "2024-03-30": 320, "2024-03-31": 200,
    }  # fmt: skip


def test_an_import_after_hae_wins_the_days_it_holds(phone: Phone, tmp_path: Path) -> None:
    phone.send(HAE, at=datetime(2024, 4, 1, tzinfo=UTC))  # months of HAE, then the import
    fold(phone)
    import_export(phone, tmp_path, EXPORT)
    assert daily_steps(Reads(phone.journal, phone.account)) == {**EXPORT_DAYS, "2024-03-31": 200}


def test_a_range_that_cuts_a_day_decides_the_day_whole(phone: Phone, tmp_path: Path) -> None:
    import_export(phone, tmp_path, EXPORT)
    reads = Reads(phone.journal, phone.account)
    # from 10:01 the Watch's sample is in and the iPhone's (10:00) is not; from 10:00
    # the iPhone's share is still the one the whole day gives
    at = datetime(2024, 3, 28, 10, 0, tzinfo=UTC)
    cut = reads.series("step_count", resolution=Resolution.RAW, start=at)
    assert [(s.t[:16], s.value, s.source) for s in cut.samples][:2] == [
        ("2024-03-28T10:00", 50.0, PHONE), ("2024-03-28T10:05", 80.0, WATCH),
    ]  # fmt: skip
    later = reads.series("step_count", resolution=Resolution.RAW, start=at + timedelta(minutes=1))
    assert (later.samples[0].t[:16], later.samples[0].value) == ("2024-03-28T10:05", 80.0)


def export_rows(
    journal_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *argv: str
) -> list[dict[str, Any]]:
    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", journal_url)
    monkeypatch.setenv("HEALTHLOG_ARCHIVE_URL", f"file://{tmp_path / 'archive'}")
    out = tmp_path / "points.csv"
    assert cli.main(["export", "--metric", "step_count", "-o", str(out), *argv]) == 0
    return list(csv.DictReader(io.StringIO(out.read_text())))


def test_the_export_says_what_counts_and_leaves_out_what_does_not(
    phone: Phone, journal_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import_export(phone, tmp_path, EXPORT)
    phone.send(HAE, at=ids.now() + timedelta(hours=1))
    fold(phone)
    rows = export_rows(journal_url, tmp_path, monkeypatch)
    shown = [(r["start"][:16], r["source"], float(r["qty"]), float(r["counted"])) for r in rows]
    assert shown == [
        ("2024-03-28T10:00", PHONE, 100.0, 50.0),
        ("2024-03-28T10:05", WATCH, 80.0, 80.0),
        ("2024-03-28T12:00", PHONE, 30.0, 30.0),
        ("2024-03-29T09:00", WATCH, 500.0, 500.0),  # the iPhone's, wholly covered: out
        ("2024-03-30T10:00", MERGED, 300.0, 300.0),  # the 30th is HAE's: the import's out
        ("2024-03-30T18:00", MERGED, 20.0, 20.0),
        ("2024-03-31T08:00", MERGED, 200.0, 200.0),
    ]
    # the daily totals of the export's `counted` are the reads' daily totals
    totals: dict[str, float] = {}
    for r in rows:
        totals[r["start"][:10]] = totals.get(r["start"][:10], 0.0) + float(r["counted"])
    assert totals == daily_steps(Reads(phone.journal, phone.account))
    # every stored point, when asked: what counts nothing says 0
    every = export_rows(journal_url, tmp_path, monkeypatch, "--every-point")
    assert len(every) == len(EXPORT) + 3
    left_out = {(r["start"][:16], r["source"]) for r in every if float(r["counted"]) == 0}
    assert left_out == {("2024-03-29T09:05", PHONE), ("2024-03-30T10:00", PHONE)}


def test_without_overlaps_the_rule_gives_the_databases_own_buckets(phone: Phone) -> None:
    """The rule's buckets, counted in Python, against the journal's SQL: the same numbers."""
    points = []
    t = datetime(2026, 3, 20, 21, 0, tzinfo=UTC)
    for i in range(400):  # across midnights, the DST change, weeks and a month's end
        offset = "+0100" if t < datetime(2026, 3, 29, 1, tzinfo=UTC) else "+0200"
        when = (t + timedelta(minutes=int(offset[1:3]) * 60)).strftime("%Y-%m-%d %H:%M:%S")
        points.append({"date": f"{when} {offset}", "qty": (i * 37) % 101 or None})
        t += timedelta(minutes=97)
    phone.send(metrics_body(("step_count", "count", points), ("heart_rate", "count/min", [])))
    fold(phone)
    reads = Reads(phone.journal, phone.account)
    for resolution in ("minute", "hour", "day", "week", "month"):
        ruled = overlap.buckets(reads.counted_points("step_count", "qty"), resolution)
        plain = phone.journal.point_buckets(
            account_id=phone.account.id, metric="step_count", field="qty", bucket=resolution
        )
        assert [r.start for r in ruled] == [r.start for r in plain], resolution
        for a, b in zip(ruled, plain, strict=True):
            assert a.count == b.count, (resolution, a.start)
            for x, y in ((a.sum, b.sum), (a.min, b.min), (a.max, b.max), (a.avg, b.avg)):
                assert x == pytest.approx(y), (resolution, a.start)


def test_daily_summaries_from_the_kept_days_are_the_points_own(phone: Phone) -> None:
    """Days, weeks and months read from point_day_sums, over ranges cut anywhere, against
    the same read summed from the points (the rule's buckets, and the database's)."""
    rng = random.Random(12)
    beats, steps = [], []
    t = datetime(2026, 3, 20, 0, 0, tzinfo=UTC)
    for i in range(600):  # across midnights, the DST change, weeks and a month's end
        offset = "+0100" if t < datetime(2026, 3, 29, 1, tzinfo=UTC) else "+0200"
        local = t + timedelta(hours=int(offset[1:3]))
        when = f"{local:%Y-%m-%d %H:%M:%S} {offset}"
        beats.append({"date": when, "Min": 50 + i % 7, "Avg": 60 + i % 11, "Max": 90 + i % 5})
        steps.append({"date": when, "qty": rng.randrange(0, 50), "source": "Watch"})
        if i % 40 == 0:  # now and then the iPhone too, at the same moment: rule 2
            steps.append({"date": when, "qty": 7, "source": "iPhone"})
        t += timedelta(minutes=67)
    phone.send(metrics_body(("heart_rate", "count/min", beats), ("step_count", "count", steps)))
    fold(phone)
    reads = Reads(phone.journal, phone.account)
    first = datetime(2026, 3, 19, tzinfo=UTC)
    ranges: list[tuple[datetime | None, datetime | None]] = [(None, None)]
    for _ in range(12):
        a, b = sorted(first + timedelta(minutes=rng.randrange(0, 43200)) for _ in range(2))
        ranges.append((a, b))
    ranges.append((first + timedelta(days=3), None))
    for start, end in ranges:
        for resolution in (Resolution.DAY, Resolution.WEEK, Resolution.MONTH):
            for metric, field in (("heart_rate", "avg"), ("step_count", "qty")):
                read = reads.series(
                    metric, field=field, start=start, end=end, resolution=resolution
                )

                from_points = summed(reads, metric, field, start, end, resolution)
                band = [(r.min, r.max) for r in from_points]
                if field == "avg":  # heart rate's: the lowest Min and highest Max sent
                    lows = summed(reads, metric, "min", start, end, resolution)
                    highs = summed(reads, metric, "max", start, end, resolution)
                    band = [
                        (lo.min, hi.max) for lo, hi in zip(lows, highs, strict=True)
                    ]  # every Min is under its Avg, every Max over it, in this body
                got = [(s.t, s.count, s.min, s.max) for s in read.samples]
                assert got == [
                    (r.start, r.count, *b) for r, b in zip(from_points, band, strict=True)
                ], (metric, resolution, start, end)  # fmt: skip
                values = [s.value for s in read.samples]
                expected = [r.sum if metric == "step_count" else r.avg for r in from_points]
                assert values == pytest.approx(expected), (metric, resolution, start, end)
                if metric == "heart_rate":  # no rule can change it: the database's own too
                    plain = phone.journal.point_buckets(
                        account_id=phone.account.id, metric=metric, field=field,
                        bucket=resolution.value, start_from=text(start), start_to=text(end),
                    )  # fmt: skip
                    assert [(r.start, r.count) for r in plain] == [
                        (r.start, r.count) for r in from_points
                    ]
                    assert values == pytest.approx([r.avg for r in plain])


def summed(
    reads: Reads,
    metric: str,
    field: str,
    start: datetime | None,
    end: datetime | None,
    resolution: Resolution,
) -> list[BucketRow]:
    """The buckets of a field summed from the points that count, as the rule sums them."""
    counted = reads.counted_points(metric, field, start=start, end=end)
    return overlap.buckets(counted, resolution.value)


def text(at: datetime | None) -> str | None:
    return None if at is None else to_text(at)


def test_the_sql_tools_my_daily_counts_as_the_tools_do(
    phone: Phone, tmp_path: Path, journal_url: str
) -> None:
    """The MCP SQL tool's ``my_daily`` gives the days the tools give, overlap counted
    once, and follows a later delivery; ``my_points`` alone sums every source."""
    from healthlog.journal import guard as sql_guard

    import_export(phone, tmp_path, EXPORT)
    reads = Reads(phone.journal, phone.account)
    daily = sql_guard.Daily(reads.day_totals, reads.status)
    guard = phone.journal.guarded_session(phone.account.id, daily)
    steps = (
        "SELECT day, value FROM my_daily WHERE metric = 'step_count' AND field = 'qty' ORDER BY day"
    )
    summed = (
        "SELECT substr(local_start, 1, 10) AS day, sum(qty) FROM my_points "
        "WHERE metric = 'step_count' GROUP BY day ORDER BY day"
    )
    try:
        counted = {day: value for day, value in guard.run(steps, limit=50, timeout_s=10).rows}
        assert counted == EXPORT_DAYS == daily_steps(reads)
        every = {day: value for day, value in guard.run(summed, limit=50, timeout_s=10).rows}
        assert every["2024-03-28"] == 100 + 80 + 30 != counted["2024-03-28"]
        phone.send(HAE)
        fold(phone)
        counted = {day: value for day, value in guard.run(steps, limit=50, timeout_s=10).rows}
        assert counted == daily_steps(reads) and counted["2024-03-31"] == 200
    finally:
        guard.close()
