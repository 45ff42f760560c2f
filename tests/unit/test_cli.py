"""The healthlog command, driven in-process on a real SQLite journal and archive folder."""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from healthlog import cli, tokens
from healthlog.archive.local import LocalArchive
from healthlog.errors import AccountNameTaken, AccountNotFound, TokenTaken
from healthlog.journal.sqlite import SqliteJournal
from healthlog.local import stack as serve
from healthlog.model import ParseStatus
from healthlog.ops import accounts

from tests.conftest import Phone, metrics_body


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", f"sqlite:///{tmp_path}/journal.db")
    monkeypatch.setenv("HEALTHLOG_ARCHIVE_URL", f"file://{tmp_path}/archive")
    monkeypatch.setenv("HEALTHLOG_LOG_LEVEL", "WARNING")
    return tmp_path


def run(capsys: Any, *argv: str) -> Any:
    assert cli.main(list(argv)) == 0
    out = capsys.readouterr().out
    return json.loads(out) if "--json" in argv else out


def phone_for(folder: Path, name: str = "alice") -> Phone:
    journal = SqliteJournal(str(folder / "journal.db"))
    journal.migrate()
    token = tokens.new_token()
    account = journal.add_account(name, tokens.hash_token(token))
    return Phone(journal, LocalArchive(folder / "archive"), account, token)


HR = ("heart_rate", "count/min", [{"date": "2026-01-02 08:00:00 +0100", "Min": 50, "Avg": 60,
      "Max": 70, "source": "Watch"}])  # fmt: skip
STEPS = ("step_count", "count", [{"date": "2026-01-03 08:00:00 +0100", "qty": 12}])


def test_account_add_prints_the_token_once_and_stores_only_its_hash(env: Path, capsys: Any) -> None:
    created = run(capsys, "account", "add", "bob", "--json")
    assert created["name"] == "bob" and created["token"].startswith("hl_")
    journal = SqliteJournal(str(env / "journal.db"))
    account = journal.account_by_token_hash(tokens.hash_token(created["token"]))
    assert account is not None and account.name == "bob"
    assert created["token"].encode() not in (env / "journal.db").read_bytes()
    listed = run(capsys, "account", "list", "--json")
    assert [a["name"] for a in listed] == ["bob"]
    assert "token" not in listed[0]


def test_fold_status_and_deliveries_tell_the_outcomes(env: Path, capsys: Any) -> None:
    phone = phone_for(env)
    parsed = phone.send(metrics_body(HR, STEPS))
    partial = phone.send({"data": {"metrics": [], "workouts": [{"name": "Walk"}]}})
    failed = phone.send(b"{nope")
    status = run(capsys, "status", "--json")
    assert status["backlog"] == 3 and status["oldest_pending_age_s"] > 0

    folded = run(capsys, "fold", "--json")
    assert (folded["parsed"], folded["partial"], folded["failed"], folded["deferred"]) == (
        1, 1, 1, 0,
    )  # fmt: skip

    status = run(capsys, "status", "--json")
    assert status["counts"] == {"pending": 0, "parsed": 1, "partial": 1, "failed": 1}
    assert status["backlog"] == 0 and status["oldest_pending_age_s"] is None
    assert status["uncovered"] == {"workouts": 1}
    assert status["points"] == 4  # min, avg, max, and one step count
    # that workout has no start, so no identity: no record, and the section stays uncovered
    assert status["records"] == {}
    assert status["last_delivery"] is not None

    rows = run(capsys, "deliveries", "--json")
    assert [r["id"] for r in rows] == [failed, partial, parsed]  # newest first
    by_id = {r["id"]: r for r in rows}
    assert by_id[partial]["uncovered"] == ["workouts"]
    assert by_id[failed]["failure"] == "unreadable"
    only = run(capsys, "deliveries", "--status", "partial", "--json")
    assert [r["id"] for r in only] == [partial]
    assert len(run(capsys, "deliveries", "--limit", "1", "--json")) == 1


def test_replay_reports_counts_and_whether_the_showcase_changed(env: Path, capsys: Any) -> None:
    phone = phone_for(env)
    phone.send(metrics_body(STEPS))
    phone.send({"data": {"workouts": [{"name": "Walk"}]}})
    run(capsys, "fold", "--json")
    dry = run(capsys, "replay", "--all", "--dry-run", "--json")
    assert (dry["parsed"], dry["partial"], dry["dry_run"]) == (1, 1, True)
    again = run(capsys, "replay", "--all", "--json")
    assert again["showcase_changed"] is False and again["status_changes"] == 0
    by_key = run(capsys, "replay", "--uncovered", "workouts", "--json")
    assert by_key["selected"] == 1 and by_key["partial"] == 1
    by_status = run(capsys, "replay", "--status", "parsed", "--json")
    assert by_status["selected"] == 1 and by_status["parsed"] == 1


def test_export_writes_csv_and_json_lines_filtered_by_metric_and_time(
    env: Path, capsys: Any
) -> None:
    phone = phone_for(env)
    phone.send(metrics_body(HR, STEPS))
    run(capsys, "fold")
    rows = list(csv.DictReader(io.StringIO(run(capsys, "export", "--metric", "heart_rate"))))
    assert [(r["field"], r["qty"]) for r in rows] == [("avg", "60.0"), ("max", "70.0"),
                                                      ("min", "50.0")]  # fmt: skip
    assert rows[0]["start"] == "2026-01-02T07:00:00.000000Z" and rows[0]["utc_offset"] == "60"
    lines = run(capsys, "export", "--format", "jsonl", "--from", "2026-01-03").splitlines()
    assert [json.loads(x)["metric"] for x in lines] == ["step_count"]
    assert run(capsys, "export", "--format", "jsonl", "--to", "2026-01-02") == ""
    out = env / "out.csv"
    run(capsys, "export", "--output", str(out))
    assert len(out.read_text().splitlines()) == 1 + 4


def test_reconcile_journals_a_body_archived_without_its_row(env: Path, capsys: Any) -> None:
    phone = phone_for(env)
    kept = phone.send(metrics_body(STEPS))
    # a body whose row never made it (the process died between archive and journal)
    orphan_key = phone.archive.keys().__next__().replace(kept, "0" * 8 + kept[8:])
    phone.archive.put(orphan_key, b'{"data": {}}')
    # and the temporary files of two killed writers: one old, one maybe still writing
    tmp = env / "archive" / ".tmp"
    tmp.mkdir(exist_ok=True)
    (tmp / "body-old").write_bytes(b'{"half')
    (tmp / "body-new").write_bytes(b'{"half')
    os.utime(tmp / "body-old", (time.time() - 7 * 3600,) * 2)
    report = run(capsys, "reconcile", "--json")
    assert report == {"seen": 2, "journalled": 1, "present": 1, "skipped": 0, "swept": 1}
    assert sorted(p.name for p in tmp.iterdir()) == ["body-new"]
    assert run(capsys, "reconcile", "--json")["journalled"] == 0
    assert run(capsys, "status", "--json")["backlog"] == 2


def test_an_unknown_account_is_a_clear_error(env: Path, capsys: Any) -> None:
    run(capsys, "account", "add", "alice")
    assert cli.main(["status", "--account", "nobody"]) == 2
    assert "no account named" in capsys.readouterr().err


def test_an_output_that_is_not_a_regular_file_keeps_its_mode(env: Path, capsys: Any) -> None:
    """-o makes a file its owner's only, but never chmods what is not a regular file (a
    pipe here; /dev/null as root would be the system's)."""
    import stat
    import threading

    run(capsys, "account", "add", "alice")
    pipe = env / "pipe"
    os.mkfifo(pipe)
    pipe.chmod(0o644)
    read: list[bytes] = []

    def drain() -> None:
        with open(pipe, "rb") as reader:  # opens once the export opens the other end
            read.append(reader.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    assert cli.main(["account", "export", "-o", str(pipe)]) == 0
    reader.join(timeout=60)
    assert read and json.loads(read[0])["name"] == "alice"  # the export went through it
    assert stat.S_IMODE(pipe.stat().st_mode) == 0o644


@pytest.mark.parametrize("argv", [["status"], ["deliveries"], ["migrate"], ["account", "list"]])
def test_a_journal_file_that_is_not_a_database_is_one_line_not_a_traceback(
    env: Path, capsys: Any, argv: list[str]
) -> None:
    (env / "journal.db").write_bytes(b"not a database, but a file of the same name\n" * 100)
    assert cli.main(argv) == 2  # a refusal, as for no journal at all
    err = capsys.readouterr().err
    assert err.strip() == (
        f"healthlog: the journal at {env}/journal.db is not a SQLite database, or is "
        "damaged: point HEALTHLOG_JOURNAL_URL at the journal's file"
    )


def test_account_rotate_gives_a_new_token_and_the_old_one_stops_working(
    env: Path, capsys: Any
) -> None:
    old = run(capsys, "account", "add", "bob", "--json")
    new = run(capsys, "account", "rotate", "bob", "--json")
    assert new["id"] == old["id"] and new["token"] != old["token"]
    journal = SqliteJournal(str(env / "journal.db"))
    assert journal.account_by_token_hash(tokens.hash_token(old["token"])) is None
    found = journal.account_by_token_hash(tokens.hash_token(new["token"]))
    assert found is not None and found.id == old["id"]
    journal.close()
    assert cli.main(["account", "rotate", "nobody"]) == 2


def accounts_of(db: Path) -> list[tuple[Any, ...]]:
    journal = SqliteJournal(str(db))
    journal.migrate()
    found = [(a, journal.token_hash(a.id)) for a in journal.accounts()]
    journal.close()
    return found


def test_account_export_then_import_moves_the_accounts_whole_and_again_skips_them(
    env: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(capsys, "account", "add", "alice")
    run(capsys, "account", "add", "bob")
    run(capsys, "account", "set-tz", "bob", "Europe/Berlin")
    exported = env / "accounts.jsonl"
    run(capsys, "account", "export", "--output", str(exported))
    assert exported.stat().st_mode & 0o077 == 0
    lines = [json.loads(x) for x in exported.read_text().splitlines()]
    assert [sorted(x) for x in lines] == [sorted(accounts.EXPORT_FIELDS)] * 2
    assert run(capsys, "account", "export") == exported.read_text()  # stdout alike

    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", f"sqlite:///{env}/other.db")
    assert run(capsys, "account", "import", str(exported), "--json") == {
        "imported": 2,
        "skipped": 0,
    }
    moved = accounts_of(env / "other.db")
    assert moved == accounts_of(env / "journal.db")
    assert moved[1][0].time_zone == "Europe/Berlin"
    monkeypatch.setattr("sys.stdin", io.StringIO(exported.read_text()))
    assert run(capsys, "account", "import", "-", "--json") == {"imported": 0, "skipped": 2}
    assert accounts_of(env / "other.db") == moved


@pytest.mark.parametrize(
    "clash",
    ["same id, another name", "same id, another token", "name of another id", "token taken"],
)
def test_an_account_import_that_clashes_imports_nothing(
    env: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch, clash: str
) -> None:
    run(capsys, "account", "add", "alice")
    run(capsys, "account", "add", "bob")
    exported = env / "accounts.jsonl"
    run(capsys, "account", "export", "--output", str(exported))
    alice, bob = (json.loads(x) for x in exported.read_text().splitlines())
    carol = {**alice, "id": "carol-id", "name": "carol", "token_hash": "c" * 64}
    changed = {
        "same id, another name": {**bob, "name": "robert"},
        "same id, another token": {**bob, "token_hash": "b" * 64},
        "name of another id": {**bob, "id": "other-id", "token_hash": "b" * 64},
        "token taken": {**bob, "id": "other-id", "name": "robert"},
    }[clash]
    exported.write_text("".join(json.dumps(x) + "\n" for x in (carol, alice, changed)))
    before = accounts_of(env / "journal.db")

    assert cli.main(["account", "import", str(exported)]) == 2
    assert "nothing imported" in capsys.readouterr().err
    assert accounts_of(env / "journal.db") == before


def test_an_account_import_of_a_malformed_line_says_where(env: Path, capsys: Any) -> None:
    bad = env / "accounts.jsonl"
    bad.write_text('{"id": "x", "name": "x"}\n')
    assert cli.main(["account", "import", str(bad)]) == 2
    assert "line 1: not an account" in capsys.readouterr().err


def test_starting_the_stack_journals_bodies_a_crash_left_without_a_row(env: Path) -> None:
    from healthlog.config import Settings

    phone = phone_for(env)
    kept = phone.send(metrics_body(STEPS))
    orphan_key = next(iter(phone.archive.keys())).replace(kept, "0" * 8 + kept[8:])
    phone.archive.put(orphan_key, b'{"data": {}}')
    settings = Settings.from_env()
    assert serve.prepare_stack(settings) is None  # the account exists: no new token
    rows = phone.journal.deliveries()
    assert orphan_key in {d.archive_key for d in rows}
    assert len(rows) == 2 and all(d.status.value == "pending" for d in rows)


def test_the_first_start_creates_an_account_and_returns_its_token_once(env: Path) -> None:
    from healthlog.config import Settings

    settings = Settings.from_env()
    token = serve.prepare_stack(settings)
    assert token is not None and token.startswith("hl_")
    journal = SqliteJournal(str(env / "journal.db"))
    assert journal.account_by_token_hash(tokens.hash_token(token)) is not None
    assert serve.prepare_stack(settings) is None
    assert [a.name for a in journal.accounts()] == ["default"]


def test_account_add_of_a_taken_name_is_a_clear_error_without_a_token(
    env: Path, capsys: Any
) -> None:
    run(capsys, "account", "add", "bob")
    assert cli.main(["account", "add", "bob", "--json"]) == 2
    captured = capsys.readouterr()
    assert "an account named 'bob' exists" in captured.err
    assert "hl_" not in captured.err + captured.out
    journal = SqliteJournal(str(env / "journal.db"))
    assert [a.name for a in journal.accounts()] == ["bob"]
    journal.close()


def _refuse(error: type[Exception]) -> Any:
    def refused(*args: object, **kwargs: object) -> None:
        raise error()

    return refused


@pytest.mark.parametrize(
    ("argv", "method", "error", "said"),
    [
        (["account", "add", "bob"], "add_account", AccountNameTaken,
         "an account named 'bob' exists"),
        (["account", "add", "bob"], "add_account", TokenTaken, "run the command again"),
        (["account", "rotate", "bob"], "set_token_hash", TokenTaken, "run the command again"),
        (["account", "rotate", "bob"], "set_token_hash", AccountNotFound, "no account named 'bob'"),
        (["account", "set-tz", "bob", "Europe/Berlin"], "set_time_zone", AccountNotFound,
         "no account named 'bob'"),
    ],
)  # fmt: skip
def test_the_journals_account_refusals_are_told_plainly_and_never_show_a_token(
    env: Path,
    capsys: Any,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    method: str,
    error: type[Exception],
    said: str,
) -> None:
    """What the Journal port promises to raise, the command catches by class."""
    if argv[1] != "add":
        run(capsys, "account", "add", "bob")
    monkeypatch.setattr(SqliteJournal, method, _refuse(error))
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert said in captured.err
    assert "hl_" not in captured.err + captured.out


def test_an_account_lookup_that_finds_nothing_raises_account_not_found(env: Path) -> None:
    journal = SqliteJournal(str(env / "journal.db"))
    journal.migrate()
    with pytest.raises(AccountNotFound, match="no account named 'nobody'"):
        accounts.find_id(journal, "nobody")
    with pytest.raises(AccountNotFound, match="no account has this token") as raised:
        accounts.find_id(journal, accounts.Token("hl_not-a-real-token"))
    assert "hl_" not in str(raised.value)
    journal.close()


def test_text_from_a_body_is_printed_with_its_control_characters_escaped(
    env: Path, capsys: Any
) -> None:
    """A section name that would retitle the window and clear the screen."""
    hostile = "\x1b]0;owned\x07\x1b[2J\u202e"
    phone = phone_for(env)
    phone.send(json.dumps({"data": {"metrics": [], hostile: [{"a": 1}]}}).encode())
    assert cli.main(["fold"]) == 0
    capsys.readouterr()

    for command in ("status", "deliveries"):
        out = run(capsys, command)
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, command
        assert "\\x1b]0;owned\\x07\\x1b[2J\\u202e" in out, command
    assert run(capsys, "status", "--json")["uncovered"] == {hostile: 1}  # data kept as sent


def test_status_names_the_crashed_deliveries_and_replay_refolds_that_class_alone(
    env: Path, capsys: Any
) -> None:
    phone = phone_for(env)
    crashed, slow = phone.send(metrics_body(STEPS)), phone.send(metrics_body(STEPS))
    for delivery, failure in ((crashed, "crashed"), (slow, "deadline")):
        phone.journal.write_outcome(
            delivery, expected=ParseStatus.PENDING, status=ParseStatus.FAILED, uncovered=(),
            failure=failure, points=(),
        )  # fmt: skip

    out = run(capsys, "status")
    assert "failed by class: crashed 1, deadline 1" in out
    assert "healthlog replay --failure crashed" in out
    assert run(capsys, "status", "--json")["failures"] == {"crashed": 1, "deadline": 1}

    report = run(capsys, "replay", "--failure", "crashed", "--json")

    assert (report["selected"], report["parsed"]) == (1, 1)
    statuses = {d["id"]: d["status"] for d in run(capsys, "deliveries", "--json")}
    assert statuses == {crashed: "parsed", slow: "failed"}


def test_dashboard_on_a_taken_port_says_one_line_as_serve_does_and_exits_1(
    env: Path, capsys: Any
) -> None:
    """Not werkzeug's "Address already in use" text: serve's line, naming --port."""
    phone_for(env)
    with socket.socket() as other:  # another program listening on the port
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]
        assert cli.main(["dashboard", "--port", str(taken)]) == 1
    captured = capsys.readouterr()
    assert "healthlog dashboard" not in captured.out  # no banner: it never listened
    assert captured.err.splitlines() == [
        f"healthlog: port {taken} on 127.0.0.1 is taken (another healthlog serve, or "
        "another program, listens there): --port N picks another"
    ]


def test_dashboard_on_an_address_not_of_this_machine_says_one_line(env: Path, capsys: Any) -> None:
    """192.0.2.1 (TEST-NET-1) is nobody's: a line naming --host, never a traceback."""
    phone_for(env)
    assert cli.main(["dashboard", "--host", "192.0.2.1", "--port", "8999"]) == 2
    captured = capsys.readouterr()
    assert "healthlog dashboard" not in captured.out
    assert captured.err.splitlines() == [
        "healthlog: --host 192.0.2.1: cannot listen there (Cannot assign requested address)"
    ]


def test_a_socket_on_every_ipv6_address_takes_ipv4_clients_too() -> None:
    """``--host ::`` listens for IPv4 as well, as the servers binding it themselves did."""
    from healthlog.local import launcher

    with launcher.listening_socket("::", 0) as bound:
        assert bound.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 0
        port = bound.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=10):
            accepted, _ = bound.accept()
            accepted.close()


def test_account_set_units_is_kept_listed_and_moved(
    env: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(capsys, "account", "add", "alice")
    assert run(capsys, "account", "list", "--json")[0]["unit_system"] == "metric"  # the default
    changed = run(capsys, "account", "set-units", "alice", "imperial", "--json")
    assert (changed["name"], changed["unit_system"]) == ("alice", "imperial")
    assert run(capsys, "account", "list").split("\t")[-1].strip() == "imperial"
    exported = env / "accounts.jsonl"
    run(capsys, "account", "export", "--output", str(exported))
    assert json.loads(exported.read_text())["unit_system"] == "imperial"
    old = {k: v for k, v in json.loads(exported.read_text()).items() if k != "unit_system"}
    (env / "old.jsonl").write_text(json.dumps(old) + "\n")  # an export made before 0020
    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", f"sqlite:///{env}/other.db")
    run(capsys, "account", "import", str(env / "old.jsonl"))
    assert [a.unit_system for a, _ in accounts_of(env / "other.db")] == ["metric"]


def test_account_set_units_refuses_another_system_naming_the_argument(
    env: Path, capsys: Any
) -> None:
    run(capsys, "account", "add", "alice")
    assert cli.main(["account", "set-units", "alice", "nautical"]) == 2
    said = capsys.readouterr().err
    assert "metric|imperial" in said and "'nautical'" in said
    assert cli.main(["account", "set-units", "nobody", "metric"]) == 2
    assert "no account named 'nobody'" in capsys.readouterr().err
