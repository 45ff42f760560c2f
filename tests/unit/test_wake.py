"""The wake-up bit: never blocks ingest, never raises, coalesces bursts.

The HTTP tests use a real ``http.server`` on 127.0.0.1 whose handler holds each
request on an Event, so "wake() did not wait for the reply" is shown by ordering,
not by timing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.stub import Stubber
from healthlog.config import Settings
from healthlog.errors import ConfigError
from healthlog.ingest.wake import HttpWaker, LambdaWaker, NullWaker
from healthlog.local.launcher import free_port
from healthlog.ops import wiring

from tests.integration.servers import local_http

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

WAIT_S = 10.0  # an upper bound for things that happen at once; never a sleep


@dataclass
class FoldStub:
    """What the stand-in fold function saw, and the Event that holds its replies."""

    url: str
    status: int = 200
    bodies: list[bytes] = field(default_factory=list)
    received: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    release: threading.Event = field(default_factory=threading.Event)
    replied: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def fold() -> Iterator[FoldStub]:
    stub = FoldStub(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            stub.bodies.append(self.rfile.read(length))
            stub.received.release()
            stub.release.wait(WAIT_S)  # hold the request until the test lets go
            self.send_response(stub.status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            stub.replied.set()

        def log_message(self, format: str, *args: object) -> None:
            pass

    with local_http(Handler) as url:
        stub.url = url + "/"
        try:
            yield stub
        finally:
            stub.release.set()  # let a held request go before the server shuts down


def test_wake_returns_before_the_fold_answers(fold: FoldStub) -> None:
    waker = HttpWaker(fold.url)
    waker.wake()
    # wake() is back while the server still holds the request: it did not wait
    assert not fold.replied.is_set()
    assert fold.received.acquire(timeout=WAIT_S), "the fold never got the POST"
    assert not fold.replied.is_set()
    fold.release.set()
    assert waker.flush(WAIT_S)
    assert fold.bodies == [b"{}"]


def test_a_burst_while_a_send_is_in_flight_becomes_one_more_send(fold: FoldStub) -> None:
    waker = HttpWaker(fold.url)
    waker.wake()
    assert fold.received.acquire(timeout=WAIT_S)
    for _ in range(50):
        waker.wake()  # one send in flight: these coalesce into one queued send
    fold.release.set()
    assert waker.flush(WAIT_S)
    assert len(fold.bodies) == 2


def test_wakes_after_the_sender_went_idle_send_again(fold: FoldStub) -> None:
    fold.release.set()
    waker = HttpWaker(fold.url)
    waker.wake()
    assert waker.flush(WAIT_S)
    waker.wake()
    assert waker.flush(WAIT_S)
    assert len(fold.bodies) == 2


def test_unreachable_fold_raises_nothing_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    waker = HttpWaker(f"http://127.0.0.1:{free_port()}/")
    with caplog.at_level(logging.DEBUG, logger="healthlog.wake"):
        waker.wake()
        assert waker.flush(WAIT_S)
        waker.wake()
        assert waker.flush(WAIT_S)
    failed = [r for r in caplog.records if r.getMessage() == "wake.http.failed"]
    assert [r.levelno for r in failed] == [logging.WARNING, logging.DEBUG]
    assert failed[0].error == "ConnectionRefusedError"  # type: ignore[attr-defined]
    assert "127.0.0.1" not in caplog.text


def test_fold_that_answers_late_counts_as_woken(
    fold: FoldStub, caplog: pytest.LogCaptureFixture
) -> None:
    """The fold replies after its pass; the bit was delivered, the reply does not matter."""
    waker = HttpWaker(fold.url, timeout_s=0.2)
    with caplog.at_level(logging.DEBUG, logger="healthlog.wake"):
        waker.wake()
        assert fold.received.acquire(timeout=WAIT_S)
        assert waker.flush(WAIT_S)  # gave up on the reply, not on the wake-up
    assert not fold.replied.is_set()
    messages = [r.getMessage() for r in caplog.records]
    assert "wake.http.sent_no_reply" in messages
    assert "wake.http.failed" not in messages


def test_fold_answering_an_error_is_logged_not_raised(
    fold: FoldStub, caplog: pytest.LogCaptureFixture
) -> None:
    fold.status = 500
    fold.release.set()
    waker = HttpWaker(fold.url)
    with caplog.at_level(logging.DEBUG, logger="healthlog.wake"):
        waker.wake()
        assert waker.flush(WAIT_S)
    failed = [r for r in caplog.records if r.getMessage() == "wake.http.failed"]
    assert [r.error for r in failed] == ["WakeRejected"]  # type: ignore[attr-defined]


def test_http_waker_refuses_a_url_without_http_scheme() -> None:
    with pytest.raises(ValueError, match="http"):
        HttpWaker("ftp://127.0.0.1/")


def lambda_client() -> LambdaClient:
    return boto3.client(
        "lambda",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def test_lambda_waker_invokes_the_fold_asynchronously() -> None:
    client = lambda_client()
    with Stubber(client) as stub:
        stub.add_response(
            "invoke",
            {"StatusCode": 202},
            {
                "FunctionName": "healthlog-fold",
                "InvocationType": "Event",
                "Payload": b'{"source": "healthlog.ingest"}',
            },
        )
        waker = LambdaWaker("healthlog-fold", client=client)
        waker.wake()
        assert waker.flush(WAIT_S)
        stub.assert_no_pending_responses()


def test_lambda_waker_swallows_errors(caplog: pytest.LogCaptureFixture) -> None:
    client = lambda_client()
    with Stubber(client) as stub, caplog.at_level(logging.DEBUG, logger="healthlog.wake"):
        stub.add_client_error("invoke", "TooManyRequestsException", http_status_code=429)
        waker = LambdaWaker("healthlog-fold", client=client)
        waker.wake()
        assert waker.flush(WAIT_S)
    failed = [r for r in caplog.records if r.getMessage() == "wake.lambda.failed"]
    assert [r.error for r in failed] == ["TooManyRequestsException"]  # type: ignore[attr-defined]


def test_null_waker_does_nothing() -> None:
    waker = NullWaker()
    waker.wake()
    assert waker.flush(0)


# --- wiring picks the waker --------------------------------------------------------------


def test_function_name_means_lambda_fold_url_means_http_else_null() -> None:
    assert isinstance(wiring.make_waker(Settings(fold_function_name="f")), LambdaWaker)
    assert isinstance(wiring.make_waker(Settings(fold_url="http://127.0.0.1:8081/")), HttpWaker)
    assert isinstance(wiring.make_waker(Settings()), NullWaker)


def test_a_bad_fold_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="HEALTHLOG_FOLD_URL"):
        wiring.make_waker(Settings(fold_url="127.0.0.1:8081"))


def test_a_local_wake_up_carries_the_stacks_secret() -> None:
    """What the fold function checks: the header, with the secret, on the POST."""
    from http.server import BaseHTTPRequestHandler

    from healthlog.config import WAKE_HEADER
    from healthlog.ingest.wake import HttpWaker

    from tests.integration.servers import local_http

    seen: list[str | None] = []

    class Fold(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.headers.get(WAKE_HEADER))
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(202)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    with local_http(Fold) as url:
        waker = HttpWaker(url, secret="s3cret")
        waker.wake()
        assert waker.flush(10)
        plain = HttpWaker(url)
        plain.wake()
        assert plain.flush(10)

    assert seen == ["s3cret", None]
