"""Serve one function: functions-framework's app under waitress, with limits fit for HAE.

``python -m healthlog.local.server --target ingest --source functions/ingest/main.py``
builds the same app as ``functions-framework --target ... --source ...``
(``functions_framework.create_app``) and serves it with waitress instead of
functions-framework's gunicorn (docs/operations.md, "The HTTP server", says why):

* waitress's one I/O thread reads every connection without blocking and hands a
  request to a worker thread only once it is whole (a large body spooled to a
  temporary file), so a slow or idle client costs a connection, never a worker thread;
* a connection that sends nothing for ``HEALTHLOG_CLIENT_IDLE_TIMEOUT_S`` (in its
  headers, its body or between requests) is closed: an inactivity timeout, so the
  phone's tens of MB on a slow link pass as long as they keep moving;
* up to ``CONNECTION_LIMIT`` connections at once (waitress's default, 100, would let
  a hundred idle sockets stop new ones from being accepted);
* ``MAX_HEADER_BYTES``: HAE sends headers such as ``automation-name`` whose value the
  user types; a 600 KB value gets in and is cut by ingest (docs/hae-format.md,
  "Headers"); past that the server answers 431;
* the body limit is ``HEALTHLOG_MAX_BODY_BYTES`` plus ``BODY_MARGIN_BYTES``: a body a
  little over the limit reaches ingest, which answers its own 413 ("turn on Batch
  Requests"); one far over it by its ``Content-Length`` gets waitress's 413 before it
  is sent, and nothing larger is ever spooled;
* SIGTERM or SIGINT: stop listening, finish the requests in hand (within
  ``GRACEFUL_TIMEOUT_S``: the fold's pass budget, ``HEALTHLOG_PASS_BUDGET_S``, is
  shorter) and send their replies, close the rest, exit 0;
* waitress's own log lines are JSON lines like healthlog's (``healthlog.log``);
* ``--ready-fd N``: once the socket is bound, one line is written to that descriptor
  and it is closed, so the process that started this one knows that this server, and
  not another process, listens on the port (``healthlog.local.launcher``).
"""

from __future__ import annotations

import argparse
import errno
import logging
import math
import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from healthlog import log
from healthlog.config import Settings

logger = logging.getLogger("healthlog.localserver")

if TYPE_CHECKING:
    from waitress.channel import HTTPChannel
    from waitress.server import BaseWSGIServer
    from waitress.wasyncore import _SocketMap

#: the largest request head accepted; ingest truncates values long before they are kept
MAX_HEADER_BYTES = 1024 * 1024
#: how far past HEALTHLOG_MAX_BODY_BYTES a body may go and still get ingest's own 413
BODY_MARGIN_BYTES = 1024 * 1024
#: connections held at once; more wait in the listen backlog until some close
CONNECTION_LIMIT = 1000
#: worker threads (what functions-framework's gunicorn ran here: 4 per core, 2 cores)
THREADS = 8
GRACEFUL_TIMEOUT_S = 30
#: the I/O loop wakes at least this often (to see a stop, to close idle connections)
LOOP_S = 1.0
#: how often idle connections are looked for, at most (waitress's default)
CLEANUP_INTERVAL_S = 30


def adjustments(settings: Settings) -> dict[str, Any]:
    """waitress's settings for ``settings`` (host and port aside)."""
    timeout = settings.client_idle_timeout_s
    return {
        "threads": THREADS,
        "connection_limit": CONNECTION_LIMIT,
        "channel_timeout": timeout,
        # look for idle connections often enough that one closes within about 1.5x its
        # timeout; waitress counts whole seconds
        "cleanup_interval": max(1, min(CLEANUP_INTERVAL_S, timeout // 2)),
        "max_request_header_size": MAX_HEADER_BYTES,
        "max_request_body_size": settings.max_body_bytes + BODY_MARGIN_BYTES,
        # poll(2), not select(2): select cannot watch descriptors past 1024
        "asyncore_use_poll": True,
    }


def serve(server: BaseWSGIServer, socket_map: _SocketMap, grace_s: float) -> None:
    """Run ``server``'s I/O loop until SIGTERM or SIGINT, then stop gracefully."""
    from waitress import wasyncore

    stopping = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not stopping.is_set():
        wasyncore.loop(timeout=LOOP_S, map=socket_map, use_poll=True, count=1)
    # stop listening (new connections are refused), keep the trigger that wakes the
    # loop when a worker thread has a reply to send
    wasyncore.dispatcher.close(server)
    channels: dict[int, HTTPChannel] = server.active_channels  # type: ignore[assignment]
    deadline = time.monotonic() + grace_s
    while channels and time.monotonic() < deadline:
        for channel in list(channels.values()):
            if not channel.requests and not channel.total_outbufs_len:
                channel.will_close = True  # nothing in hand, nothing left to send
        wasyncore.loop(timeout=0.1, map=socket_map, use_poll=True, count=1)
    server.task_dispatcher.shutdown(timeout=max(0, math.ceil(deadline - time.monotonic())))
    wasyncore.close_all(socket_map)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m healthlog.local.server")
    parser.add_argument("--target", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--ready-fd", type=int, help="write a line here once listening")
    args = parser.parse_args(argv)

    from functions_framework import create_app
    from waitress.server import BaseWSGIServer, create_server

    settings = Settings.from_env()
    log.setup(settings.log_level, name="waitress")
    log.setup(settings.log_level)
    app = create_app(args.target, args.source, "http")  # type: ignore[no-untyped-call]
    socket_map: _SocketMap = {}
    try:
        server = create_server(
            app, map=socket_map, host=args.host, port=args.port, **adjustments(settings)
        )
    except OSError as exc:  # the port is taken, or the address is not this machine's
        log.event(logger, logging.ERROR, "localserver.bind_failed", port=args.port,
                  error=errno.errorcode.get(exc.errno or 0, type(exc).__name__))  # fmt: skip
        raise SystemExit(1) from None
    assert isinstance(server, BaseWSGIServer)  # one address: one listening socket
    if args.ready_fd is not None:
        os.write(args.ready_fd, b"listening\n")
        os.close(args.ready_fd)
    serve(server, socket_map, GRACEFUL_TIMEOUT_S)


if __name__ == "__main__":
    main()
