"""Start a function server process, wait until it listens, stop it: the one launcher.

``healthlog serve`` (``local/stack.py``), the tests (``tests/integration/servers.py``)
and the benchmarks (``bench/_common.py``) all start their servers here, so all of them run the
same command, ``python -m healthlog.local.server`` (functions-framework's app under
waitress, with HAE's header limit, an idle timeout and a graceful-stop window), serving
``functions/<target>/main.py`` of this checkout or another source file:

    server = FunctionServer.start("ingest", env=clean_env({...}), log_dir=folder)
    ...  # server.url
    server.stop()

Start-up waits, bounded, for the server's own word that it listens: it is given the
write end of a pipe (``--ready-fd``) and writes one line to it once its socket is bound,
so a port that another process holds is never taken for this server's (a TCP connect
alone would reach the other one). Then a TCP connect confirms it. ``NotListening`` if
the process exits or does not listen in time, with the end of its output when that
goes to a file; ``PortTaken`` when the port was not free.
Stopping is SIGTERM, then SIGKILL after a grace period: to the process's whole group
when it was started in a group of its own (``own_group``: any process it forked goes
with it), else to the process alone. The standard library only: this module ships
in the Lambda layer with the rest of the package.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Self

HOST = "127.0.0.1"
#: the checkout: ``functions/<target>/main.py`` is served from here
ROOT = Path(__file__).resolve().parents[3]
START_TIMEOUT_S = 30.0
STOP_GRACE_S = 10.0
#: how much of a server's output a NotListening message quotes
_TAIL_CHARS = 4000


class NotListening(RuntimeError):
    """The server exited before it listened, or did not listen in time."""


class PortTaken(NotListening):
    """Another process listens on the port the server was to listen on."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(f"port {port} on {host} is taken by another process")
        self.host = host
        self.port = port


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def port_free(host: str, port: int) -> bool:
    """Whether ``port`` on ``host`` can be bound now (as waitress binds: SO_REUSEADDR)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def listening_socket(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A socket this process binds and listens on before a server is handed it, so a
    command announces its URL only once the port is its own.

    IPv6 for an address with a colon, dual-stack for ``::`` (IPv4 clients too, as a
    server binding it itself would take them); ``SO_REUSEADDR``, as the servers bind.
    PortTaken when another process listens there; HealthlogError naming ``--host`` for
    any other address it cannot listen on (one not of this machine, say).
    """
    from healthlog.errors import HealthlogError

    ipv6 = ":" in host
    try:
        every = ipv6 and ipaddress.ip_address(host.partition("%")[0]).is_unspecified
    except ValueError:
        every = False
    try:
        return socket.create_server(
            (host, port),
            family=socket.AF_INET6 if ipv6 else socket.AF_INET,
            backlog=backlog,
            dualstack_ipv6=every and socket.has_dualstack_ipv6(),
        )
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortTaken(host, port) from None
        # not create_server's text (it adds the address); a name that does not resolve
        # (gaierror) has a negative errno of its own
        if exc.errno is not None and exc.errno > 0:
            why = os.strerror(exc.errno)
        else:
            why = (exc.strerror or type(exc).__name__).split(" (while attempting", 1)[0]
        raise HealthlogError(f"--host {host}: cannot listen there ({why})") from None


def free_port(host: str = HOST) -> int:
    """A TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
    return port


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any ``HEALTHLOG_*`` variable, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHLOG_")}
    env.update(extra or {})
    return env


#: where a built wheel carries ``functions/<target>/main.py`` (setup.py copies them)
PACKAGED = Path(__file__).resolve().parents[1] / "_functions"


def function_source(target: str) -> Path:
    """``functions/<target>/main.py``: the installed wheel's copy, else the checkout's."""
    packaged = PACKAGED / target / "main.py"
    return packaged if packaged.is_file() else ROOT / "functions" / target / "main.py"


def function_command(
    target: str,
    host: str,
    port: int,
    source: Path | None = None,
    ready_fd: int | None = None,
) -> list[str]:
    """The command that serves ``target`` from ``source`` (default: the checkout's)."""
    ready = [] if ready_fd is None else ["--ready-fd", str(ready_fd)]
    return [
        sys.executable,
        "-m",
        "healthlog.local.server",
        "--target",
        target,
        "--source",
        str(source if source is not None else function_source(target)),
        "--host",
        host,
        "--port",
        str(port),
        *ready,
    ]


def wait_ready(
    process: subprocess.Popen[bytes], ready: int, port: int, timeout_s: float = START_TIMEOUT_S
) -> None:
    """Block until the server writes its line to the pipe ``ready`` (bounded); raise if not.

    An end of file without the line means the server exited first (its socket could
    not be bound, or it failed before). ``ready`` is closed here.
    """
    import select

    deadline = time.monotonic() + timeout_s
    got = b""
    try:
        while b"\n" not in got:
            left = deadline - time.monotonic()
            if left <= 0:
                raise NotListening(f"did not listen on {port} within {timeout_s:.0f} s")
            readable, _, _ = select.select([ready], [], [], left)
            if not readable:
                continue
            chunk = os.read(ready, 64)
            if not chunk:
                process.wait(timeout=5)
                raise NotListening(f"exited with {process.returncode} before it listened on {port}")
            got += chunk
    finally:
        os.close(ready)


def wait_listening(
    process: subprocess.Popen[bytes], host: str, port: int, timeout_s: float = START_TIMEOUT_S
) -> None:
    """Block until something accepts connections on ``port`` (bounded); raise if it died."""
    deadline = time.monotonic() + timeout_s
    probe = _reachable(host)
    while True:
        if process.poll() is not None:
            raise NotListening(f"exited with {process.returncode} before it listened on {port}")
        try:
            with socket.create_connection((probe, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise NotListening(f"did not listen on {port} within {timeout_s:.0f} s") from None
            time.sleep(0.05)


def stop(process: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> bool:
    """SIGTERM, wait up to ``grace_s``, then SIGKILL; True when it had to be killed."""
    if process.poll() is not None:
        return False
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
        return False
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        if os.getpgid(process.pid) == process.pid:  # a group of its own: its workers too
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    process.wait()
    return True


@dataclass
class FunctionServer:
    """A running function server: what it serves, where, its process, its output file."""

    target: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path | None = None
    host: str = HOST

    @classmethod
    def start(
        cls,
        target: str,
        *,
        port: int | None = None,
        host: str = HOST,
        source: Path | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        log_dir: Path | None = None,
        own_group: bool = False,
        timeout_s: float = START_TIMEOUT_S,
    ) -> Self:
        """Serve ``target`` and return once it accepts connections.

        ``port`` defaults to a free one. ``env`` is the whole environment (default: this
        process's). With ``log_dir``, stdout and stderr go to ``<target>-<port>.log``
        there (a pipe nobody reads would fill up and stall the server); without it they
        are this process's. ``own_group`` starts it in a session of its own: a Ctrl-C at
        the terminal then reaches only this process, and ``stop`` ends its workers too.
        On failure the process is stopped and ``NotListening`` raised.
        """
        port = free_port(host) if port is None else port
        if not port_free(host, port):
            raise PortTaken(host, port)
        log_path = log_dir / f"{target}-{port}.log" if log_dir is not None else None
        ready, ready_w = os.pipe()
        command = function_command(target, host, port, source, ready_fd=ready_w)
        with contextlib.ExitStack() as files:
            files.callback(os.close, ready_w)
            out = files.enter_context(log_path.open("wb")) if log_path is not None else None
            try:
                process = subprocess.Popen(
                    command,
                    cwd=cwd,
                    env=None if env is None else dict(env),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT if out is not None else None,
                    start_new_session=own_group,
                    pass_fds=(ready_w,),
                )
            except BaseException:
                os.close(ready)
                raise
        server = cls(target, port, process, log_path, host)
        try:
            wait_ready(process, ready, port, timeout_s)
            wait_listening(process, host, port, timeout_s)
        except NotListening as exc:
            stop(process, grace_s=1)
            if not port_free(host, port):  # taken since the check above
                raise PortTaken(host, port) from None
            tail = server.output()[-_TAIL_CHARS:]
            raise NotListening(f"{target} {exc}" + (f":\n{tail}" if tail else "")) from None
        except BaseException:
            stop(process, grace_s=1)
            raise
        return server

    @property
    def url(self) -> str:
        return f"http://{_reachable(self.host)}:{self.port}/"

    def output(self) -> str:
        """Everything the server wrote to its log file so far ("" without one)."""
        if self.log_path is None:
            return ""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, grace_s: float = STOP_GRACE_S) -> int:
        """``stop`` this server; its exit code."""
        stop(self.process, grace_s)
        return self.process.returncode


def _reachable(host: str) -> str:
    """Where to connect to a server bound to ``host``: a wildcard is reached on loopback."""
    return HOST if host in ("0.0.0.0", "") else host  # noqa: S104
