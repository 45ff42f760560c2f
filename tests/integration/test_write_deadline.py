"""The fold's deadline bounds its write too (issue 9, item 2), on both backends.

A write that runs past its bound is interrupted while its statements run and rolled back
whole: nothing of it is in the showcase, and the write lock is free the moment the call
returns. The write is made slow by size (many points), never by a sleep; the parse is
the body's real parse, done once before the fold (``Player``'s ``parse`` seam), so that
the time bounded is the write's alone. What is asserted is measured, not a wall-clock
target: the interrupted write ended before the same write, unbounded, does.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from healthlog import tokens
from healthlog.archive.local import LocalArchive
from healthlog.errors import WriteInterrupted
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player, PlayOptions
from healthlog.hae import parse
from healthlog.journal.driver import write_bound
from healthlog.journal.port import Journal
from healthlog.journal.postgres import PostgresJournal
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import OutcomeClass, ParseResult, ParseStatus

from tests import pg
from tests.conftest import Phone, metrics_body

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]

# enough points that their write takes far longer than the bounds below
MANY = 200_000
BOUND_S = 0.05


def body_of(n: int) -> bytes:
    t0 = datetime(2026, 2, 1)
    points = [
        {"date": (t0 + timedelta(minutes=i)).strftime("%Y-%m-%d %H:%M:%S +0100"), "qty": i}
        for i in range(n)
    ]
    return orjson.dumps(metrics_body(("step_count", "count", points)))


@pytest.fixture(scope="module")
def big() -> tuple[bytes, ParseResult]:
    body = body_of(MANY)
    return body, parse(body, content_type="application/json", tz="UTC")


class Parsed:
    """The real parser, each body parsed once: a second fold of it costs no parse time."""

    def __init__(self, *known: tuple[bytes, ParseResult]) -> None:
        self._known = dict(known)

    def __call__(self, body: bytes, **kw: Any) -> ParseResult:
        if body not in self._known:
            self._known[body] = parse(body, **kw)
        return self._known[body]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Journal, str]]:
    """(backend, a migrated journal, where another connection reaches it)."""
    with ExitStack() as resources:
        journal: Journal
        if request.param == "sqlite":
            where = str(tmp_path / "journal.db")
            journal = SqliteJournal(where)
        else:
            where = resources.enter_context(pg.fresh_database())
            journal = PostgresJournal(where)
        journal.migrate()
        try:
            yield request.param, journal, where
        finally:
            journal.close()


def make_phone(journal: Journal, tmp_path: Path) -> Phone:
    archive = LocalArchive(tmp_path / "archive")
    token = tokens.new_token()
    return Phone(journal, archive, journal.add_account("alice", tokens.hash_token(token)), token)


def assert_lock_free(name: str, where: str, delivery_id: str) -> None:
    """Another connection takes the write lock (SQLite) or the row's lock at once."""
    if name == "sqlite":
        other = sqlite3.connect(where, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # raises "database is locked" if still held
            other.execute("ROLLBACK")
        finally:
            other.close()
        return
    with psycopg.connect(where, autocommit=True) as pg_other, pg_other.transaction():
        # raises LockNotAvailable if a transaction still holds the delivery's row
        found = pg_other.execute(
            "SELECT id FROM deliveries WHERE id = %s FOR UPDATE NOWAIT", (delivery_id,)
        ).fetchall()
        assert len(found) == 1


def nothing_written(journal: Journal, delivery_id: str) -> None:
    assert list(journal.export_points()) == []
    stored = journal.get_delivery(delivery_id)
    assert stored is not None
    assert stored.points == 0


def test_a_write_past_its_bound_is_rolled_back_whole_and_frees_the_lock(
    backend: tuple[str, Journal, str], tmp_path: Path, big: tuple[bytes, ParseResult]
) -> None:
    name, journal, where = backend
    body, result = big
    delivery_id = make_phone(journal, tmp_path).send(body)

    def write() -> None:
        journal.write_outcome(
            delivery_id,
            expected=ParseStatus.PENDING,
            status=ParseStatus.PARSED,
            uncovered=(),
            failure=None,
            points=result.points,
        )

    started = time.monotonic()
    with pytest.raises(WriteInterrupted), write_bound(time.monotonic() + BOUND_S):
        write()
    interrupted_s = time.monotonic() - started
    assert_lock_free(name, where, delivery_id)
    nothing_written(journal, delivery_id)
    stored = journal.get_delivery(delivery_id)
    assert stored is not None and stored.status is ParseStatus.PENDING

    started = time.monotonic()
    write()  # unbounded, the same write goes through whole
    whole_s = time.monotonic() - started
    assert sum(1 for _ in journal.export_points()) == MANY
    # it was interrupted while it ran, and ended well before the whole write did
    assert BOUND_S <= interrupted_s < whole_s


def test_a_delivery_whose_write_alone_outlasts_its_own_deadline_fails_deadline(
    backend: tuple[str, Journal, str], tmp_path: Path, big: tuple[bytes, ParseResult]
) -> None:
    name, journal, where = backend
    phone = make_phone(journal, tmp_path)
    delivery_id = phone.send(big[0])
    player = Player(journal, phone.archive, PlayOptions(deadline_s=BOUND_S), parse=Parsed(big))
    outcome = player.play(delivery_id)
    assert (outcome.klass, outcome.reason) == (OutcomeClass.FAILED, "deadline")
    assert_lock_free(name, where, delivery_id)
    stored = journal.get_delivery(delivery_id)
    assert stored is not None
    assert (stored.status, stored.failure, stored.points) == (ParseStatus.FAILED, "deadline", 0)
    assert list(journal.export_points()) == []


def test_a_write_the_pass_ran_out_of_time_for_stays_pending_and_folds_first_next_pass(
    backend: tuple[str, Journal, str], tmp_path: Path, big: tuple[bytes, ParseResult]
) -> None:
    """Others used the pass's time: a circumstance; the next pass, it goes first, on from
    the steps that committed."""
    name, journal, where = backend
    phone = make_phone(journal, tmp_path)
    small = phone.send(body_of(3))
    large = phone.send(big[0])
    player = Player(journal, phone.archive, parse=Parsed(big))  # its own budget: 120 s
    fold = FoldPass(journal, player)
    end = time.monotonic() + 0.3
    report = fold.pass_once(time_left=lambda: end - time.monotonic())
    assert report.stopped is None, "the small delivery alone outlasted the pass's time"
    assert report.tally.as_dict()["parsed"] == 1
    assert report.tally.as_dict()["deferred"] == 1
    assert "WriteInterrupted" in str(report.tally.as_dict()["reasons"])
    assert_lock_free(name, where, large)
    stored = journal.get_delivery(large)
    assert stored is not None
    # a body this large folds in steps (of PlayOptions.step_points): the steps that
    # committed stay, the interrupted one is rolled back whole, the delivery pending
    step = PlayOptions().step_points
    assert (stored.status, stored.attempts) == (ParseStatus.PENDING, 0)
    assert stored.points % step == 0 and stored.points < MANY
    assert stored.fold_position == stored.points
    assert sum(1 for p in journal.export_points() if p.delivery_id == large) == stored.points
    assert journal.get_delivery(small) is not None

    # the next pass: the large delivery is its first, bounded by its own deadline only
    # (a pass's time far below what the first pass showed the write to need)
    end = time.monotonic() + BOUND_S
    again = fold.pass_once(time_left=lambda: end - time.monotonic())
    assert again.tally.as_dict()["parsed"] == 1
    stored = journal.get_delivery(large)
    assert stored is not None
    assert (stored.status, stored.points) == (ParseStatus.PARSED, MANY)
    # the pass's time was shorter than the write: the first delivery overran it
    assert again.duration_s > BOUND_S
