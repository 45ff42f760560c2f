"""``GET /health`` on ingest over real HTTP, and ``healthlog serve`` on a taken port."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from healthlog.ingest import texts
from healthlog.local import launcher

from tests.integration.servers import free_port, start_function

BIN = Path(sys.executable).parent


def _ingest(folder: Path, archive: Path) -> launcher.FunctionServer:
    env = {
        "HEALTHLOG_JOURNAL_URL": f"sqlite:///{folder}/journal.db",
        "HEALTHLOG_ARCHIVE_URL": f"file://{archive}",
        "HEALTHLOG_LOG_LEVEL": "WARNING",
    }
    return start_function("ingest", env, log_dir=folder)


def test_health_is_200_without_a_token_when_journal_and_archive_answer(tmp_path: Path) -> None:
    server = _ingest(tmp_path, tmp_path / "archive")
    try:
        reply = requests.get(server.url + "health", timeout=10)
        assert reply.status_code == 200 and reply.json() == {"status": "ok"}
        assert reply.headers["Cache-Control"] == "no-store"
        head = requests.head(server.url + "health", timeout=10)
        assert head.status_code == 200 and head.content == b""
        assert requests.post(server.url + "health", timeout=10).status_code == 405
        # the rest of ingest is as it was: a GET elsewhere is 405, a POST needs a token
        assert requests.get(server.url, timeout=10).status_code == 405
        unknown = requests.post(server.url, data=b"{}", timeout=10,
                                headers={"Authorization": "Bearer hl_nope"})  # fmt: skip
        assert unknown.status_code == 401 and "healthlog account rotate" in unknown.text
    finally:
        server.stop()


def test_health_is_503_when_the_archive_does_not_answer(tmp_path: Path) -> None:
    unmounted = tmp_path / "mnt"  # an empty folder without the archive's marker
    unmounted.mkdir()
    server = _ingest(tmp_path, unmounted)
    try:
        reply = requests.get(server.url + "health", timeout=10)
        assert reply.status_code == 503
        assert reply.json() == {"status": "unavailable", "journal": "ok", "archive": "unavailable"}
        assert reply.headers["Retry-After"] == "30"
    finally:
        server.stop()
    assert "ingest.health" in server.output()


def test_the_not_an_object_reply_does_not_say_csv_is_refused() -> None:
    assert "not CSV" not in texts.NOT_OBJECT_TEXT and "JSON or CSV" in texts.NOT_OBJECT_TEXT


def _serve(folder: Path, *ports: int) -> subprocess.CompletedProcess[str]:
    port, fold_port, dashboard_port = ports
    return subprocess.run(
        [str(BIN / "healthlog"), "serve", "--port", str(port), "--fold-port", str(fold_port),
         "--dashboard-port", str(dashboard_port), "--tick", "3600"],
        cwd=folder, env=launcher.clean_env({"HEALTHLOG_LOG_LEVEL": "WARNING"}),
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip


def test_a_taken_port_is_one_line_naming_the_option_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as other:  # another program listening on the port
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = other.getsockname()[1]
        for ports, option in (
            ((taken, free_port(), free_port()), "--port N"),
            ((free_port(), taken, free_port()), "--fold-port N"),
        ):
            done = _serve(tmp_path, *ports)
            assert done.returncode == 1, done.stderr
            assert "taking deliveries" not in done.stdout
            assert "Traceback" not in done.stderr
            lines = done.stderr.strip().splitlines()
            assert lines == [
                f"healthlog: port {taken} on 127.0.0.1 is taken (another healthlog serve, or "
                f"another program, listens there): {option} picks another"
            ], done.stderr


def test_a_first_start_that_fails_keeps_the_first_token_and_rotate_removes_its_file(
    tmp_path: Path,
) -> None:
    """The first account's token is kept as soon as the account is made: a first start
    on a taken port leaves a token file that opens the account (before, the account was
    made and its token never shown). Rotating that account removes the file, whose token
    stops working; rotating another account leaves it."""
    from healthlog import tokens
    from healthlog.config import Settings
    from healthlog.ops import accounts, store

    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        done = _serve(tmp_path, other.getsockname()[1], free_port(), free_port())
    assert done.returncode == 1, done.stderr
    kept = tmp_path / "var" / "first-token"
    assert f"The first account's token is in {kept.relative_to(tmp_path)}" in done.stdout
    token = kept.read_text().strip()
    assert token not in done.stdout + done.stderr  # not a terminal: only the path is shown
    settings = Settings.from_env(
        {"HEALTHLOG_JOURNAL_URL": f"sqlite:///{tmp_path}/var/healthlog.db"}
    )
    with store.opened(settings, "write") as opened:
        found = opened.journal.account_by_token_hash(tokens.hash_token(token))
        assert found is not None and found.name == "default"
        accounts.add(opened.journal, "bob")

    def rotate(name: str, *also: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "healthlog"), "account", "rotate", name, *also], cwd=tmp_path,
            env=launcher.clean_env({}), capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip

    assert "removed" not in rotate("bob").stdout and kept.exists()
    rotated = rotate("default")
    assert f"(removed {kept.relative_to(tmp_path)}, which held the old one)" in rotated.stdout
    assert not kept.exists()
    # a second rotate has no file to remove, and says nothing of one
    again = rotate("default", "--json")
    assert "first_token_file_removed" not in json.loads(again.stdout)
    # with --json the removal is said too
    kept.write_text(json.loads(again.stdout)["token"] + "\n")
    told = json.loads(rotate("default", "--json").stdout)
    assert told["first_token_file_removed"] == str(kept.relative_to(tmp_path)) and not kept.exists()


def test_the_lambda_handler_answers_health_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", f"sqlite:///{tmp_path}/journal.db")
    monkeypatch.setenv("HEALTHLOG_ARCHIVE_URL", f"file://{tmp_path}/archive")
    spec = importlib.util.spec_from_file_location(
        "ingest_main_health", launcher.function_source("ingest")
    )
    assert spec is not None and spec.loader is not None
    main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(main)
    event = {"rawPath": "/health", "requestContext": {"http": {"method": "GET"}}}
    reply = main.handler(event, None)
    assert reply["statusCode"] == 200 and reply["body"] == '{"status": "ok"}'
