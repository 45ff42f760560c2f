"""Serve the dashboard: werkzeug's threaded server, quiet, stopped by SIGTERM or Ctrl-C.

Threaded, because a page fetches several ``/api`` endpoints at once and a chart
re-fetches on every zoom: on a single-threaded server one slow read (a body from S3, a
year of raw points) would hold up every other request of the page. The journal adapters
hand each thread its own connection, so threads are safe. werkzeug rather than
gunicorn: one process, no fork, the same on a laptop and in ``healthlog serve``, and
for one person's browser its thread per request is plenty.

werkzeug's own request log is off: its lines carry the URL with its query string (a
metric's name, a source, a date), and the dashboard logs only route patterns.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from flask import Flask
from werkzeug.serving import LISTEN_QUEUE, WSGIRequestHandler, make_server

from healthlog import log

logger = logging.getLogger("healthlog.dashboard")

DEFAULT_PORT = 8082


class QuietHandler(WSGIRequestHandler):
    """No request lines: they would carry URLs and their query strings."""

    def log(self, type: str, message: str, *args: Any) -> None:
        return


def serve(app: Flask, host: str, port: int, on_ready: Any = None) -> int:
    """Serve ``app`` on ``host:port`` until SIGTERM or SIGINT; 0 when stopped so.

    The socket is bound here (``launcher.listening_socket``), not by werkzeug, which
    prints its own "Address already in use" text and exits: PortTaken or
    HealthlogError if it cannot listen there, for the command to say in one line."""
    from healthlog.local import launcher

    with launcher.listening_socket(host, port, LISTEN_QUEUE) as bound:
        # werkzeug serves a duplicate of the descriptor: this one is closed at once
        server = make_server(
            host, port, app, threaded=True, request_handler=QuietHandler, fd=bound.fileno()
        )
    stopping = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        if not stopping.is_set():
            stopping.set()
            # shutdown() waits for serve_forever to return: not from its own thread
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.event(logger, logging.INFO, "dashboard.started", port=server.port)
    if on_ready is not None:
        on_ready(server.port)
    try:
        server.serve_forever()
    finally:
        server.server_close()
        log.event(logger, logging.INFO, "dashboard.stopped")
    return 0
