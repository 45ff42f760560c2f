"""The SQLite SQL tool's limits hold inside the engine (issue 24, item 2), on a real file.

One-opcode functions (``randomblob``, a wide ``printf``) used to run for a minute and
grow the process by gigabytes under a 1 s limit: a value is now capped in size
(``SQLITE_LIMIT_LENGTH``), and a timer interrupts a query whose opcodes outlast the
progress handler's checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from healthlog import tokens
from healthlog.journal import guard as sql_guard
from healthlog.journal.sqlite import SqliteJournal


@pytest.fixture
def guard(tmp_path: Path) -> Iterator[sql_guard.Guard]:
    journal = SqliteJournal(str(tmp_path / "journal.db"))
    journal.migrate()
    account = journal.add_account("alice", tokens.hash_token(tokens.new_token()))
    opened = journal.guarded_session(account.id)
    journal.close()
    yield opened
    opened.close()


@pytest.mark.parametrize(
    "query",
    [
        "SELECT length(randomblob(300000000))",
        "SELECT length(zeroblob(300000000))",
        "SELECT length(replace(hex(zeroblob(8000000)), '0', '00'))",
    ],
)
def test_a_value_past_the_cap_is_refused(guard: sql_guard.Guard, query: str) -> None:
    with pytest.raises(sql_guard.Refused) as refused:
        guard.run(query, limit=5, timeout_s=5)
    said = str(refused.value)
    assert "at most 16 MB" in said or "time limit" in said, said


@pytest.mark.parametrize(
    "query",
    [
        "SELECT typeof(printf('%.*c', 2147483647, 'x'))",
        "SELECT printf('%*d', 2000000000, 1)",
        "SELECT printf('%2000000000c', 'x')",
        "SELECT format('%.99999f', 1.5)",
        "SELECT printf(metric, 1) FROM my_points",
    ],
)
def test_a_printf_that_pads_past_the_cap_is_refused_before_it_runs(
    guard: sql_guard.Guard, query: str
) -> None:
    with pytest.raises(sql_guard.Refused, match="printf/format"):
        guard.run(query, limit=5, timeout_s=5)
    assert guard.run("SELECT printf('%.1f|%5d', 2.5, 7)", limit=5, timeout_s=5).rows == [
        ["2.5|    7"]
    ]


def test_a_value_under_the_cap_is_read(guard: sql_guard.Guard) -> None:
    assert guard.run("SELECT length(randomblob(1000000))", limit=5, timeout_s=5).rows == [[1000000]]


def test_heavy_opcodes_are_stopped_at_the_time_limit(guard: sql_guard.Guard) -> None:
    endless = (
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) "
        "SELECT count(length(hex(zeroblob(5000000)))) FROM c"
    )
    with pytest.raises(sql_guard.Refused, match="time limit"):
        guard.run(endless, limit=5, timeout_s=0.5)
    # the session is usable after it, and the next query is not interrupted
    assert guard.run("SELECT 1", limit=5, timeout_s=5).rows == [[1]]
