"""What the every-interface tests share (test_one_day.py, test_consistency.py): a
journal opened from its URL, one ``healthlog mcp`` over stdio to ask, and the
comparison of two answers."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from healthlog import tokens
from healthlog.journal.port import Journal
from healthlog.journal.postgres import PostgresJournal
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import Account
from mcp import Client, StdioServerParameters

from tests import pg
from tests.integration.test_mcp import stack_env

#: a tool's name and arguments -> its structured answer (an error fails the test)
Ask = Callable[..., Awaitable[Any]]


class _NoDatabase:
    """The context of no PostgreSQL database: SQLite's."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: object) -> None:
        return None


@contextlib.contextmanager
def alices_journal(
    backend: str, where: Path, zone: str
) -> Iterator[tuple[str, Journal, Account, str]]:
    """A new journal on ``backend`` (``sqlite`` in ``where``, or a fresh PostgreSQL
    database) holding alice's account on ``zone``: its URL, the journal, the account,
    its token. The journal is closed by the caller; a PostgreSQL database is dropped
    after."""
    with pg.fresh_database() if backend == "postgres" else _NoDatabase() as url:
        if url is None:
            url = f"sqlite:///{where / 'journal.db'}"
        journal = open_journal(url)
        journal.migrate()
        token = tokens.new_token()
        account = journal.add_account("alice", tokens.hash_token(token))
        journal.set_time_zone(account.id, zone)
        yield url, journal, account, token


def open_journal(url: str) -> Journal:
    if url.startswith("sqlite:///"):
        return SqliteJournal(url.removeprefix("sqlite:///"))
    return PostgresJournal(url)


def ask_mcp(url: str, where: Path, work: Callable[[Ask], Awaitable[None]]) -> None:
    """``work`` with one ``healthlog mcp --account alice`` over stdio, through the SDK's
    client: ``await ok(tool, **arguments)``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "healthlog.cli", "mcp", "--account", "alice"],
        env=stack_env(url, where),
    )

    async def main() -> None:
        async with Client(params) as client:

            async def ok(tool: str, **arguments: Any) -> Any:
                result = await client.call_tool(tool, arguments)
                assert not result.is_error, result.content
                return result.structured_content

            await work(ok)

    anyio.run(main)


def same(said: Any, want: Any) -> bool:
    """Equal, floats within pytest's approx, a tuple equal to the list JSON made of it."""
    if isinstance(want, dict):
        return (
            isinstance(said, dict)
            and said.keys() == want.keys()
            and all(same(said[k], want[k]) for k in want)
        )
    if isinstance(want, list | tuple) and isinstance(said, list | tuple):
        return len(said) == len(want) and all(same(a, b) for a, b in zip(said, want, strict=True))
    if isinstance(want, float):
        return isinstance(said, int | float) and said == pytest.approx(want)
    return bool(said == want)


async def sql_days(ok: Ask, start: str, end: str) -> dict[str, dict[str, float]]:
    """Steps and heart rate per day of [start, end) through the MCP SQL tool's
    ``my_daily``, as docs/mcp.md tells an assistant to ask: metric -> day -> value."""
    days = await ok("sql", query=(
        "SELECT day, metric, value FROM my_daily WHERE metric IN "
        f"('step_count', 'heart_rate') AND day >= '{start}' AND day < '{end}'"
    ))  # fmt: skip
    found: dict[str, dict[str, float]] = {}
    for day, metric, value in days["rows"]:
        found.setdefault(metric, {})[day] = value
    return found
