"""The "there is work" bit ingest sends the fold, without waiting and without failing.

The bit carries no data (the queue is the journal), so losing one costs nothing but
latency: the fold's schedule picks the delivery up on its next tick. That is why a
waker never blocks the request and never raises: ``wake()`` only sets a flag and, if
no sender is running, starts one on a daemon thread.

Coalescing: at most one send is in flight and at most one is queued behind it. A burst
of a hundred deliveries while a send is in flight becomes one more send, which is all
the fold needs (a pass folds everything pending, and the fold's own service goes round
again when woken during a pass).
"""

from __future__ import annotations

import http.client
import logging
import threading
import urllib.parse
from typing import TYPE_CHECKING, Any, Protocol

from healthlog import log
from healthlog.config import WAKE_HEADER

if TYPE_CHECKING:
    from mypy_boto3_lambda import LambdaClient

logger = logging.getLogger("healthlog.wake")

# short: the bit is delivered once the request is written; the reply does not matter
TIMEOUT_S = 2.0


class Waker(Protocol):
    def wake(self) -> None:
        """Send the bit in the background; never blocks, never raises."""

    def flush(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the sends started so far; True if none is left.

        Only the Lambda handler calls this: Lambda freezes the environment as soon as
        the handler returns, so a send still in flight would otherwise resume only at
        the next invocation.
        """


class WakeRejected(Exception):
    """The fold function answered the wake-up with an error status."""


class NullWaker:
    """No wake-up: the fold's schedule finds the work (the default)."""

    def wake(self) -> None:
        pass

    def flush(self, timeout_s: float) -> bool:
        return True


class _CoalescingWaker:
    """Runs ``_send`` on a daemon thread: one in flight, one queued, errors swallowed."""

    name = "wake"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queued = False
        self._running = False
        # the first failure in a row is a WARN; repeats are DEBUG until a send succeeds
        self._failing = False

    def wake(self) -> None:
        try:
            with self._lock:
                self._queued = True
                if self._running:
                    return  # the running sender sends once more when it is done
                self._running = True
            threading.Thread(target=self._run, name=f"healthlog-{self.name}", daemon=True).start()
        except Exception as exc:  # e.g. "can't start new thread": the tick heals it
            with self._lock:
                self._running = False
                self._idle.notify_all()
            self._report(exc)

    def flush(self, timeout_s: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: not self._running, timeout=timeout_s)

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._queued:
                    self._running = False
                    self._idle.notify_all()
                    return
                self._queued = False
            try:
                self._send()
            except Exception as exc:
                self._report(exc)
            else:
                if self._failing:
                    log.event(logger, logging.INFO, f"{self.name}.recovered")
                self._failing = False

    def _report(self, exc: Exception) -> None:
        # the type only: a message may carry a URL or an endpoint's reply
        level = logging.DEBUG if self._failing else logging.WARNING
        self._failing = True
        log.event(logger, level, f"{self.name}.failed", error=type(exc).__name__)

    def _send(self) -> None:
        raise NotImplementedError


class HttpWaker(_CoalescingWaker):
    """POSTs ``{}`` to the local fold function (the local stack's ``fold_url``)."""

    name = "wake.http"

    def __init__(self, url: str, *, secret: str = "", timeout_s: float = TIMEOUT_S) -> None:
        super().__init__()
        self._headers = {"Content-Type": "application/json"}
        if secret:
            self._headers[WAKE_HEADER] = secret
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("the fold URL must be http:// or https:// with a host")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._timeout_s = timeout_s

    def _send(self) -> None:
        conn_class = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = conn_class(self._host, self._port, timeout=self._timeout_s)
        try:
            conn.request("POST", self._path, body=b"{}", headers=self._headers)
            try:
                reply = conn.getresponse()
                reply.read()
            except TimeoutError:
                # the fold answers after its pass; the request was delivered, which is
                # all a wake-up needs, and the pass goes on without us
                log.event(logger, logging.DEBUG, f"{self.name}.sent_no_reply")
                return
            if reply.status >= 400:
                raise WakeRejected(f"the fold function answered {reply.status}")
        finally:
            conn.close()


class LambdaWaker(_CoalescingWaker):
    """Invokes the fold function asynchronously (``InvocationType="Event"``).

    The boto3 client is made on the sender thread at the first send, so neither the
    import of boto3 nor the client's setup is on the request's path.
    """

    name = "wake.lambda"

    def __init__(self, function_name: str, client: LambdaClient | Any | None = None) -> None:
        super().__init__()
        self._function_name = function_name
        self._client = client

    def _send(self) -> None:
        if self._client is None:
            import boto3
            from botocore.config import Config

            config = Config(
                connect_timeout=TIMEOUT_S, read_timeout=TIMEOUT_S, retries={"max_attempts": 2}
            )
            self._client = boto3.client("lambda", config=config)
        self._client.invoke(
            FunctionName=self._function_name,
            InvocationType="Event",
            Payload=b'{"source": "healthlog.ingest"}',
        )
