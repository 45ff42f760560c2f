"""The watch's notices (healthlog.ops.watch.Watcher) through apprise to real receivers the
tests start on loopback: an SMTP server (aiosmtpd) and an HTTP webhook (apprise's
``json://``). Sends are synchronous, so once ``run`` returns what was sent has arrived:
the receivers' queues are read with timeouts and then found empty, never slept on."""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from aiosmtpd.controller import Controller
from healthlog import ids, tokens
from healthlog.config import Settings
from healthlog.journal.sqlite import SqliteJournal
from healthlog.local import launcher
from healthlog.model import Account, NewDelivery, ParseStatus, Point
from healthlog.ops import watch

URL_SECRET = "hooksecretXYZ"
URL_PASSWORD = "pw-secretABC"
SOURCE = "Alice's Apple Watch"
BIN = Path(sys.executable).parent


class Mailbox:
    """What the SMTP server received: the messages, parsed."""

    def __init__(self) -> None:
        self.received: queue.Queue[Message] = queue.Queue()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.received.put(message_from_bytes(envelope.original_content))
        return "250 OK"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def smtp_server() -> Iterator[tuple[int, queue.Queue[Message]]]:
    mailbox = Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield controller.port, mailbox.received
    finally:
        controller.stop()


@contextlib.contextmanager
def webhook(port: int = 0) -> Iterator[tuple[int, queue.Queue[dict[str, Any]]]]:
    received: queue.Queue[dict[str, Any]] = queue.Queue()

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.put({"path": self.path, **json.loads(body)})
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port, received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def drain(box: queue.Queue[Any], expected: int) -> list[Any]:
    """The ``expected`` messages (waited for, 10 s at most), and then none more."""
    got = [box.get(timeout=10) for _ in range(expected)]
    assert box.empty(), f"more than {expected} messages"
    return got


def texts(mail: list[Message], hooks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(title, body) of each message, mail and webhook alike."""
    found = []
    for m in mail:
        plain = next(p for p in m.walk() if p.get_content_type() == "text/plain")
        found.append((str(m["Subject"]), plain.get_payload(decode=True).decode()))
    return found + [(h["title"], h["message"]) for h in hooks]


class Stack:
    """A SQLite journal with one account, its token, and deliveries as ingest makes them."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "journal.db"
        self.journal = SqliteJournal(str(self.path))
        self.journal.migrate()
        self.token = tokens.new_token()
        self.account: Account = self.journal.add_account(
            "alice", tokens.hash_token(self.token), created_at=ids.now() - timedelta(minutes=3)
        )

    def reopened(self) -> SqliteJournal:
        """A restart: another journal object over the same file."""
        self.journal.close()
        self.journal = SqliteJournal(str(self.path))
        return self.journal

    def deliver(self, status: ParseStatus = ParseStatus.PARSED, failure: str | None = None) -> None:
        at = ids.now()
        delivery_id = ids.new_delivery_id(at)
        new = NewDelivery(delivery_id, self.account.id, at, f"x/{delivery_id}.json", 10,
                          "application/json", ())  # fmt: skip
        assert self.journal.insert_delivery(new)
        point = Point("heart_rate", "avg", SOURCE, "2026-12-01T08:00:00.000000Z", qty=61.5,
                      utc_offset=60, end=None, text=None, unit="count/min", extra=None)  # fmt: skip
        self.journal.write_outcome(delivery_id, expected=ParseStatus.PENDING, status=status,
                                   uncovered=(), failure=failure,
                                   points=[point] if failure is None else [])  # fmt: skip


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    made = Stack(tmp_path)
    yield made
    made.journal.close()


def settings_for(stack: Stack, *urls: str) -> Settings:
    """A 2-minute "no delivery" rule; the rules that would hold by chance are off."""
    return Settings(
        journal_url=f"sqlite:///{stack.path}",
        watch_no_delivery_h=2 / 60,
        watch_silent_days=0,
        watch_disk_free_percent=0,
        notify_urls=", ".join(urls),
    )


def mail_url(port: int) -> str:
    return f"mailto://127.0.0.1:{port}?from=healthlog@example.org&to=me@example.org"


def hook_url(port: int) -> str:
    return f"json://watch:{URL_PASSWORD}@127.0.0.1:{port}/hooks/{URL_SECRET}"


def assert_clean(stack: Stack, *found: tuple[str, str]) -> None:
    """No health value, no source name, no token or URL secret in a message."""
    for title, body in found:
        for secret in ("61.5", SOURCE, "Watch", stack.token, URL_SECRET, URL_PASSWORD):
            assert secret not in title and secret not in body, (secret, title)


def assert_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    """No URL secret in healthlog's lines, or in apprise's (urllib3's DEBUG lines name the
    URLs it requests, as they do for any client; healthlog logs only its own loggers)."""
    mine = [r for r in caplog.records if r.name.split(".")[0] in ("healthlog", "apprise")]
    assert any(r.name == "healthlog.watch" for r in mine)
    for record in mine:
        line = record.getMessage() + repr(record.__dict__)
        assert URL_SECRET not in line and URL_PASSWORD not in line


@pytest.mark.slow
def test_one_notice_per_target_when_it_starts_one_when_it_recovers_none_twice(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="healthlog")  # whatever an earlier test set
    with smtp_server() as (smtp, mail), webhook() as (http, hooks):
        settings = settings_for(stack, mail_url(smtp), hook_url(http))

        report = watch.Watcher(stack.journal, settings).run()

        assert [f.rule for f in report.found] == ["no_delivery"]
        started = texts(drain(mail, 1), drain(hooks, 1))
        assert [t for t, _ in started] == ["healthlog no_delivery alice"] * 2
        assert "no delivery for 0.1 h (none since the account was made)" in started[0][1]
        assert "Manual Export" in started[0][1]
        assert_clean(stack, *started)

        # evaluating again, or after a restart, tells nothing again
        watch.Watcher(stack.journal, settings).run()
        watch.Watcher(stack.reopened(), settings).run()
        drain(mail, 0), drain(hooks, 0)

        stack.deliver()
        report = watch.Watcher(stack.journal, settings).run()
        assert report.found == []
        recovered = texts(drain(mail, 1), drain(hooks, 1))
        assert [t for t, _ in recovered] == ["healthlog no_delivery alice: recovered"] * 2
        assert_clean(stack, *recovered)
        watch.Watcher(stack.reopened(), settings).run()
        drain(mail, 0), drain(hooks, 0)
        assert stack.journal.watch_notices() == []
    assert_not_logged(caplog)


@pytest.mark.slow
def test_failed_deliveries_tell_once_per_class(stack: Stack) -> None:
    with smtp_server() as (smtp, mail), webhook() as (http, hooks):
        settings = settings_for(stack, mail_url(smtp), hook_url(http))
        for failure in ("unreadable", "unreadable", "deadline"):
            stack.deliver(ParseStatus.FAILED, failure)
        watch.Watcher(stack.journal, settings).run()
        told = texts(drain(mail, 2), drain(hooks, 2))
        assert sorted(t for t, _ in told) == sorted(
            ["healthlog failed deadline alice", "healthlog failed unreadable alice"] * 2
        )
        assert any("2 deliveries failed (unreadable)" in body for _, body in told)
        assert all("healthlog replay --status failed" in body for _, body in told)
        assert_clean(stack, *told)
        stack.deliver(ParseStatus.FAILED, "unreadable")  # one more of a class told
        watch.Watcher(stack.reopened(), settings).run()
        drain(mail, 0), drain(hooks, 0)


@pytest.mark.slow
def test_a_target_that_is_down_is_logged_and_told_at_the_next_evaluation(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="healthlog")
    down = free_port()  # nothing listens there yet
    with smtp_server() as (smtp, mail):
        settings = settings_for(stack, hook_url(down), mail_url(smtp))
        report = watch.Watcher(stack.journal, settings).run()

        assert [m.target.position for m in report.failed] == [1]
        assert [m.target.position for m in report.sent] == [2]
        drain(mail, 1)
        failed = [r for r in caplog.records if r.getMessage() == "watch.notify_failed"]
        assert len(failed) == 1 and getattr(failed[0], "target", "").startswith("#1 json (")
        assert_not_logged(caplog)

        with webhook(down) as (_, hooks):
            report = watch.Watcher(stack.reopened(), settings).run()
            assert [m.target.position for m in report.sent] == [1] and report.failed == []
            (hook,) = drain(hooks, 1)
            assert hook["title"] == "healthlog no_delivery alice"
            assert hook["path"] == f"/hooks/{URL_SECRET}"
        drain(mail, 0)


def test_a_dry_run_shows_what_would_be_sent_and_sends_and_records_nothing(
    stack: Stack,
) -> None:
    sent: list[str] = []

    def send(target: watch.Target, title: str, body: str) -> bool:
        sent.append(title)
        return True

    settings = settings_for(stack, "json://127.0.0.1:9/a", "ntfy://topic-secret")
    report = watch.Watcher(stack.journal, settings, send=send).run(dry_run=True)
    assert [(m.target.position, m.title) for m in report.sent] == [
        (1, "healthlog no_delivery alice"),
        (2, "healthlog no_delivery alice"),
    ]
    assert sent == [] and stack.journal.watch_notices() == []
    shown = report.text(dry_run=True) + json.dumps(report.as_dict())
    assert "would send to #2 ntfy (" in shown and "topic-secret" not in shown


@pytest.mark.slow
def test_serve_tells_a_target_when_deliveries_stop_and_when_one_comes(tmp_path: Path) -> None:
    """The local stack's watch: an account silent past its "no delivery" rule, one
    notice; a delivery posted to ingest, one "recovered"; a second target that is down
    all along is logged and stops nothing (once the rule stops holding there is nothing
    left to tell it); the stack stops cleanly."""
    folder = tmp_path / "home"
    (folder / "var").mkdir(parents=True)
    stack = Stack(folder / "var")  # var/journal.db, with its account three minutes old
    stack.journal.close()
    port = free_port()
    with webhook() as (http, hooks):
        env = launcher.clean_env({
            "HEALTHLOG_LOG_LEVEL": "INFO",
            "HEALTHLOG_JOURNAL_URL": f"sqlite:///{stack.path}",
            "HEALTHLOG_WATCH_NO_DELIVERY_H": str(2 / 60),
            "HEALTHLOG_WATCH_SILENT_DAYS": "0",
            "HEALTHLOG_NOTIFY_URLS": f"{hook_url(http)} {hook_url(free_port())}",
        })  # fmt: skip
        serve = subprocess.Popen(
            [str(BIN / "healthlog"), "serve", "--port", str(port), "--fold-port",
             str(free_port()), "--no-dashboard", "--tick", "0.5"],
            cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            (started,) = drain_within(hooks, 1, 60)
            assert started["title"] == "healthlog no_delivery alice"
            reply = requests.post(
                f"http://127.0.0.1:{port}/",
                json={"data": {"metrics": [{"name": "step_count", "units": "count", "data": [
                    {"date": "2026-12-01 08:00:00 +0100", "qty": 4321, "source": SOURCE}]}]}},
                headers={"Authorization": f"Bearer {stack.token}"},
                timeout=30,
            )  # fmt: skip
            assert reply.status_code == 200, reply.text
            (recovered,) = drain_within(hooks, 1, 60)
            assert recovered["title"] == "healthlog no_delivery alice: recovered"
            assert_clean(stack, (started["title"], started["message"]),
                         (recovered["title"], recovered["message"]))  # fmt: skip
        finally:
            serve.send_signal(signal.SIGTERM)
            out, err = serve.communicate(timeout=90)
        assert serve.returncode == 0, err
        assert URL_SECRET not in out + err and URL_PASSWORD not in out + err
        assert "watch.told" in err
        down = [line for line in err.splitlines() if '"watch.notify_failed"' in line]
        assert down and all('"#2 json (' in line for line in down), err
        assert hooks.empty()


def drain_within(box: queue.Queue[Any], expected: int, timeout_s: float) -> list[Any]:
    """The next ``expected`` messages, each waited for ``timeout_s`` at most."""
    return [box.get(timeout=timeout_s) for _ in range(expected)]
