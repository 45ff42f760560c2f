"""PostgreSQL for tests: the machine's server, a fresh database for each use.

    from tests import pg

    with pg.fresh_database() as url:  # skips, or fails in CI, when the server is down
        journal = PostgresJournal(url)

or the ``pg_url`` fixture (import it into a test module or a conftest). The server is
127.0.0.1:5432, user ``postgres``, trust auth: what ``.ci/run`` starts. A database is
``hl_test_<random>``, created from a maintenance connection to the ``postgres`` database
and dropped ``WITH (FORCE)`` at the end, so a test that leaves a connection open still
cleans up. When the server cannot be reached the test is skipped with the reason,
unless ``HEALTHLOG_REQUIRE_POSTGRES=1`` (set by ``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from tests.conftest import REQUIRE_POSTGRES

HOST, PORT, USER = "127.0.0.1", 5432, "postgres"
SERVER = f"postgresql://{USER}@{HOST}:{PORT}"
MAINTENANCE_URL = f"{SERVER}/postgres"


def url_of(database: str) -> str:
    return f"{SERVER}/{database}"


@functools.cache
def _unreachable() -> str | None:
    """Why the server cannot be used, or None; asked once per test session."""
    try:
        with psycopg.connect(MAINTENANCE_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        # libpq's first line says which host and port, and why
        lines = str(exc).strip().splitlines()
        return lines[0].strip() if lines else type(exc).__name__
    return None


def require_server() -> None:
    """Skip the calling test when the server is down; fail instead in CI."""
    reason = _unreachable()
    if reason is None:
        return
    message = f"PostgreSQL at {HOST}:{PORT} is not reachable: {reason}"
    if REQUIRE_POSTGRES:
        pytest.fail(f"{message} (HEALTHLOG_REQUIRE_POSTGRES=1)")
    pytest.skip(message)


def maintenance() -> psycopg.Connection[tuple[object, ...]]:
    """An autocommit connection to the ``postgres`` database (CREATE/DROP DATABASE)."""
    return psycopg.connect(MAINTENANCE_URL, autocommit=True, connect_timeout=3)


@contextmanager
def fresh_database() -> Iterator[str]:
    """The URL of a new, empty database, dropped (with any connections left) at the end."""
    require_server()
    name = f"hl_test_{uuid.uuid4().hex[:16]}"
    with maintenance() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url_of(name)
    finally:
        readers = readers_in(url_of(name))
        with maintenance() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            drop_readers(conn, readers)


def readers_in(url: str) -> list[str]:
    """The SQL tool's reader roles this database made: one schema each, of the role's name.

    Roles are the cluster's, and tests run in parallel (pytest-xdist): a cleanup that
    dropped every reader role no database held grants for once dropped one that another
    worker had just made and not granted yet. Each database's cleanup drops its own."""
    with contextlib.suppress(psycopg.Error), psycopg.connect(url, connect_timeout=3) as conn:
        found = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'healthlog_sql_%'"
        ).fetchall()
        return [str(role) for (role,) in found]
    return []


def drop_readers(conn: psycopg.Connection[tuple[object, ...]], roles: list[str]) -> None:
    """Drop ``roles``, the reader roles of a database just dropped."""
    for role in roles:
        # the same account's role still granted in another database stays
        with contextlib.suppress(
            psycopg.errors.DependentObjectsStillExist, psycopg.errors.UndefinedObject
        ):
            conn.execute(f'DROP ROLE "{role}"')


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh, empty database for this test."""
    with fresh_database() as url:
        yield url
