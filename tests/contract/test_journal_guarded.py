"""The MCP SQL tool's guarded session, opened through the port (``ShowcaseReads``).

On every adapter: the journal opens a session of its own over one account's views
(``guarded_*`` statements of the dialect's SQL file), which reads that account's rows
only, as the journal's own reads give them, refuses every write whatever its form and
leaves the journal as it was; the schema's version is read without writing, and a
journal at another version opens no session. The attacks below the parser are in
tests/unit/test_sql_guard_sqlite_privilege.py and tests/integration/test_sql_privilege.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from healthlog.errors import HealthlogError
from healthlog.journal import guard as sql_guard
from healthlog.journal import migrate
from healthlog.journal.port import Journal

from tests.contract.conftest import ADAPTERS, Seed, open_journal, point

WRITES = [
    "DELETE FROM my_points",
    "UPDATE my_deliveries SET status = 'failed'",
    "INSERT INTO my_daily VALUES ('x', 'x', 'x', 'x', 'x', 1, 1)",
    "WITH gone AS (DELETE FROM my_records RETURNING 1) SELECT * FROM gone",
    "SELECT * INTO stolen FROM my_points",
    "CREATE TABLE t (x INTEGER)",
    "DROP VIEW my_points",
    "SELECT 1; DELETE FROM my_points",
]


@pytest.fixture
def two(seed: Seed) -> Seed:
    """alice and bob, each with a delivery folded: two points of alice's, one of bob's."""
    alice, bob = seed.account("alice"), seed.account("bob")
    seed.fold(
        seed.delivery(alice),
        [point("2026-02-28T10:00:00.000000Z", 3.0), point("2026-02-28T11:00:00.000000Z", 4.0)],
    )
    seed.fold(seed.delivery(bob), [point("2026-02-28T10:00:00.000000Z", 99.0, source="Bob")])
    return seed


@pytest.fixture
def session(two: Seed) -> Iterator[sql_guard.Guard]:
    opened = two.journal.guarded_session(two.accounts["alice"].id)
    yield opened
    opened.close()


def test_the_session_reads_the_accounts_rows_as_the_journals_own_reads_give_them(
    two: Seed, session: sql_guard.Guard
) -> None:
    alice = two.accounts["alice"]
    found = session.run(
        "SELECT source, qty, local_start FROM my_points ORDER BY start", limit=10, timeout_s=5
    )
    exported = list(two.journal.export_points(account_id=alice.id))

    assert found.columns == ["source", "qty", "local_start"]
    assert [row[:2] for row in found.rows] == [[p.point.source, p.point.qty] for p in exported]
    # the phone's clock: 10:00 UTC at +60 minutes
    assert [row[2] for row in found.rows] == ["2026-02-28T11:00:00", "2026-02-28T12:00:00"]
    (deliveries,) = session.run("SELECT count(*) FROM my_deliveries", limit=5, timeout_s=5).rows
    assert deliveries == [1]
    assert session.dialect == two.journal.backend


@pytest.mark.parametrize("write", WRITES)
def test_every_write_is_refused_and_the_journal_stays_as_it_was(
    two: Seed, session: sql_guard.Guard, write: str
) -> None:
    before = (two.journal.fingerprint(), two.journal.summary())

    with pytest.raises(sql_guard.Refused):
        session.run(write, limit=5, timeout_s=5)

    assert (two.journal.fingerprint(), two.journal.summary()) == before
    (points,) = session.run("SELECT count(*) FROM my_points", limit=5, timeout_s=5).rows
    assert points == [2]  # the session is still there, and still reads


def test_the_schema_version_is_read_without_writing(journal: Journal) -> None:
    head = migrate.head(migrate.load(journal.backend))
    before = journal.fingerprint()

    assert journal.schema_version() == head
    assert journal.fingerprint() == before


@pytest.fixture(params=ADAPTERS)
def unmigrated(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Journal]:
    """A journal of the adapter, opened and not migrated."""
    with ExitStack() as resources:
        journal = open_journal(request.param, tmp_path, resources)
        yield journal
        journal.close()


def test_a_journal_not_migrated_is_version_0_and_a_sqlite_file_is_not_made(
    unmigrated: Journal, tmp_path: Path
) -> None:
    assert unmigrated.schema_version() == 0
    assert not (tmp_path / "journal.db").exists()


def test_a_journal_at_another_version_opens_no_session_and_says_what_to_do(
    unmigrated: Journal,
) -> None:
    unmigrated.migrate(target=17)
    account = unmigrated.add_account("alice", "hash-of-alice")

    with pytest.raises(HealthlogError, match="at version 17") as refused:
        unmigrated.guarded_session(account.id)
    assert "migrates" in str(refused.value)
