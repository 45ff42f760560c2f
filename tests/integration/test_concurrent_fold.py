"""Concurrency: overlapping passes and a replay fold each delivery exactly once.

Several fold services (each with a journal of its own, as separate processes would
have) run passes over one journal while two ingest threads are still inserting, and a
replay of the pending rows runs beside them. The fold lock lets one of them fold at a
time; the status guard on the outcome write is the second line: two writers of one
outcome never both succeed. Afterwards the showcase must equal a serial fold of the
same deliveries in a second, fresh journal: the fold order does not matter
(docs/architecture.md, "Layers").

Both backends: SQLite (several connections to one file) and PostgreSQL.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import psycopg
import pytest
from healthlog import ids
from healthlog.archive.keys import body_key
from healthlog.archive.local import LocalArchive
from healthlog.config import Settings
from healthlog.errors import Conflict
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.fold.replay import replay
from healthlog.fold.service import FoldService, make_player
from healthlog.journal.port import Journal
from healthlog.journal.postgres import PostgresJournal
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import NewDelivery, ParseStatus, Point

from tests import pg
from tests.conftest import metrics_body

DELIVERIES = 300
FOLDERS = 5
ACCOUNT = "acct-1"
T0 = datetime(2026, 4, 30, tzinfo=UTC)
SETTINGS = Settings(page_size=7, fold_deadline_s=60.0)


@dataclass(frozen=True)
class Place:
    """One journal's database, to be opened as many times as processes would open it."""

    backend: str
    where: str  # a file path or a URL

    def open(self) -> Journal:
        if self.backend == "sqlite":
            return SqliteJournal(self.where)
        return PostgresJournal(self.where)

    def create(self) -> None:
        """Migrate, and add the account with a fixed id (equal in both places)."""
        journal = self.open()
        journal.migrate()
        journal.close()
        insert = "INSERT INTO accounts (id, name, token_hash, created_at) VALUES "
        if self.backend == "sqlite":
            with closing(sqlite3.connect(self.where)) as lite, lite:
                lite.execute(insert + "(?, 'alice', 'h', ?)", (ACCOUNT, T0.isoformat()))
        else:
            with psycopg.connect(self.where, autocommit=True) as server:
                server.execute(insert + "(%s, 'alice', 'h', %s)", (ACCOUNT, T0))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def places(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Place, Place]]:
    """Two fresh, migrated journals of one backend: the concurrent one and the serial one."""
    if request.param == "sqlite":
        pair = (Place("sqlite", str(tmp_path / "a.db")), Place("sqlite", str(tmp_path / "b.db")))
        for place in pair:
            place.create()
        yield pair
        return
    with pg.fresh_database() as a, pg.fresh_database() as b:
        pair = (Place("postgres", a), Place("postgres", b))
        for place in pair:
            place.create()
        yield pair


def stamp(hour: int) -> str:
    at = datetime(2026, 4, 28, tzinfo=UTC) + timedelta(hours=hour)
    return at.strftime("%Y-%m-%d %H:%M:%S +0000")


def body(n: int) -> bytes:
    """Delivery n re-sends a six-hour window that overlaps its neighbours' windows."""
    hours = [(n + k) % 48 for k in range(6)]
    steps: list[dict[str, object]] = [
        {"date": stamp(h), "qty": n * 10 + k, "source": "Watch"} for k, h in enumerate(hours)
    ]
    heart: list[dict[str, object]] = [
        {"date": stamp(h), "Min": 50 + n % 7, "Avg": 60 + n % 11, "Max": 90 + n % 13,
         "source": "Watch" if n % 2 else "Oura"}
        for h in hours[:3]
    ]  # fmt: skip
    return orjson.dumps(
        metrics_body(("step_count", "count", steps), ("heart_rate", "count/min", heart))
    )


def archive_deliveries(archive: LocalArchive) -> list[NewDelivery]:
    """DELIVERIES bodies in the archive; pairs of them share a received_at."""
    out = []
    for n in range(DELIVERIES):
        at = T0 + timedelta(milliseconds=7 * (n // 2))
        delivery_id = ids.new_delivery_id(at)
        key = body_key(ACCOUNT, delivery_id, "application/json")
        raw = body(n)
        archive.put(key, raw)
        out.append(NewDelivery(delivery_id, ACCOUNT, at, key, len(raw), "application/json"))
    return out


def run_threads(targets: list[Callable[[], None]]) -> list[BaseException]:
    failures: list[BaseException] = []

    def guarded(target: Callable[[], None]) -> None:
        try:
            target()
        except BaseException as exc:  # pragma: no cover - reported by the caller
            failures.append(exc)

    threads = [
        threading.Thread(target=guarded, args=(t,), name=f"t{i}") for i, t in enumerate(targets)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    return failures


def folded(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    return [r for r in records if r.getMessage() == "delivery.folded"]


def test_overlapping_passes_and_a_replay_fold_each_delivery_exactly_once(
    places: tuple[Place, Place], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    here, elsewhere = places
    archive = LocalArchive(tmp_path / "archive")
    deliveries = archive_deliveries(archive)
    # a journal per thread, as separate processes would have
    journals = [here.open() for _ in range(FOLDERS + 3)]
    ingested = threading.Event()
    # the two ingest threads start together and, once both are done, say so
    starting, finishing = threading.Barrier(2), threading.Barrier(2, action=ingested.set)
    refused = Counter[str]()  # runs that found the fold lock taken, per thread

    def ingester(journal: Journal, share: list[NewDelivery]) -> Callable[[], None]:
        def work() -> None:
            starting.wait(10)
            for new in share:
                assert journal.insert_delivery(new)
            finishing.wait(60)

        return work

    handover = threading.Event()  # never set: a pause that does not depend on the work

    def drained(journal: Journal) -> bool:
        return ingested.is_set() and journal.count_pending() == 0

    def folder(journal: Journal, wait_s: float) -> Callable[[], None]:
        def work() -> None:
            service = FoldService(journal, archive, SETTINGS)
            while not drained(journal):
                # a short budget, as a Lambda near its end has: passes hand over often
                if service.run(wait_s=wait_s, budget_s=0.05) is None:
                    refused[threading.current_thread().name] += 1
                # hand the lock over before taking it again, as a separate process
                # would: ``ingested`` is set once the inserts end, so waiting on it no
                # longer pauses, and SQLite's flock is polled, so the releasing thread
                # could otherwise win every time and fold alone
                handover.wait(0.01)

        return work

    def replayer(journal: Journal) -> Callable[[], None]:
        def work() -> None:
            player = make_player(journal, archive, SETTINGS)
            while not drained(journal):
                with journal.fold_lock(wait_s=0.05) as held:
                    if held:  # as `healthlog replay --status pending` does
                        replay(journal, player, status=ParseStatus.PENDING)
                ingested.wait(0.005)

        return work

    with caplog.at_level(logging.INFO, logger="healthlog.fold"):
        failures = run_threads(
            [
                ingester(journals[0], deliveries[0::2]),
                ingester(journals[1], deliveries[1::2][::-1]),  # this one out of order
                replayer(journals[2]),
                # wait_s 0: a tick that finds a pass running leaves; > 0: a caller that
                # waits for its turn (healthlog fold, a wake-up with ?wait=1)
                *(folder(journals[3 + i], 0.0 if i % 2 else 0.5) for i in range(FOLDERS)),
            ]
        )
    assert failures == []

    # every delivery has exactly one outcome written: one fold that was not deferred. A
    # fold whose write the pass's short time ran out for wrote nothing and went on in a
    # later pass: interrupted (WriteInterrupted), or still waiting for the lock another
    # writer held when that time ran out (JournalBusy: the wait is bounded by it too);
    # nothing else deferred one
    lines = folded(caplog.records)
    outcomes: dict[str, list[str]] = defaultdict(list)
    for line in lines:
        if line.outcome == "deferred":  # type: ignore[attr-defined]
            assert line.reason in ("WriteInterrupted", "JournalBusy")  # type: ignore[attr-defined]
            continue
        outcomes[line.delivery_id].append(line.outcome)  # type: ignore[attr-defined]
    assert set(outcomes) == {d.id for d in deliveries}
    assert all(o == ["parsed"] for o in outcomes.values()), {
        k: v for k, v in outcomes.items() if v != ["parsed"]
    }
    # and it really was a crowd: passes overlapped and found the lock taken. (Which
    # threads got to fold is up to the scheduler: on a loaded machine the replay may
    # take the lock first and fold the whole queue, so that is not asserted.)
    assert sum(refused.values()) > 0

    check = journals[0]
    stored = check.deliveries()
    assert {d.status for d in stored} == {ParseStatus.PARSED}
    assert {d.attempts for d in stored} == {0}

    # the same deliveries folded serially, in journal order, in a fresh journal
    serial = elsewhere.open()
    for new in sorted(deliveries, key=lambda d: (d.received_at, d.id)):
        serial.insert_delivery(new)
    FoldPass(serial, Player(serial, archive), page_size=50).pass_once()
    assert serial.count_pending() == 0
    assert check.summary().points == serial.summary().points > 0
    assert check.fingerprint() == serial.fingerprint()

    serial.close()
    for journal in journals:
        journal.close()


def test_two_writers_of_one_outcome_never_both_succeed(places: tuple[Place, Place]) -> None:
    """Raced with a barrier per delivery: one write lands whole, the other is a Conflict."""
    here, _ = places
    journals = [here.open(), here.open()]
    deliveries = [
        NewDelivery(ids.new_delivery_id(T0), ACCOUNT, T0 + timedelta(seconds=n), "k", 1, "x")
        for n in range(100)
    ]
    for new in deliveries:
        journals[0].insert_delivery(new)
    start = threading.Barrier(2)
    won: dict[str, list[int]] = defaultdict(list)
    conflicts = Counter[int]()

    def writer(number: int) -> Callable[[], None]:
        journal = journals[number]
        point = Point("step_count", "qty", "W", "2026-01-01T00:00:00.000000Z", 0, None,
                      float(number), None, "count")  # fmt: skip

        def work() -> None:
            for new in deliveries:
                start.wait(10)
                try:
                    journal.write_outcome(
                        new.id,
                        expected=ParseStatus.PENDING,
                        status=ParseStatus.FAILED,
                        uncovered=(),
                        failure=f"writer {number}",
                        points=[point],
                    )
                    won[new.id].append(number)
                except Conflict:
                    conflicts[number] += 1

        return work

    assert run_threads([writer(0), writer(1)]) == []

    assert all(len(won[d.id]) == 1 for d in deliveries)
    assert sum(conflicts.values()) == len(deliveries)
    for new in deliveries:
        stored = journals[0].get_delivery(new.id)
        assert stored is not None and stored.failure == f"writer {won[new.id][0]}"
    for journal in journals:
        journal.close()
