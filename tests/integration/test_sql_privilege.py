"""The SQL tool on PostgreSQL holds by privilege, not only by parsing (issue 24, item 1).

A real server: alice and bob each with points, records and deliveries. Every attack is
tried twice: through the tool (``PostgresGuard.run``: the parser refuses it first), and
as raw SQL on the tool's own session with the parser skipped, where the reader role's
missing grants must refuse it all the same. Another account's rows never show through
any view.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from healthlog import tokens
from healthlog.archive.local import LocalArchive
from healthlog.errors import HealthlogError
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.journal import guard as sql_guard
from healthlog.journal.postgres import PostgresGuard, PostgresJournal

from tests import pg
from tests.conftest import Phone, metrics_body

pytestmark = pytest.mark.postgres

SECRET_SOURCE = "Bob’s Secret Phone"


@dataclass
class Two:
    url: str
    alice_id: str
    bob_id: str


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Two]:
    where = tmp_path_factory.mktemp("sql-privilege")
    with pg.fresh_database() as url:
        journal = PostgresJournal(url)
        journal.migrate()
        archive = LocalArchive(Path(where) / "archive")
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
        yield Two(url, ids[0], ids[1])


def open_guard(url: str, account_id: str) -> PostgresGuard:
    """The SQL tool's session over the account's views, as the journal opens it."""
    journal = PostgresJournal(url)
    try:
        opened = journal.guarded_session(account_id)
    finally:
        journal.close()  # the session is a connection of its own
    assert isinstance(opened, PostgresGuard)
    return opened


@pytest.fixture
def guard(two: Two) -> Iterator[PostgresGuard]:
    opened = open_guard(two.url, two.alice_id)
    yield opened
    opened.close()


def raw(guard: PostgresGuard, sql: str) -> object:
    """``sql`` on the tool's own session, the parser skipped: the role alone decides."""
    conn = guard._conn  # the adapter's real session, as the tool runs its queries
    try:
        with conn.transaction():
            return conn.execute(sql.encode()).fetchall()
    finally:
        guard._tidy()


#: each runs a query given as text, or acts outside the account's views
ATTACKS = [
    "SELECT x.ts_stat FROM unnest(ARRAY['SELECT to_tsvector(name) FROM public.accounts']) AS x",
    "SELECT unnest.ts_stat FROM unnest(ARRAY['SELECT to_tsvector(token_hash) FROM accounts'])",
    "SELECT ('SELECT to_tsvector(name) FROM public.accounts'::text).ts_stat",
    "SELECT ts_stat('SELECT to_tsvector(source) FROM public.points')",
    "SELECT query_to_xml('SELECT * FROM public.accounts', true, false, '')",
    "SELECT x.lo_create FROM unnest(ARRAY[0::oid]) AS x",
    "SELECT x.pg_advisory_lock FROM unnest(ARRAY[1::bigint]) AS x",
    "SELECT set_config('role', 'postgres', false)",
    "SELECT pg_sleep(5)",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT * FROM public.accounts",
    "SELECT * FROM accounts",
    "SELECT * FROM points",
    "COPY (SELECT 1) TO STDOUT",
    "SELECT lo_import('/etc/passwd')",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_tool_refuses_each_attack(guard: PostgresGuard, attack: str) -> None:
    with pytest.raises(sql_guard.Refused) as refused:
        guard.run(attack, limit=10, timeout_s=2)
    assert SECRET_SOURCE not in str(refused.value) and "alice" not in str(refused.value)


#: with the parser skipped, what PostgreSQL itself must refuse for want of a grant
BY_PRIVILEGE = [
    "SELECT x.ts_stat FROM unnest(ARRAY['SELECT to_tsvector(name) FROM public.accounts']) AS x",
    "SELECT * FROM ts_stat('SELECT to_tsvector(source) FROM public.points')",
    "SELECT query_to_xml('SELECT * FROM public.accounts', true, false, '')",
    "SELECT query_to_xml('SELECT * FROM public.series', true, false, '')",
    "SELECT * FROM public.accounts",
    "SELECT * FROM public.deliveries",
    "SELECT * FROM public.points",
    "SELECT * FROM public.records",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT set_config('role', 'postgres', false)",
    "SET ROLE postgres",
    "SET SESSION AUTHORIZATION postgres",
    "SELECT lo_import('/etc/passwd')",
    "COPY public.accounts TO STDOUT",
]


@pytest.mark.parametrize("attack", BY_PRIVILEGE)
def test_the_reader_role_alone_refuses_what_the_parser_would(
    guard: PostgresGuard, attack: str
) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        raw(guard, attack)


def test_another_accounts_rows_never_show_through_any_view(guard: PostgresGuard, two: Two) -> None:
    for view in sql_guard.VIEWS:
        rows = raw(guard, f"SELECT * FROM {view}")
        assert SECRET_SOURCE not in repr(rows), view
        assert two.bob_id not in repr(rows), view
    (mine,) = guard.run("SELECT sum(qty) FROM my_points", limit=5, timeout_s=5).rows
    assert mine == [10]
    # the views are bound by a literal, not a setting a query could change
    who = raw(guard, "SELECT current_user, session_user")
    assert who == [(sql_guard.reader_name(two.alice_id),) * 2]


def test_a_lock_or_large_object_made_by_a_query_does_not_outlive_it(
    guard: PostgresGuard, two: Two
) -> None:
    raw(guard, "SELECT pg_advisory_lock(424242), lo_create(0)")
    with psycopg.connect(two.url) as other:
        locks = other.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 424242"
        ).fetchone()
        objects = other.execute(
            "SELECT count(*) FROM pg_largeobject_metadata WHERE lomowner = %s::regrole",
            (sql_guard.reader_name(two.alice_id),),
        ).fetchone()
    assert locks == (0,) and objects == (0,)


def test_a_journal_role_that_may_not_create_roles_is_told_what_to_grant(two: Two) -> None:
    with psycopg.connect(two.url, autocommit=True) as owner:
        owner.execute("DROP ROLE IF EXISTS hl_weak")
        owner.execute("CREATE ROLE hl_weak LOGIN")
        owner.execute("GRANT SELECT ON schema_migrations TO hl_weak")
    try:
        # the journal's URL signed in as hl_weak (the journal takes a URL only)
        parts = urlsplit(two.url)
        weak = urlunsplit(parts._replace(netloc=f"hl_weak@{parts.netloc.rpartition('@')[2]}"))
        with pytest.raises(HealthlogError, match="CREATEROLE"):
            open_guard(weak, two.alice_id)
    finally:
        with psycopg.connect(two.url, autocommit=True) as owner:
            owner.execute("REVOKE ALL ON schema_migrations FROM hl_weak")
            owner.execute("DROP ROLE hl_weak")
