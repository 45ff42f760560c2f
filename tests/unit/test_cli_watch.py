"""``healthlog status --check``: the watch's rules, one a line, and the exit status."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from healthlog import cli, ids
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import ParseStatus

from tests.conftest import metrics_body
from tests.unit.test_cli import STEPS, env, phone_for

__all__ = ["env"]  # the fixture: test_cli's journal and archive in tmp_path


def test_status_check_says_ok_and_exits_0_while_no_rule_holds(env: Path, capsys: Any) -> None:
    phone_for(env)
    assert cli.main(["status", "--check"]) == 0
    assert capsys.readouterr().out == "OK\n"
    assert cli.main(["status", "--check", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_status_check_gives_a_line_per_rule_that_holds_and_exits_1(
    env: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    phone = phone_for(env)
    failed = phone.send(metrics_body(STEPS))
    phone.journal.write_outcome(failed, expected=ParseStatus.PENDING, status=ParseStatus.FAILED,
                                uncovered=(), failure="deadline", points=())  # fmt: skip
    monkeypatch.setenv("HEALTHLOG_WATCH_NO_DELIVERY_H", "0.000000001")
    assert cli.main(["status", "--check"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["no_delivery alice", "failed deadline alice"]
    assert "1 deliveries failed (deadline)" in lines[1]
    assert cli.main(["status", "--check", "--account", "alice", "--json"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert [f["rule"] for f in found] == ["no_delivery", "failed deadline"]
    assert "healthlog replay --status failed" in found[1]["advice"]
    assert cli.main(["status", "--check", "--account", "nobody"]) == 2


def an_hour_old_account(folder: Path) -> None:
    journal = SqliteJournal(str(folder / "journal.db"))
    journal.migrate()
    journal.add_account("alice", "hash", created_at=ids.now() - timedelta(hours=1))
    journal.close()


def test_watch_dry_run_shows_each_targets_message_and_records_nothing(
    env: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    an_hour_old_account(env)
    monkeypatch.setenv("HEALTHLOG_WATCH_NO_DELIVERY_H", "0.5")
    assert cli.main(["watch"]) == 0  # no targets: what holds, and that nobody is told
    out = capsys.readouterr().out
    assert out.startswith("no_delivery alice: ") and "HEALTHLOG_NOTIFY_URLS is empty" in out
    monkeypatch.setenv("HEALTHLOG_NOTIFY_URLS", "json://u:secret1@127.0.0.1:9/a ntfy://secret2")
    for _ in range(2):  # a dry run changes nothing: the second says the same
        assert cli.main(["watch", "--dry-run", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert [(m["target"][:7], m["title"]) for m in report["sent"]] == [
            ("#1 json", "healthlog no_delivery alice"),
            ("#2 ntfy", "healthlog no_delivery alice"),
        ]
        assert "secret" not in json.dumps(report["sent"])
    assert cli.main(["watch", "--dry-run"]) == 0
    assert "would send to #1 json (" in capsys.readouterr().out
