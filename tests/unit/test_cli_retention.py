"""``healthlog retention``: only old parsed bodies go, and everything after knows it.

In-process on a real SQLite journal and archive folder (``tests.unit.test_cli``'s
``run``), through click's CliRunner for usage errors, and under a real pseudo-terminal
for the progress line.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from healthlog import cli, ids
from healthlog.errors import BodyMissing
from healthlog.journal.port import ZERO_CURSOR

from tests.conftest import Phone, metrics_body
from tests.unit.test_cli import STEPS, env, phone_for, run

__all__ = ["env"]  # the fixture, imported for this module's tests

BIN = Path(sys.executable).parent
PARTIAL = {"data": {"metrics": [], "workouts": [{"name": "Walk"}]}}


@dataclass
class Journalled:
    phone: Phone
    old_parsed: list[str]
    old_partial: str
    old_failed: str
    old_pending: str
    young_parsed: str

    def key(self, delivery_id: str) -> str:
        found = self.phone.journal.get_delivery(delivery_id)
        assert found is not None
        return found.archive_key

    def body_there(self, delivery_id: str) -> bool:
        try:
            self.phone.archive.size(self.key(delivery_id))
        except BodyMissing:
            return False
        return True


@pytest.fixture
def journalled(env: Path, capsys: Any) -> Journalled:
    """Bodies of every status received 200 days ago, and a parsed one of yesterday."""
    phone = phone_for(env)
    old = ids.now() - timedelta(days=200)
    at = iter(old + timedelta(seconds=n) for n in range(100))
    old_parsed = [phone.send(metrics_body(STEPS), at=next(at)) for _ in range(2)]
    old_partial = phone.send(PARTIAL, at=next(at))
    old_failed = phone.send(b"{nope", at=next(at))
    young = phone.send(metrics_body(STEPS), at=ids.now() - timedelta(days=1))
    assert run(capsys, "fold", "--json")["selected"] == 5
    old_pending = phone.send(metrics_body(STEPS), at=next(at))  # not folded yet
    return Journalled(phone, old_parsed, old_partial, old_failed, old_pending, young)


def test_only_the_old_parsed_bodies_go_and_a_dry_run_removes_nothing(
    journalled: Journalled, capsys: Any
) -> None:
    j = journalled
    every = [*j.old_parsed, j.old_partial, j.old_failed, j.old_pending, j.young_parsed]
    keys_before = sorted(j.phone.archive.keys())

    dry = run(capsys, "retention", "--older-than", "90d", "--dry-run", "--json")
    assert (dry["due"], dry["removed"], dry["dry_run"]) == (2, 0, True)
    assert sorted(j.phone.archive.keys()) == keys_before
    assert run(capsys, "status", "--json")["bodies_removed"] == 0
    text = run(capsys, "retention", "--older-than", "90d", "--dry-run")
    assert "would remove 2 bodies" in text and "nothing removed" in text

    done = run(capsys, "retention", "--older-than", "90d", "--json")
    assert (done["due"], done["removed"], done["kept"], done["dry_run"]) == (2, 2, 0, False)
    assert [j.body_there(d) for d in every] == [False, False, True, True, True, True]
    assert sorted(j.phone.archive.keys()) == sorted(j.key(d) for d in every[2:])

    status = run(capsys, "status", "--json")
    assert status["bodies_removed"] == 2
    assert status["counts"] == {"pending": 1, "parsed": 3, "partial": 1, "failed": 1}
    assert "bodies removed by retention: 2" in run(capsys, "status")
    listed = {r["id"]: r["body_removed"] for r in run(capsys, "deliveries", "--json")}
    assert listed == {d: d in j.old_parsed for d in every}
    table = run(capsys, "deliveries").splitlines()
    assert table[0].split()[-1] == "body"
    assert sorted(line.split()[-1] for line in table[1:]) == ["kept"] * 4 + ["removed"] * 2

    # a run that finished leaves nothing to delete again: the next deletes nothing
    again = run(capsys, "retention", "--older-than", "90d", "--json")
    assert (again["due"], again["removed"], again["removed_before"]) == (0, 0, 0)
    assert "removed 0 bodies" in run(capsys, "retention", "--older-than", "12w")
    dry_again = run(capsys, "retention", "--older-than", "90d", "--dry-run")
    assert "removed by earlier runs: 2" in dry_again


def test_replay_after_retention_skips_the_removed_and_says_so(
    journalled: Journalled, capsys: Any
) -> None:
    run(capsys, "retention", "--older-than", "90d")
    points = run(capsys, "status", "--json")["points"]

    report = run(capsys, "replay", "--all", "--json")
    assert report["skipped_body_removed"] == 2
    assert report["selected"] == 4  # the young parsed, partial, failed and pending ones
    assert report["showcase_changed"] is False
    status = run(capsys, "status", "--json")
    assert status["failures"] == {"unreadable": 1}  # never missing_body
    assert status["points"] == points  # what the removed bodies brought stays
    assert "skipped 2 whose bodies retention removed" in run(capsys, "replay", "--all")
    parsed = run(capsys, "replay", "--status", "parsed", "--dry-run", "--json")
    assert (parsed["selected"], parsed["skipped_body_removed"]) == (2, 2)


def test_reconcile_is_not_tripped_by_removed_bodies(journalled: Journalled, capsys: Any) -> None:
    run(capsys, "retention", "--older-than", "90d")
    report = run(capsys, "reconcile", "--json")
    assert report == {"seen": 4, "journalled": 0, "present": 4, "skipped": 0, "swept": 0}
    assert run(capsys, "status", "--json")["counts"]["pending"] == 1


def test_a_run_interrupted_between_mark_and_delete_is_finished_by_the_next(
    journalled: Journalled, capsys: Any
) -> None:
    """The crash's state made for real: rows marked in the journal, bodies still there."""
    j = journalled
    journal = j.phone.journal
    due = journal.retention_due(ids.now() - timedelta(days=90), ZERO_CURSOR, 10)
    assert journal.mark_bodies_removed([r.delivery_id for r in due], ids.now()) == j.old_parsed
    assert all(j.body_there(d) for d in j.old_parsed)  # the crash: not deleted yet
    # a replay meanwhile already skips them: the journal said so before any delete
    assert run(capsys, "replay", "--status", "parsed", "--json")["skipped_body_removed"] == 2

    done = run(capsys, "retention", "--older-than", "90d", "--json")
    assert (done["removed_before"], done["removed"]) == (2, 0)
    assert not any(j.body_there(d) for d in j.old_parsed)
    assert j.body_there(j.young_parsed)
    # finished, and confirmed: the run after deletes them no more
    assert run(capsys, "retention", "--older-than", "90d", "--json")["removed_before"] == 0
    assert journal.unconfirmed_removals(ZERO_CURSOR, 10) == []


@pytest.mark.parametrize(
    ("value", "said"),
    [("90", "'90' is not an age"), ("90x", "'90x' is not an age"),
     ("0d", "'0d' is no age at all: give one above zero"), ("2026-01-01", "forms: 90d, 12w")],
)  # fmt: skip
def test_a_bad_age_is_a_usage_error_naming_the_option(env: Path, value: str, said: str) -> None:
    result = CliRunner().invoke(cli.cli, ["retention", "--older-than", value])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--older-than'" in result.stderr and said in result.stderr
    assert "Traceback" not in result.stderr
    missing = CliRunner().invoke(cli.cli, ["retention"])
    assert missing.exit_code == 2 and "--older-than" in missing.stderr


def test_a_progress_line_on_a_terminal_and_none_off_it(journalled: Journalled, env: Path) -> None:
    piped = subprocess.run([str(BIN / "healthlog"), "retention", "--older-than", "90d",
                            "--dry-run"], capture_output=True, text=True, timeout=60,
                           check=False)  # fmt: skip
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr

    leader, follower = pty.openpty()
    with subprocess.Popen([str(BIN / "healthlog"), "retention", "--older-than", "90d"],
                          stdin=follower, stdout=follower, stderr=follower) as child:  # fmt: skip
        os.close(follower)
        seen = b""
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            assert ready, seen
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed: the child is done
                break
            if not chunk:
                break
            seen += chunk
        assert child.wait(60) == 0, seen
    os.close(leader)
    assert b"\rretention: 1 bodies removed" in seen or b"\rretention: 2 bodies removed" in seen
    assert b"removed 2 bodies of parsed deliveries" in seen
