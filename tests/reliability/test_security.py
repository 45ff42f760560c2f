"""Security: tokens at rest, one account's token against another's data, logs, binding.

* A token is stored only as its SHA-256 (the journal and the archive never hold it),
  reaches the journal only as that hash, and ``tokens.matches`` compares in constant
  time (see docs/security.md for why the lookup by hash needs no constant-time compare).
* Alice's token writes only Alice's rows, and through ``--token`` the operator's
  commands (status, deliveries, export, replay) see and change only Alice's data.
* A full scenario (both servers, rejected and accepted requests, a fold, the CLI) run at
  DEBUG: no log line carries a value, a source or workout name, a date, a token or a
  header value that appeared in the requests.
* The servers bind 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import gzip
import hashlib
import hmac
import io
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import requests
from healthlog import cli, ids, ingest, tokens
from healthlog.archive.keys import body_key
from healthlog.archive.local import LocalArchive
from healthlog.config import Settings
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player
from healthlog.ingest import IngestDeps, IngestRequest, Reply
from healthlog.ingest.wake import NullWaker
from healthlog.journal.sqlite import SqliteJournal
from healthlog.local.launcher import clean_env
from healthlog.ops.reconcile import reconcile

from tests.conftest import Phone
from tests.integration.servers import ROOT, free_port, function_server
from tests.reliability.harness import new_account, steps_body

BIN = Path(sys.executable).parent


# --- tokens at rest ------------------------------------------------------------------------


def accept(journal: Any, archive: Any, headers: dict[str, str], body: bytes) -> Reply:
    stream = io.BytesIO(body)
    request = IngestRequest(headers=headers, content_length=len(body), read=stream.read)
    return ingest.accept(IngestDeps(journal, archive, NullWaker(), Settings()), request)


class Recording:
    """A journal that remembers every argument it was given."""

    def __init__(self, inner: SqliteJournal) -> None:
        self.inner = inner
        self.seen: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            self.seen.append(repr((name, args, kwargs)))
            return attr(*args, **kwargs)

        return call


def test_a_token_is_stored_and_looked_up_only_as_its_hash(tmp_path: Path) -> None:
    journal = SqliteJournal(str(tmp_path / "j.db"))
    journal.migrate()
    _, token = new_account(journal, "alice")
    archive = LocalArchive(tmp_path / "archive")
    recording = Recording(journal)
    for form in ({"Authorization": f"Bearer {token}"}, {"X-API-Key": token}, {"api-key": token}):
        assert accept(recording, archive, form, steps_body(1, points=3)).status == 200
    assert accept(recording, archive, {"X-API-Key": token + "x"}, b"{}").status == 401
    digest = hashlib.sha256(token.encode()).hexdigest()
    assert tokens.hash_token(token) == digest
    # the journal was only ever given the hash
    lookups = [s for s in recording.seen if "account_by_token_hash" in s]
    assert len(lookups) == 4 and digest in lookups[0]
    assert not [s for s in recording.seen if token[3:] in s]
    journal.close()
    # and neither the database (with its WAL) nor the archive holds the token
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert token[3:].encode() not in stored
    assert digest.encode() in (tmp_path / "j.db").read_bytes()


def test_what_is_stored_on_disk_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    """Bodies and the journal hold health data: with a common umask (022) a new journal,
    its WAL, its folder and every archived body are private to the service's user."""
    old = os.umask(0o022)
    try:
        journal = SqliteJournal(str(tmp_path / "var" / "journal.db"))
        journal.migrate()
        _, token = new_account(journal, "alice")
        archive = LocalArchive(tmp_path / "var" / "archive")
        assert accept(journal, archive, {"X-API-Key": token}, b"{}").status == 200
        (key,) = archive.keys()
        modes = {
            path.name: stat.S_IMODE(path.stat().st_mode)
            for path in (
                tmp_path / "var",
                tmp_path / "var" / "journal.db",
                tmp_path / "var" / "journal.db-wal",
                tmp_path / "var" / "journal.db-shm",
                archive.root / key,
                (archive.root / key).parent,
                (archive.root / key).parent.parent,
            )
        }
        journal.close()
    finally:
        os.umask(old)
    assert {name: mode & 0o077 for name, mode in modes.items()} == dict.fromkeys(modes, 0)


def test_a_stored_hash_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(tokens.hmac, "compare_digest", spy)
    token = tokens.new_token()
    assert tokens.matches(token, tokens.hash_token(token))
    assert not tokens.matches(token + "x", tokens.hash_token(token))
    assert len(compared) == 2


def test_tokens_are_long_random_and_distinct() -> None:
    made = {tokens.new_token() for _ in range(1000)}
    assert len(made) == 1000
    assert all(t.startswith("hl_") and len(t) == 46 for t in made)  # 256 random bits


# --- one account's token against another's data ---------------------------------------------


def test_alices_token_writes_only_alices_rows(journal: SqliteJournal, phone: Phone) -> None:
    bob, bob_token = new_account(journal, "bob")
    alice = phone.account
    body = orjson.dumps({"account_id": bob.id, "data": {"metrics": []}})  # a claim in the body
    headers = {"Authorization": f"Bearer {phone.token}", "X-API-Key": bob_token}
    reply = accept(journal, phone.archive, headers, body)
    assert reply.status == 200
    assert set(json.loads(reply.body)) == {"id", "received_at", "status"}  # nothing else told
    (delivery,) = journal.deliveries()
    assert delivery.account_id == alice.id  # the Authorization header wins, the body is data
    assert delivery.archive_key.startswith(alice.id + "/")
    assert journal.deliveries(account_id=bob.id) == []


def test_reconcile_never_journals_a_body_under_an_account_it_does_not_know(
    journal: SqliteJournal, phone: Phone
) -> None:
    planted = body_key("not-an-account", ids.new_delivery_id(ids.now()), "application/json")
    phone.archive.put(planted, b"{}")
    report = reconcile(journal, phone.archive)
    assert (report.skipped, report.journalled) == (1, 0)
    assert journal.deliveries() == []


@pytest.fixture
def two_accounts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[SqliteJournal, Phone, Phone]]:
    """Alice and Bob, two deliveries each, folded; the CLI pointed at their journal."""
    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", f"sqlite:///{tmp_path}/journal.db")
    monkeypatch.setenv("HEALTHLOG_ARCHIVE_URL", f"file://{tmp_path}/archive")
    monkeypatch.setenv("HEALTHLOG_LOG_LEVEL", "WARNING")
    journal = SqliteJournal(str(tmp_path / "journal.db"))
    journal.migrate()
    archive = LocalArchive(tmp_path / "archive")
    phones = []
    for name in ("alice", "bob"):
        account, token = new_account(journal, name)
        phones.append(Phone(journal, archive, account, token))
    alice, bob = phones
    for n, phone in enumerate(phones):
        phone.send(steps_body(10 + n, points=3, source=phone.account.name))
        phone.send(steps_body(20 + n, points=2, start_minute=100, source=phone.account.name))
    FoldPass(journal, Player(journal, archive)).pass_once()
    yield journal, alice, bob
    journal.close()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert cli.main(list(argv)) == 0
    out = capsys.readouterr().out
    return json.loads(out) if "--json" in argv else out


def test_status_with_a_token_counts_only_that_accounts_data(
    two_accounts: tuple[SqliteJournal, Phone, Phone], capsys: pytest.CaptureFixture[str]
) -> None:
    _, alice, _ = two_accounts
    everyone = run(capsys, "status", "--json")
    mine = run(capsys, "status", "--token", alice.token, "--json")
    assert everyone["counts"]["parsed"] == 4 and everyone["points"] == 10
    assert mine["counts"]["parsed"] == 2 and mine["points"] == 5
    assert mine == run(capsys, "status", "--account", "alice", "--json")


def test_deliveries_with_a_token_lists_only_that_accounts_deliveries(
    two_accounts: tuple[SqliteJournal, Phone, Phone], capsys: pytest.CaptureFixture[str]
) -> None:
    _, alice, bob = two_accounts
    mine = run(capsys, "deliveries", "--token", alice.token, "--json")
    assert {d["account_id"] for d in mine} == {alice.account.id}
    assert len(mine) == 2
    theirs = run(capsys, "deliveries", "--token", bob.token, "--json")
    assert {d["id"] for d in mine}.isdisjoint({d["id"] for d in theirs})


def test_export_with_a_token_writes_only_that_accounts_points(
    two_accounts: tuple[SqliteJournal, Phone, Phone], capsys: pytest.CaptureFixture[str]
) -> None:
    _, alice, bob = two_accounts
    lines = run(capsys, "export", "--format", "jsonl", "--token", alice.token).splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == 5
    assert {r["account_id"] for r in rows} == {alice.account.id}
    assert {r["source"] for r in rows} == {"alice"}
    assert "bob" not in "\n".join(lines) and bob.account.id not in "\n".join(lines)


def test_replay_with_a_token_refolds_only_that_accounts_deliveries(
    two_accounts: tuple[SqliteJournal, Phone, Phone], capsys: pytest.CaptureFixture[str]
) -> None:
    journal, alice, bob = two_accounts
    bobs_before = journal.deliveries(account_id=bob.account.id)
    bobs_showcase = journal.fingerprint(bob.account.id)
    report = run(capsys, "replay", "--all", "--token", alice.token, "--json")
    assert (report["selected"], report["parsed"]) == (2, 2)
    assert journal.deliveries(account_id=bob.account.id) == bobs_before  # not even folded_at
    assert journal.fingerprint(bob.account.id) == bobs_showcase
    alices = journal.deliveries(account_id=alice.account.id)
    assert all(d.folded_at and d.folded_at > bobs_before[-1].folded_at for d in alices)  # type: ignore[operator]


def test_an_unknown_token_is_a_clear_error_that_does_not_repeat_it(
    two_accounts: tuple[SqliteJournal, Phone, Phone], capsys: pytest.CaptureFixture[str]
) -> None:
    guess = tokens.new_token()
    for command in (["status"], ["deliveries"], ["export"], ["replay", "--all"]):
        assert cli.main([*command, "--token", guess]) == 2
        captured = capsys.readouterr()
        assert "no account has this token" in captured.err
        assert guess not in captured.err + captured.out


def test_a_token_can_be_given_on_stdin_out_of_the_process_list(
    two_accounts: tuple[SqliteJournal, Phone, Phone],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, alice, _ = two_accounts
    monkeypatch.setattr(sys, "stdin", io.StringIO(alice.token + "\n"))
    mine = run(capsys, "deliveries", "--token", "-", "--json")
    assert {d["account_id"] for d in mine} == {alice.account.id}


def test_account_and_token_cannot_be_given_together(
    two_accounts: tuple[SqliteJournal, Phone, Phone], capsys: pytest.CaptureFixture[str]
) -> None:
    _, alice, _ = two_accounts
    assert cli.main(["status", "--account", "bob", "--token", alice.token]) == 2
    err = capsys.readouterr().err
    assert "--account or --token, not both" in err and alice.token not in err


# --- nothing from a request in any log line, at DEBUG -----------------------------------------

SOURCES = ("Ocelot-Source-5521", "Quokka’s Apple Watch 7731")
VALUES = (86420.135792, 97531.246813, 31415.926535)
DATES = ("2019-02-03 04:05:06 +0200", "2019-02-03 04:06:06 +0200", "2019-02-03 04:07:06 +0200")
HEADERS = {
    "automation-name": "Automation-Pangolin-Secret",
    "automation-id": "5E1F0C9A-7D3B-4A2E-9C81-6B0D2F4E8A17",
    "automation-aggregation": "Aggregation-Ibis-Secret",
    "automation-period": "Period-Tapir-Secret",
    "session-id": "Session-Axolotl-Secret",
    "x-custom": "Custom-Gecko-Secret",
}
HUGE = "Huge-Marmot-Header-" * 32_000  # about 600 KB
WORKOUT = "Narwhal Interval Secret"
REJECTED = ("Rejected-Lemur-Body", "Rejected-Okapi-Body", "Failed-Civet-Body")


def secret_body() -> bytes:
    points = [
        {"date": date, "qty": value, "source": source}
        for date, value, source in zip(DATES, VALUES, SOURCES * 2, strict=False)
    ]
    hr = [{"date": DATES[0], "Min": 61.5151, "Avg": 72.7272, "Max": 93.9393, "source": SOURCES[1]}]
    workouts = [{"name": WORKOUT, "start": DATES[0], "end": DATES[1], "location": "Outdoor"}]
    return orjson.dumps(
        {
            "data": {
                "metrics": [
                    {"name": "step_count", "units": "count", "data": points},
                    {"name": "heart_rate", "units": "count/min", "data": hr},
                ],
                "workouts": workouts,
            }
        }
    )


def test_no_log_line_at_debug_carries_anything_from_a_request(tmp_path: Path) -> None:
    journal = SqliteJournal(str(tmp_path / "journal.db"))
    journal.migrate()
    _, alice = new_account(journal, "alice")
    _, bob = new_account(journal, "bob")
    journal.close()
    wrong = "hl_Wrong-Token-Yak-000000000000000000000000000"
    env = {
        "HEALTHLOG_JOURNAL_URL": f"sqlite:///{tmp_path}/journal.db",
        "HEALTHLOG_ARCHIVE_URL": f"file://{tmp_path}/archive",
        "HEALTHLOG_LOG_LEVEL": "DEBUG",
    }
    body = secret_body()
    with function_server("fold", env, log_dir=tmp_path) as fold:
        ingest_env = {**env, "HEALTHLOG_FOLD_URL": fold.url}
        with function_server("ingest", ingest_env, log_dir=tmp_path) as server:

            def post(token: str, data: bytes, **extra: str) -> int:
                headers = {"Authorization": f"Bearer {token}", **HEADERS, **extra}
                reply = requests.post(server.url, data=data, headers=headers, timeout=30)
                return reply.status_code

            assert post(alice, body) == 200
            assert post(bob, body, **{"automation-name": HUGE}) == 200
            assert post(alice, gzip.compress(body), **{"Content-Encoding": "gzip"}) == 200
            assert post(wrong, body) == 401
            assert post(alice, f'["{REJECTED[0]}"]'.encode()) == 400
            assert post(alice, f'{{"{REJECTED[1]}": "\xff"}}'.encode("latin-1")) == 400
            assert post(alice, f'{{"{REJECTED[2]}": NaN}}'.encode()) == 200  # folds to failed
            assert post(alice, body, **{"Content-Encoding": REJECTED[0]}) == 415
            # a pass after every wake-up's: everything accepted is folded by now
            assert requests.post(fold.url + "?wait=1", timeout=60).status_code == 200
            logs = server.output() + fold.output()
    journal = SqliteJournal(str(tmp_path / "journal.db"))
    counts = journal.summary().counts
    journal.close()
    assert (counts["pending"], counts["failed"], counts["partial"] + counts["parsed"]) == (0, 1, 3)

    cli_env = clean_env(env)
    for command in (
        ["status", "--json"],
        ["deliveries", "--json"],
        ["export", "--output", str(tmp_path / "export.csv")],
        ["replay", "--all", "--json"],
        ["replay", "--all", "--token", alice],
        ["reconcile"],
        ["fold"],
    ):
        done = subprocess.run(
            [str(BIN / "healthlog"), *command],
            cwd=tmp_path,
            env=cli_env,
            capture_output=True,
            timeout=60,
            check=True,
        )
        logs += done.stderr.decode(errors="replace")

    assert "ingest.request" in logs and "delivery.folded" in logs and "fold.pass" in logs
    # the values did go all the way (the showcase has them): the scan below can see a leak
    exported = (tmp_path / "export.csv").read_text()
    assert all(s in exported for s in (*SOURCES, *(str(v) for v in VALUES)))
    secrets = [
        alice[3:],
        bob[3:],
        wrong[3:],
        tokens.hash_token(alice),
        *SOURCES,
        "Ocelot",
        "Quokka",
        *(str(v)[:8] for v in VALUES),
        "61.5151",
        "72.7272",
        "93.9393",
        *DATES,
        "2019-02-03",
        WORKOUT,
        "Narwhal",
        *(v[:16] for v in HEADERS.values()),
        HUGE[:16],
        *REJECTED,
    ]
    leaked = [s for s in secrets if s in logs]
    assert not leaked, f"log lines carry {leaked}"
    for line in logs.splitlines():
        if line.startswith("{"):
            json.loads(line)  # every structured line is one JSON object


# --- where the servers listen --------------------------------------------------------------


def listening_addresses(port: int) -> set[str]:
    """The local addresses with a socket listening on ``port`` (Linux /proc/net/tcp*)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as f:
            next(f)
            for line in f:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.split(":")
                if state == "0A" and int(hex_port, 16) == port:
                    found.add(address)
    return found


LOOPBACK = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's /proc/net/tcp")
def test_the_local_stack_binds_only_127_0_0_1_by_default(tmp_path: Path) -> None:
    port, fold_port, dashboard_port = free_port(), free_port(), free_port()
    env = clean_env()
    with open(tmp_path / "out.log", "wb") as out:
        process = subprocess.Popen(
            [str(BIN / "healthlog"), "serve", "--port", str(port), "--fold-port",
             str(fold_port), "--tick", "3600", "--dashboard-port", str(dashboard_port)],
            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        ports = (port, fold_port, dashboard_port)
        while not all(listening_addresses(p) for p in ports):
            assert process.poll() is None, (tmp_path / "out.log").read_text()
            assert time.monotonic() < deadline, "the stack did not listen"
            time.sleep(0.05)
        assert listening_addresses(port) == {LOOPBACK}
        assert listening_addresses(fold_port) == {LOOPBACK}
        assert listening_addresses(dashboard_port) == {LOOPBACK}
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's /proc/net/tcp")
def test_a_function_server_binds_only_127_0_0_1_unless_told(tmp_path: Path) -> None:
    port = free_port()
    source = ROOT / "functions" / "fold" / "main.py"
    env = clean_env({"HEALTHLOG_JOURNAL_URL": f"sqlite:///{tmp_path}/j.db"})
    process = subprocess.Popen(
        [sys.executable, "-m", "healthlog.local.server", "--target", "fold",
         "--source", str(source), "--port", str(port)],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not listening_addresses(port):
            assert process.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert listening_addresses(port) == {LOOPBACK}
    finally:
        process.terminate()
        process.wait(timeout=30)
