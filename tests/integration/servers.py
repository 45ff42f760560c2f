"""Run one of our functions under functions-framework, as a real server, for a test.

    from tests.integration.servers import function_server

    with function_server("ingest", {"HEALTHLOG_JOURNAL_URL": ...}, log_dir=tmp_path) as srv:
        requests.post(srv.url, ...)
        srv.wait_for_log("ingest.request")  # bounded wait on what the server wrote

The server is ``python -m healthlog.localserver --target <target> --source
functions/<target>/main.py`` (functions-framework's app and server, as the stack
runs it) on 127.0.0.1 and a free port, in its own process group.
Its environment is the test process's without any ``HEALTHLOG_*`` variable, plus
``env``. Its stdout and stderr go to a file (a pipe nobody reads would fill up and
stall the server). Start-up is a bounded poll of a TCP connect; stopping is SIGTERM,
then SIGKILL to the group after ``grace_s``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from healthlog import tokens
from healthlog.archive.local import LocalArchive
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import Account
from healthlog.serve import function_command

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
START_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
    return port


@dataclass
class Server:
    """A running function: where it listens, its process, and the file it logs to."""

    target: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def output(self) -> str:
        """Everything the server wrote to stdout and stderr so far."""
        return self.log_path.read_text(errors="replace")

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

    def stop(self, grace_s: float = STOP_GRACE_S) -> int:
        """SIGTERM, wait up to ``grace_s``, then SIGKILL the group; return the exit code.

        The group is the server and the workers it forked (it was started in a session
        of its own), so a server that will not stop takes no stray worker with it.
        """
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        return self.process.returncode


def start_function(
    target: str,
    env: Mapping[str, str],
    *,
    log_dir: Path | None = None,
    start_timeout_s: float = START_TIMEOUT_S,
) -> Server:
    """Start ``functions/<target>/main.py`` and return once it accepts connections."""
    port = free_port()
    folder = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="hl-srv-"))
    log_path = folder / f"{target}-{port}.log"
    # the same command the local stack runs (functions-framework's app and server)
    command = function_command(target, HOST, port)
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHLOG_")}
    child_env.update({"PYTHONUNBUFFERED": "1", **env})
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group, so stop() can end its workers too
        )
    server = Server(target, port, process, log_path)
    try:
        _wait_listening(server, start_timeout_s)
    except BaseException:
        server.stop(grace_s=1)
        raise
    return server


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


def _wait_listening(server: Server, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"{server.target} exited with {server.process.returncode} before it "
                f"listened:\n{server.output()[-4000:]}"
            )
        try:
            with socket.create_connection((HOST, server.port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{server.target} did not listen on {server.port} within {timeout_s:.0f} s:"
                    f"\n{server.output()[-4000:]}"
                ) from None
            time.sleep(0.05)


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
