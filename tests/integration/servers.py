"""Run one of our functions under functions-framework, as a real server, for a test.

    from tests.integration.servers import function_server

    with function_server("ingest", {"HEALTHLOG_JOURNAL_URL": ...}, log_dir=tmp_path) as srv:
        requests.post(srv.url, ...)
        srv.wait_for_log("ingest.request")  # bounded wait on what the server wrote

The server is started, awaited and stopped by ``healthlog.local.launcher`` (the command the
local stack runs: functions-framework's app and server on ``functions/<target>/main.py``),
here on 127.0.0.1 and a free port, in its own process group. Its environment is the
test process's without any ``HEALTHLOG_*`` variable, plus ``env``. Its stdout and
stderr go to a file, which ``wait_for_log`` reads.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
from healthlog import tokens
from healthlog.archive.local import LocalArchive
from healthlog.journal.sqlite import SqliteJournal
from healthlog.local import launcher
from healthlog.local.launcher import HOST, ROOT, START_TIMEOUT_S, STOP_GRACE_S
from healthlog.local.launcher import free_port as free_port  # the tests' one free_port
from healthlog.model import Account


class Server(launcher.FunctionServer):
    """A running function (``healthlog.local.launcher.FunctionServer``) that a test can watch."""

    def wait_for_log(self, text: str, *, count: int = 1, timeout_s: float = 10.0) -> str:
        """Wait (bounded) until ``text`` occurs ``count`` times in the output; return it."""
        deadline = time.monotonic() + timeout_s
        while True:
            out = self.output()
            if out.count(text) >= count:
                return out
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{text!r} did not appear {count}x in {timeout_s:.0f} s:\n{out[-4000:]}"
                )
            time.sleep(0.02)

    def open_sockets(self) -> int:
        """Sockets open in the server's process and its children (a forking server's)."""
        pid = self.process.pid
        pids = [pid]
        with contextlib.suppress(OSError):
            pids += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        count = 0
        for p in pids:
            with contextlib.suppress(OSError):
                for fd in os.scandir(f"/proc/{p}/fd"):
                    with contextlib.suppress(OSError):
                        count += os.readlink(fd.path).startswith("socket:")
        return count

    def held_from(self, ports: Collection[int]) -> int:
        """How many sockets the server holds whose far end is one of ``ports`` (a test's
        clients), whatever their state: no other socket of the server's (a probe's or a
        wake-up's still closing) is counted."""
        held = 0
        with contextlib.suppress(psutil.Error):
            server = psutil.Process(self.process.pid)
            for proc in (server, *server.children(recursive=True)):
                with contextlib.suppress(psutil.Error):
                    held += sum(
                        1
                        for c in proc.net_connections(kind="tcp")
                        if c.raddr and c.raddr.port in ports
                    )
        return held

    def wait_for_held(
        self, ports: Collection[int], ok: Callable[[int], bool], *, timeout_s: float = 15.0
    ) -> int:
        """Wait (bounded) until ``ok(held_from(ports))``; the count it was true of."""
        deadline = time.monotonic() + timeout_s
        while not ok(held := self.held_from(ports)):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"the server holds {held} sockets of {len(ports)} clients after"
                    f" {timeout_s:.0f} s"
                )
            time.sleep(0.02)
        return held


def ports_of(clients: Iterable[socket.socket]) -> list[int]:
    """The local ports of a test's client sockets (``Server.held_from``)."""
    return [c.getsockname()[1] for c in clients]


def start_function(
    target: str,
    env: Mapping[str, str],
    *,
    log_dir: Path | None = None,
    start_timeout_s: float = START_TIMEOUT_S,
) -> Server:
    """Start ``functions/<target>/main.py`` and return once it accepts connections."""
    folder = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="hl-srv-"))
    return Server.start(
        target,
        env=launcher.clean_env({"PYTHONUNBUFFERED": "1", **env}),
        cwd=ROOT,
        log_dir=folder,
        own_group=True,  # so that stop() can end its workers too
        timeout_s=start_timeout_s,
    )


@contextlib.contextmanager
def function_server(
    target: str,
    env: Mapping[str, str],
    *,
    log_dir: Path | None = None,
    start_timeout_s: float = START_TIMEOUT_S,
) -> Iterator[Server]:
    """``start_function`` as a context manager that stops the server on exit."""
    server = start_function(target, env, log_dir=log_dir, start_timeout_s=start_timeout_s)
    try:
        yield server
    finally:
        server.stop()


@dataclass
class IngestRig:
    """A real ingest server over a fresh SQLite journal holding one account."""

    server: Server
    journal: SqliteJournal
    archive: LocalArchive
    account: Account
    token: str


@contextlib.contextmanager
def ingest_rig(folder: Path, **env: str) -> Iterator[IngestRig]:
    """Journal + account ``alice`` + ingest served over them; ``env`` adds settings."""
    journal = SqliteJournal(str(folder / "j.db"))
    journal.migrate()
    token = tokens.new_token()
    account = journal.add_account("alice", tokens.hash_token(token))
    settings = {
        "HEALTHLOG_JOURNAL_URL": f"sqlite:///{folder}/j.db",
        "HEALTHLOG_ARCHIVE_URL": f"file://{folder}/archive",
        **env,
    }
    try:
        with function_server("ingest", settings, log_dir=folder) as server:
            yield IngestRig(server, journal, LocalArchive(folder / "archive"), account, token)
    finally:
        journal.close()


@contextlib.contextmanager
def local_http(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 and a free port in a thread; yield its base URL."""
    server = ThreadingHTTPServer((HOST, 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(STOP_GRACE_S)
