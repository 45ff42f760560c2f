"""The Journal contract's fixtures: one journal per adapter, migrated, and a seeder.

``ADAPTERS`` lists the adapters every contract test runs against. A new adapter adds
its name there and a branch in ``open_journal``. PostgreSQL: each journal gets a fresh
database on the machine's server (``tests.pg``); without a server its tests skip with
the reason, or fail when ``HEALTHLOG_REQUIRE_POSTGRES=1``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from healthlog import ids
from healthlog.journal.port import Journal
from healthlog.journal.postgres import PostgresJournal
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import Account, NewDelivery, ParseStatus, Point

from tests import pg

ADAPTERS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=ids.EPOCH.tzinfo)


def open_journal(adapter: str, folder: Path, resources: ExitStack) -> Journal:
    """A fresh journal; what it needs beyond ``folder`` is released by ``resources``."""
    if adapter == "sqlite":
        return SqliteJournal(str(folder / "journal.db"))
    if adapter == "postgres":
        return PostgresJournal(resources.enter_context(pg.fresh_database()))
    raise AssertionError(f"no such adapter: {adapter}")


@pytest.fixture(params=ADAPTERS)
def journal_factory(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], Journal]]:
    """Opens fresh, migrated journals of the parametrized adapter, closed at teardown."""
    opened: list[Journal] = []
    with ExitStack() as resources:

        def make() -> Journal:
            journal = open_journal(request.param, tmp_path / f"j{len(opened)}", resources)
            opened.append(journal)
            journal.migrate()
            return journal

        yield make
        for journal in opened:
            journal.close()


@pytest.fixture
def journal(journal_factory: Callable[[], Journal]) -> Journal:
    return journal_factory()


@dataclass
class Seed:
    """Puts accounts and deliveries in a journal the way ingest does."""

    journal: Journal
    clock: datetime = T0
    accounts: dict[str, Account] = field(default_factory=dict)

    def account(self, name: str = "alice") -> Account:
        if name not in self.accounts:
            self.accounts[name] = self.journal.add_account(name, f"hash-of-{name}")
        return self.accounts[name]

    def delivery(
        self,
        account: Account | None = None,
        *,
        at: datetime | None = None,
        delivery_id: str | None = None,
        headers: tuple[tuple[str, str], ...] = (),
        content_type: str = "application/json",
    ) -> NewDelivery:
        """A pending delivery, by default one second after the previous one."""
        if at is None:
            self.clock += timedelta(seconds=1)
            at = self.clock
        account = account or self.account()
        delivery_id = delivery_id or ids.new_delivery_id(at)
        new = NewDelivery(
            id=delivery_id,
            account_id=account.id,
            received_at=at,
            archive_key=f"{account.id}/{at:%Y-%m-%d}/{delivery_id}.json",
            size=123,
            content_type=content_type,
            headers=headers,
        )
        assert self.journal.insert_delivery(new)
        return new

    def fold(
        self,
        delivery: NewDelivery,
        points: list[Point] | tuple[Point, ...] = (),
        *,
        uncovered: tuple[str, ...] = (),
        expected: ParseStatus = ParseStatus.PENDING,
    ) -> None:
        """Write an outcome the way the fold does: parsed, or partial with uncovered keys."""
        self.journal.write_outcome(
            delivery.id,
            expected=expected,
            status=ParseStatus.PARTIAL if uncovered else ParseStatus.PARSED,
            uncovered=uncovered,
            failure=None,
            points=points,
        )


@pytest.fixture
def seed(journal: Journal) -> Seed:
    return Seed(journal)


def point(
    start: str = "2026-02-28T10:00:00.000000Z",
    qty: float | None = 1.0,
    *,
    metric: str = "step_count",
    field: str = "qty",
    source: str = "Watch",
    **rest: object,
) -> Point:
    """A point with plain defaults; ``rest`` sets utc_offset, end, text, unit or extra."""
    values: dict[str, object] = {
        "utc_offset": 60,
        "end": None,
        "text": None,
        "unit": "count",
        "extra": None,
    }
    values.update(rest)
    return Point(metric, field, source, start, qty=qty, **values)  # type: ignore[arg-type]
