"""The SQL tool on SQLite holds by its authorizer, not only by parsing (issue 24, item 1).

The rule of tests/integration/test_sql_privilege.py (PostgreSQL's reader role), proved
for SQLite: a real journal file with alice's and bob's data, every attack tried twice,
through the tool (``SqliteGuard.run``, the journal's guarded session: the parser
refuses it first) and as raw SQL on the tool's own connection with the parser skipped,
where the connection's authorizer (``SqliteGuard._authorize``: read only the account's
views and the tables they read, no write, no PRAGMA, no ATTACH, no extension) and its
limits must refuse it all the same.
Another account's rows never show through any view.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from healthlog import tokens
from healthlog.archive.local import LocalArchive
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.journal import guard as sql_guard
from healthlog.journal.sqlite import SqliteGuard, SqliteJournal

from tests.conftest import Phone, metrics_body

SECRET_SOURCE = "Bob’s Secret Phone"


@dataclass
class Two:
    path: Path
    alice_id: str
    bob_id: str


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Two:
    where = tmp_path_factory.mktemp("sqlite-privilege")
    journal = SqliteJournal(str(where / "journal.db"))
    journal.migrate()
    archive = LocalArchive(where / "archive")
    ids: list[str] = []
    for name, source, qty in (("alice", "Alice’s Watch", 10), ("bob", SECRET_SOURCE, 99)):
        token = tokens.new_token()
        account = journal.add_account(name, tokens.hash_token(token))
        phone = Phone(journal, archive, account, token)
        points = [{"date": "2026-03-01 08:00:00 +0100", "qty": qty, "source": source}]
        workout = {"id": f"w-{name}", "name": "Walk", "start": "2026-03-01 09:00:00 +0100",
                   "end": "2026-03-01 09:30:00 +0100"}  # fmt: skip
        body = metrics_body(("step_count", "count", points))
        body["data"]["workouts"] = [workout]  # type: ignore[index]
        phone.clock += timedelta(seconds=len(ids))
        phone.send(body)
        ids.append(account.id)
    FoldPass(journal, Player(journal, archive)).pass_once()
    journal.close()
    return Two(where / "journal.db", ids[0], ids[1])


def open_guard(two: Two) -> SqliteGuard:
    """The SQL tool's session over alice's views, as the journal opens it."""
    journal = SqliteJournal(str(two.path))
    try:
        opened = journal.guarded_session(two.alice_id)
    finally:
        journal.close()  # the session is a connection of its own
    assert isinstance(opened, SqliteGuard)
    return opened


@pytest.fixture
def guard(two: Two) -> Iterator[SqliteGuard]:
    opened = open_guard(two)
    yield opened
    opened.close()


def raw(guard: SqliteGuard, sql: str) -> list[tuple[object, ...]]:
    """``sql`` on the tool's own connection, the parser skipped: the authorizer decides."""
    rows: list[tuple[object, ...]] = guard._conn.execute(sql).fetchall()
    return rows


#: each reads outside the account's views, writes, or reaches past the connection
ATTACKS = [
    "SELECT * FROM accounts",
    "SELECT * FROM main.accounts",
    "SELECT token_hash FROM accounts",
    "SELECT * FROM points",
    "SELECT * FROM main.point_rows",
    "SELECT * FROM deliveries",
    "SELECT * FROM records",
    "SELECT * FROM series",
    "SELECT * FROM sqlite_master",
    "SELECT * FROM sqlite_temp_master",
    "SELECT sql FROM sqlite_schema",
    "SELECT * FROM my_points, accounts",
    "SELECT (SELECT token_hash FROM accounts LIMIT 1) FROM my_points",
    "SELECT * FROM my_points WHERE source IN (SELECT source FROM point_rows)",
    # no column read: SQLite names no database for these (every account's row count)
    "SELECT count(*) FROM point_rows",
    "SELECT count(*) FROM accounts",
    "SELECT count(*) FROM my_points, deliveries",
    "WITH a AS (SELECT * FROM accounts) SELECT * FROM a",
    "SELECT load_extension('/tmp/evil')",
    "ATTACH DATABASE '/tmp/other.db' AS other",
    "PRAGMA writable_schema = 1",
    "PRAGMA table_info(accounts)",
    "SELECT * FROM pragma_table_info('accounts')",
    "INSERT INTO my_daily VALUES ('x', 'x', 'x', 'x', 'x', 1, 1)",
    "DELETE FROM my_daily",
    "UPDATE my_daily SET value = 0",
    "CREATE TEMP TABLE t (x)",
    "DROP VIEW my_points",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_tool_refuses_each_attack(guard: SqliteGuard, attack: str) -> None:
    with pytest.raises(sql_guard.Refused) as refused:
        guard.run(attack, limit=10, timeout_s=2)
    assert SECRET_SOURCE not in str(refused.value) and "alice" not in str(refused.value)


#: with the parser skipped, what the authorizer (or a limit) must refuse by itself
BY_AUTHORIZER = [a for a in ATTACKS if not a.startswith("SELECT load_extension")]


@pytest.mark.parametrize("attack", BY_AUTHORIZER)
def test_the_authorizer_alone_refuses_what_the_parser_would(
    guard: SqliteGuard, attack: str
) -> None:
    with pytest.raises(sqlite3.DatabaseError):
        raw(guard, attack)


def test_an_extension_cannot_be_loaded_even_with_the_parser_skipped(
    guard: SqliteGuard,
) -> None:
    # the authorizer denies the function by name; the connection never enabled loading
    with pytest.raises(sqlite3.DatabaseError):
        raw(guard, "SELECT load_extension('/tmp/evil')")


def test_another_accounts_rows_never_show_through_any_view(guard: SqliteGuard, two: Two) -> None:
    for view in sql_guard.VIEWS:
        rows = raw(guard, f"SELECT * FROM {view}")
        assert SECRET_SOURCE not in repr(rows), view
        assert two.bob_id not in repr(rows), view
    (mine,) = guard.run("SELECT sum(qty) FROM my_points", limit=5, timeout_s=5).rows
    assert mine == [10]


def test_the_connection_is_read_only_whatever_the_authorizer_says(two: Two) -> None:
    """Below the authorizer, the file is opened read-only (``mode=ro``) and no other
    database can be attached (``SQLITE_LIMIT_ATTACHED`` 0)."""
    guard = open_guard(two)
    try:
        guard._conn.set_authorizer(None)  # the authorizer set aside, as for my_daily
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            guard._conn.execute("DELETE FROM main.accounts")
        with pytest.raises(sqlite3.OperationalError, match="too many attached"):
            guard._conn.execute(f"ATTACH DATABASE '{two.path}' AS again")
    finally:
        guard.close()


#: a query's CTE that takes the name of one of the views, to read a journal table as if
#: the view did: the authorizer names the inner-most view (or CTE) that reads a table
NAMED_AS_A_VIEW = [
    "WITH my_points AS (SELECT token_hash FROM accounts) SELECT * FROM my_points",
    "WITH my_records AS (SELECT * FROM main.accounts) SELECT * FROM my_records",
    "WITH my_deliveries AS (SELECT headers FROM deliveries) SELECT * FROM my_deliveries",
    "WITH my_point_days AS (SELECT * FROM point_days) SELECT * FROM my_point_days",
    "WITH my_points AS (SELECT source FROM series) SELECT * FROM my_points",
]


@pytest.mark.parametrize("attack", NAMED_AS_A_VIEW)
def test_a_cte_named_as_a_view_reads_nothing_of_the_journal_even_below_the_parser(
    guard: SqliteGuard, attack: str
) -> None:
    with pytest.raises(sql_guard.Refused):
        guard.run(attack, limit=10, timeout_s=2)
    with pytest.raises(sqlite3.DatabaseError, match=r"prohibited|not authorized"):
        raw(guard, attack)
