"""Ingest over real HTTP: functions-framework's app (waitress) on 127.0.0.1, SQLite, a folder.

One server serves the module; each test compares the journal and the archive before
and after its request. A reply means ``accept`` has finished, so "nothing stored" is
checked right after it; when the client hangs up and never reads a reply, the test
waits (bounded) on the server's log line, its sockets or the journal itself, never on a
sleep.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import logging
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests
from healthlog import tokens
from healthlog.archive.keys import body_key
from healthlog.archive.local import TMP_DIR, LocalArchive
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import Account, Delivery, ParseStatus

from tests.conftest import samples
from tests.integration.servers import ROOT, Server, function_server, ingest_rig, ports_of

EVENTS = ROOT / "tests" / "events"
LIMIT = 100_000
WAIT_S = 10.0


@dataclass
class Stack:
    server: Server
    journal: SqliteJournal
    archive: LocalArchive
    account: Account
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def state(self) -> tuple[set[str], set[str]]:
        """Every delivery id and every archived key, now."""
        return {d.id for d in self.journal.deliveries()}, set(self.archive.keys())

    def wait_for_delivery(self, body: bytes, known: set[str]) -> Delivery:
        """Wait (bounded) for a new row whose archived body is ``body``."""
        deadline = time.monotonic() + WAIT_S
        while True:
            for delivery in self.journal.deliveries():
                if delivery.id in known or delivery.size != len(body):
                    continue
                if self.archive.read(delivery.archive_key) == body:
                    return delivery
            if time.monotonic() > deadline:
                raise AssertionError(f"no delivery of these bytes within {WAIT_S:.0f} s")
            time.sleep(0.02)

    def raw_post(self, head: bytes, payload: bytes) -> None:
        """Send a request's head and ``payload``, then hang up without reading a reply."""
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=WAIT_S) as s:
            s.sendall(head + payload)

    def hang_up_half_way(self, head: bytes, payload: bytes) -> None:
        """Send a head and part of a body, hang up; return once the server let go of it.

        The server buffers a request whole before ingest sees it, so an unfinished one
        never reaches ingest: what shows that the server saw it and dropped it is its
        socket, held (bounded wait) and then closed (bounded wait).
        """
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=WAIT_S) as s:
            s.sendall(head + payload)
            ports = ports_of([s])
            self.server.wait_for_held(ports, lambda n: n == 1, timeout_s=WAIT_S)
        self.server.wait_for_held(ports, lambda n: n == 0, timeout_s=WAIT_S)

    def head(self, *, length: int | None) -> bytes:
        framing = (
            f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
        )
        return (
            f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{self.server.port}\r\n"
            f"Authorization: Bearer {self.token}\r\nContent-Type: application/json\r\n"
            f"{framing}\r\n\r\n"
        ).encode()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("ingest-http")
    with ingest_rig(
        folder, HEALTHLOG_MAX_BODY_BYTES=str(LIMIT), HEALTHLOG_RETRY_AFTER_S="9"
    ) as rig:
        yield Stack(rig.server, rig.journal, rig.archive, rig.account, rig.token)


def big_object(size: int) -> bytes:
    """A JSON object of exactly ``size`` bytes, unique to this call."""
    head = b'{"marker": "' + uuid.uuid4().hex.encode() + b'", "pad": "'
    return head + b"x" * (size - len(head) - 2) + b'"}'


# --- 200 -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", samples(), ids=lambda p: p.stem[:40])
def test_sample_body_is_archived_byte_for_byte(stack: Stack, path: Path) -> None:
    body = path.read_bytes()
    reply = requests.post(
        stack.server.url,
        data=body,
        headers={**stack.auth, "Content-Type": "application/json", "automation-name": "Daily"},
        timeout=WAIT_S,
    )
    assert reply.status_code == 200, reply.text
    assert reply.headers["Content-Type"] == "application/json"
    answer = reply.json()
    assert answer["status"] == "pending"
    delivery = stack.journal.get_delivery(answer["id"])
    assert delivery is not None
    assert delivery.status is ParseStatus.PENDING
    assert delivery.archive_key == body_key(stack.account.id, delivery.id, "application/json")
    assert delivery.headers == (("automation-name", "Daily"),)
    assert stack.archive.read(delivery.archive_key) == body


def test_chunked_upload_is_archived_byte_for_byte(stack: Stack) -> None:
    body = big_object(LIMIT)  # at the limit exactly, in pieces that cut characters

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(body), 7_777):
            yield body[start : start + 7_777]

    reply = requests.post(stack.server.url, data=pieces(), headers=stack.auth, timeout=WAIT_S)
    assert reply.status_code == 200, reply.text
    delivery = stack.journal.get_delivery(reply.json()["id"])
    assert delivery is not None and delivery.size == len(body)
    assert stack.archive.read(delivery.archive_key) == body


# --- rejections: a readable reply, nothing stored -----------------------------------------


@pytest.mark.parametrize(
    ("headers", "text"),
    [
        ({}, "has no access token"),
        ({"X-API-Key": "hl_not-a-known-token"}, "does not know this access token"),
    ],
    ids=["missing", "wrong"],
)
def test_no_or_wrong_token_is_401(stack: Stack, headers: dict[str, str], text: str) -> None:
    before = stack.state()
    reply = requests.post(stack.server.url, data=b"{}", headers=headers, timeout=WAIT_S)
    assert reply.status_code == 401
    assert text in reply.text
    assert reply.headers["Content-Type"].startswith("text/plain")
    assert stack.state() == before


def test_declared_length_over_the_limit_is_413(stack: Stack) -> None:
    before = stack.state()
    body = big_object(LIMIT * 3)
    reply = requests.post(stack.server.url, data=body, headers=stack.auth, timeout=WAIT_S)
    assert reply.status_code == 413
    assert "Batch Requests" in reply.text
    assert stack.state() == before


def test_chunked_body_over_the_limit_is_413(stack: Stack) -> None:
    before = stack.state()
    body = big_object(LIMIT + 1)
    pieces = (body[i : i + 10_000] for i in range(0, len(body), 10_000))
    reply = requests.post(stack.server.url, data=pieces, headers=stack.auth, timeout=WAIT_S)
    assert reply.status_code == 413
    assert "Batch Requests" in reply.text
    assert stack.state() == before


@pytest.mark.parametrize("body", [b"[1,2]", b"not json"], ids=["array", "not-json"])
def test_not_a_json_object_is_400(stack: Stack, body: bytes) -> None:
    before = stack.state()
    reply = requests.post(stack.server.url, data=body, headers=stack.auth, timeout=WAIT_S)
    assert reply.status_code == 400
    assert "must be a JSON object" in reply.text
    assert stack.state() == before


# --- clients that hang up ---------------------------------------------------------------


def test_client_hanging_up_after_the_whole_body_still_gets_it_journalled(stack: Stack) -> None:
    """The phone closes the connection before the reply: the row and the body are there."""
    known, _ = stack.state()
    body = big_object(LIMIT - 10)
    stack.raw_post(stack.head(length=len(body)), body)
    delivery = stack.wait_for_delivery(body, known)
    assert delivery.status is ParseStatus.PENDING


def test_client_hanging_up_half_way_leaves_nothing(stack: Stack) -> None:
    before = stack.state()
    body = big_object(LIMIT - 10)
    stack.hang_up_half_way(stack.head(length=len(body)), body[: len(body) // 2])
    assert stack.state() == before
    assert list((stack.archive.root / TMP_DIR).iterdir()) == []  # no temp file left


def test_chunked_client_hanging_up_half_way_leaves_nothing(stack: Stack) -> None:
    before = stack.state()
    piece = b"{" + b" " * 9_999
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(3))
    stack.hang_up_half_way(stack.head(length=None), chunks)
    assert stack.state() == before


# --- the limits of the server in front of us -------------------------------------------------


def test_huge_automation_name_header_over_http(stack: Stack) -> None:
    headers = {**stack.auth, "automation-name": "n" * 600_000}
    reply = requests.post(stack.server.url, data=b"{}", headers=headers, timeout=WAIT_S)
    assert reply.status_code == 200


def test_unavailable_archive_is_503_with_retry_after(tmp_path: Path) -> None:
    journal = SqliteJournal(str(tmp_path / "j.db"))
    journal.migrate()
    token = tokens.new_token()
    journal.add_account("alice", tokens.hash_token(token))
    (tmp_path / "not-a-folder").write_text("a file where the archive should be")
    env = {
        "HEALTHLOG_JOURNAL_URL": f"sqlite:///{tmp_path}/j.db",
        "HEALTHLOG_ARCHIVE_URL": f"file://{tmp_path}/not-a-folder/archive",
        "HEALTHLOG_RETRY_AFTER_S": "11",
    }
    with function_server("ingest", env, log_dir=tmp_path) as server:
        reply = requests.post(server.url, data=b"{}", headers={"X-API-Key": token}, timeout=WAIT_S)
    assert reply.status_code == 503
    assert reply.headers["Retry-After"] == "11"
    assert "storage is not available" in reply.text
    assert journal.deliveries() == []
    journal.close()


# --- the same function behind a Lambda Function URL (payload 2.0) ---------------------------

EVENT_TOKEN = "hl_sample-event-token-not-a-real-secret-000000"


@pytest.fixture
def lambda_main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """functions/ingest/main.py imported in-process, as Lambda's cold start does."""
    journal = SqliteJournal(str(tmp_path / "j.db"))
    journal.migrate()
    journal.add_account("alice", tokens.hash_token(EVENT_TOKEN))
    journal.close()
    monkeypatch.setenv("HEALTHLOG_JOURNAL_URL", f"sqlite:///{tmp_path}/j.db")
    monkeypatch.setenv("HEALTHLOG_ARCHIVE_URL", f"file://{tmp_path}/archive")
    healthlog_logger = logging.getLogger("healthlog")
    saved = (list(healthlog_logger.handlers), healthlog_logger.level)
    spec = importlib.util.spec_from_file_location(
        "ingest_main_under_test", ROOT / "functions" / "ingest" / "main.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    module.deps().journal.close()
    healthlog_logger.handlers[:], healthlog_logger.level = saved


def function_url_event() -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / "function_url_v2.json").read_text())
    return event


@pytest.mark.parametrize("encoded", [False, True], ids=["text", "base64"])
def test_lambda_function_url_event_is_accepted(
    lambda_main: ModuleType, tmp_path: Path, encoded: bool
) -> None:
    event = function_url_event()
    body = event["body"].encode()
    if encoded:
        event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode(), True
    result = lambda_main.handler(event, None)
    assert result["statusCode"] == 200, result["body"]
    assert result["headers"]["Content-Type"] == "application/json"
    answer = json.loads(result["body"])
    delivery = lambda_main.deps().journal.get_delivery(answer["id"])
    assert delivery is not None
    assert ("automation-name", "Steps to healthlog") in delivery.headers
    assert LocalArchive(tmp_path / "archive").read(delivery.archive_key) == body


def test_lambda_event_without_token_is_401(lambda_main: ModuleType) -> None:
    event = function_url_event()
    del event["headers"]["authorization"]
    result = lambda_main.handler(event, None)
    assert result["statusCode"] == 401
    assert "Authorization" in result["body"]
    assert lambda_main.deps().journal.deliveries() == []
