"""Slow and idle clients cost a connection, not a worker thread, and time out.

Against the ingest server as ``healthlog serve`` starts it (``healthlog.local.launcher``, real
HTTP on 127.0.0.1): 200 connections that send part of a request and then nothing must
not stop real deliveries; a connection that sends nothing for
``HEALTHLOG_CLIENT_IDLE_TIMEOUT_S`` is closed, wherever it is in its request; and a
large body sent slowly, in chunks with pauses shorter than that timeout, is still taken.

Every wait is bounded and on a condition: the server holding the idle connections (its
sockets whose far end is one of their ports, ``Server.held_from``), a reply, a socket's close
(``recv`` returning nothing). The pauses of the slow sender are the slow link it plays,
not a wait for the server.
"""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.integration.servers import IngestRig, ingest_rig, ports_of
from tests.reliability.conftest import Figures
from tests.reliability.harness import Attempt, post, steps_body

IDLE = 200
DELIVERIES = 20
#: how long a delivery may take while the idle connections are held
DELIVERY_TIMEOUT_S = 20.0
#: the short idle timeout the timeout tests configure
SHORT_TIMEOUT_S = 1
#: the server checks for idle connections at most every second, in a loop that wakes
#: at least every second: a close comes within the timeout plus about two seconds
CLOSE_SLACK_S = 4.0

#: the parts of a request an idle client may stop after
HALF_HEADERS = b"POST / HTTP/1.1\r\nX: a"
HALF_BODY = b'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n{"data": '


def connect(rig: IngestRig, first: bytes) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", rig.server.port), timeout=10)
    if first:
        conn.sendall(first)
    return conn


@pytest.fixture
def idle() -> Iterator[list[socket.socket]]:
    """The test's raw sockets, closed at its end whatever happens."""
    held: list[socket.socket] = []
    yield held
    for conn in held:
        conn.close()


def closed_after(conn: socket.socket, wait_s: float) -> float | None:
    """Seconds until the server closed ``conn`` (``recv`` gave nothing), None if not."""
    started = time.monotonic()
    conn.settimeout(wait_s)
    try:
        while conn.recv(65536):
            pass  # a reply to a partial request (none is expected) is read past
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def test_200_idle_connections_do_not_stop_20_deliveries(
    tmp_path: Path, idle: list[socket.socket], figures: Figures
) -> None:
    with ingest_rig(tmp_path) as rig:
        for i in range(IDLE):
            idle.append(connect(rig, HALF_HEADERS if i % 2 else HALF_BODY))
        ports = ports_of(idle)
        rig.server.wait_for_held(ports, lambda n: n == IDLE)
        held = rig.server.open_sockets()

        headers = {"Authorization": f"Bearer {rig.token}"}

        def deliver(i: int) -> Attempt:
            with requests.Session() as session:
                body = steps_body(float(i), points=50)
                return post(session, rig.server.url, i, body, headers, DELIVERY_TIMEOUT_S)

        started = time.monotonic()
        with ThreadPoolExecutor(DELIVERIES) as pool:
            attempts = list(pool.map(deliver, range(DELIVERIES)))
        took = time.monotonic() - started
        ok = sum(a.status == 200 for a in attempts)
        figures(
            idle_connections=IDLE,
            server_sockets=held,
            deliveries=DELIVERIES,
            answered_200=ok,
            seconds=round(took, 2),
        )
        assert ok == DELIVERIES, [a.error for a in attempts if a.status != 200][:3]
        assert rig.journal.count_pending() == DELIVERIES
        # the idle ones are held still (they cost a socket each, nothing else)
        assert rig.server.held_from(ports) == IDLE


@pytest.mark.parametrize(
    "first",
    [b"", HALF_HEADERS, HALF_BODY],
    ids=["nothing sent", "half the headers", "headers and part of the body"],
)
def test_an_idle_connection_is_closed_after_the_configured_timeout(
    tmp_path: Path, idle: list[socket.socket], first: bytes, figures: Figures
) -> None:
    with ingest_rig(tmp_path, HEALTHLOG_CLIENT_IDLE_TIMEOUT_S=str(SHORT_TIMEOUT_S)) as rig:
        idle.append(connect(rig, first))
        after = closed_after(idle[-1], SHORT_TIMEOUT_S + CLOSE_SLACK_S)
        assert after is not None, f"still open {SHORT_TIMEOUT_S + CLOSE_SLACK_S} s on"
        figures(timeout_s=SHORT_TIMEOUT_S, closed_after_s=round(after, 2))
        assert after >= SHORT_TIMEOUT_S * 0.9, f"closed after {after:.2f} s, before its timeout"
        # and the server takes the next delivery as ever
        reply = requests.post(
            rig.server.url,
            data=steps_body(1.0, points=5),
            headers={"Authorization": f"Bearer {rig.token}"},
            timeout=DELIVERY_TIMEOUT_S,
        )
        assert reply.status_code == 200


def test_a_30_mb_body_sent_slowly_in_chunks_is_taken(tmp_path: Path, figures: Figures) -> None:
    """Longer in all than the idle timeout, each pause shorter: progress keeps it open."""
    body = steps_body(7.0, points=400_000)
    assert len(body) >= 30_000_000
    chunk, pause_s = 512 * 1024, SHORT_TIMEOUT_S / 10
    with ingest_rig(tmp_path, HEALTHLOG_CLIENT_IDLE_TIMEOUT_S=str(SHORT_TIMEOUT_S)) as rig:
        conn = http.client.HTTPConnection("127.0.0.1", rig.server.port, timeout=60)
        try:
            started = time.monotonic()
            conn.putrequest("POST", "/")
            conn.putheader("Authorization", f"Bearer {rig.token}")
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(len(body)))
            conn.endheaders()
            for offset in range(0, len(body), chunk):
                conn.send(body[offset : offset + chunk])
                time.sleep(pause_s)  # the slow link: the server waits, not the test
            sent_s = time.monotonic() - started
            reply = conn.getresponse()
            answer = reply.read()
        finally:
            conn.close()
        figures(body_bytes=len(body), send_seconds=round(sent_s, 2), status=reply.status)
        assert sent_s > 3 * SHORT_TIMEOUT_S  # slower in all than the idle timeout
        assert reply.status == 200, answer[:300]
        (key,) = list(rig.archive.keys())
        assert rig.archive.read(key) == body


def test_sigterm_stops_the_server_at_once_whatever_idle_clients_hold(
    tmp_path: Path, idle: list[socket.socket]
) -> None:
    """Idle connections do not hold up a stop: closed, exit code 0, port refused."""
    with ingest_rig(tmp_path) as rig:
        for first in (b"", HALF_HEADERS, HALF_BODY):
            idle.append(connect(rig, first))
        rig.server.wait_for_held(ports_of(idle), lambda n: n == len(idle))
        started = time.monotonic()
        code = rig.server.stop()
        took = time.monotonic() - started
        assert code == 0
        assert took < CLOSE_SLACK_S, f"{took:.1f} s to stop"  # not the 60 s idle timeout
        for conn in idle:
            assert closed_after(conn, 1.0) is not None
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", rig.server.port), timeout=1).close()
