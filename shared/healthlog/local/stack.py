"""The local stack: ingest and fold (functions-framework's app), a tick, the dashboard.

Both functions run as ``healthlog.local.server`` processes (functions-framework's app
under waitress, started and stopped by ``healthlog.local.launcher``) bound to 127.0.0.1 by
default (anything else is opt-in with ``--host``). The tick POSTs to the fold function
every ``tick`` seconds (and once at start, which is how the backlog is picked up: an
ordinary pass). Stopping (SIGTERM or Ctrl-C): ingest stops taking requests first, then
the tick, then the fold finishes or abandons the delivery in hand; the journal is closed
by the fold process itself after that. The dashboard (``healthlog dashboard``,
read-only, 127.0.0.1 unless told) is a third child, stopped first. With notification
targets set (``HEALTHLOG_NOTIFY_URLS``), a thread evaluates the watch's rules every tick
(``healthlog.ops.watch.WatchLoop``).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from healthlog import log
from healthlog.config import ENV_PREFIX, WAKE_HEADER, Settings
from healthlog.errors import AccountNameTaken, HealthlogError
from healthlog.local import launcher
from healthlog.ops import watch

if TYPE_CHECKING:
    from healthlog.journal.port import Journal

logger = logging.getLogger("healthlog.serve")

STOP_GRACE_S = 30.0


@dataclass(frozen=True)
class StackOptions:
    host: str = "127.0.0.1"
    port: int = 8080
    fold_port: int = 8081
    tick_s: float = 60.0
    # the dashboard's port (None: no dashboard); it listens on 127.0.0.1 unless told
    dashboard_port: int | None = None
    dashboard_host: str = "127.0.0.1"


def stop(server: launcher.FunctionServer, grace_s: float = STOP_GRACE_S) -> None:
    if launcher.stop(server.process, grace_s):
        log.event(logger, logging.WARNING, "serve.kill", pid=server.process.pid)


class Tick:
    """POST to the fold function now and every ``interval_s`` seconds until stopped."""

    def __init__(self, url: str, interval_s: float, secret: str = "") -> None:
        self._url = url
        self._interval_s = interval_s
        self._headers = {WAKE_HEADER: secret} if secret else {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="healthlog-tick", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=STOP_GRACE_S)

    def _run(self) -> None:
        while not self._stop.is_set():
            again = self.tick()
            if not again:
                self._stop.wait(self._interval_s)

    def tick(self) -> bool:
        """One tick; True when the pass stopped on its budget and should go on now."""
        request = urllib.request.Request(  # noqa: S310
            self._url, data=b"{}", headers=self._headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=STOP_GRACE_S + 5) as reply:  # noqa: S310
                report = json.loads(reply.read() or b"{}")
                return isinstance(report, dict) and report.get("stopped") == "budget"
        except (OSError, ValueError) as exc:
            log.event(logger, logging.WARNING, "serve.tick_failed", error=type(exc).__name__)
            return False


def start_dashboard(options: StackOptions, env: Mapping[str, str]) -> launcher.FunctionServer:
    """``healthlog dashboard`` as a child; NotListening (PortTaken) if it did not start."""
    assert options.dashboard_port is not None
    port, host = options.dashboard_port, options.dashboard_host
    if not launcher.port_free(host, port):
        raise launcher.PortTaken(host, port)
    ready, ready_w = os.pipe()
    command = [sys.executable, "-m", "healthlog.cli", "dashboard", "--host", host]
    command += ["--port", str(port), "--ready-fd", str(ready_w)]
    # its banner would repeat serve's; its log lines (stderr) are serve's
    try:
        process = subprocess.Popen(
            command,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            pass_fds=(ready_w,),
        )
    except BaseException:
        os.close(ready)
        raise
    finally:
        os.close(ready_w)
    try:
        launcher.wait_ready(process, ready, port)
        launcher.wait_listening(process, host, port)
    except BaseException:
        launcher.stop(process, grace_s=1)
        raise
    return launcher.FunctionServer("dashboard", port, process, None, host)


class PortTaken(HealthlogError):
    """A port the stack was to listen on is another process's."""

    #: the command's exit status: it ran, and could not start
    exit_status = 1


#: the option that picks each of serve's children's ports
PORT_OPTIONS = {
    "ingest": "--port",
    "fold": "--fold-port",
    "dashboard": "--dashboard-port",
}


def port_taken(target: str, taken: launcher.PortTaken) -> PortTaken:
    return port_taken_at(taken.host, taken.port, PORT_OPTIONS[target])


def port_taken_at(host: str, port: int, option: str) -> PortTaken:
    """The one line serve and ``healthlog dashboard`` say of a taken port (exit 1)."""
    return PortTaken(
        f"port {port} on {host} is taken (another healthlog serve, or another "
        f"program, listens there): {option} N picks another"
    )


def run_stack(
    options: StackOptions,
    env: Mapping[str, str],
    on_ready: Callable[[], None] = lambda: None,
    on_dashboard: Callable[[bool], None] = lambda started: None,
) -> int:
    """Start fold, ingest, the dashboard and the tick; block until SIGTERM/SIGINT; stop.

    ``on_ready`` runs once both functions accept connections (the banner with the URL),
    after ``on_dashboard`` has been told whether the dashboard started. The dashboard is
    a convenience: if it cannot start (its port taken) or exits, deliveries are still
    taken, and the banner and a log line say so.
    """
    fold_url = f"http://127.0.0.1:{options.fold_port}/"
    # the wake-up secret: only this stack's tick and ingest may make the fold run a pass
    secret = env.get(ENV_PREFIX + "FOLD_SECRET") or secrets.token_urlsafe(32)
    fold_env = {**env, ENV_PREFIX + "FOLD_SECRET": secret}
    ingest_env = {**fold_env, ENV_PREFIX + "FOLD_URL": fold_url}
    stopping = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    fold: launcher.FunctionServer | None = None
    ingest: launcher.FunctionServer | None = None
    tick: Tick | None = None
    watching: watch.WatchLoop | None = None
    dashboard: launcher.FunctionServer | None = None
    try:
        for target, host, port in (
            ("ingest", options.host, options.port),
            ("fold", launcher.HOST, options.fold_port),
        ):
            if not launcher.port_free(host, port):
                raise port_taken(target, launcher.PortTaken(host, port))
        try:
            fold = launcher.FunctionServer.start("fold", port=options.fold_port, env=fold_env)
        except launcher.PortTaken as taken:
            raise port_taken("fold", taken) from None
        try:
            ingest = launcher.FunctionServer.start(
                "ingest", port=options.port, host=options.host, env=ingest_env
            )
        except launcher.PortTaken as taken:
            raise port_taken("ingest", taken) from None
        if options.dashboard_port is not None:
            try:
                dashboard = start_dashboard(options, env)  # no wake-up secret: it reads only
            except launcher.NotListening:
                log.event(logger, logging.WARNING, "serve.dashboard_not_started")
            on_dashboard(dashboard is not None)
        tick = Tick(fold_url, options.tick_s, secret)
        tick.start()
        settings = Settings.from_env(env)
        if watch.targets(settings):  # the watch's notices, on the tick's interval
            watching = watch.WatchLoop(settings, options.tick_s)
            watching.start()
        log.event(logger, logging.INFO, "serve.started", port=options.port, pid=os.getpid())
        on_ready()
        while not stopping.is_set():
            if fold.process.poll() is not None or ingest.process.poll() is not None:
                log.event(logger, logging.ERROR, "serve.child_exited")
                return 1
            if dashboard is not None and dashboard.process.poll() is not None:
                log.event(logger, logging.WARNING, "serve.dashboard_exited")
                dashboard = None
            stopping.wait(1.0)
        return 0
    finally:
        if dashboard is not None:
            stop(dashboard)
        # ingest stops taking requests before the fold stops
        if ingest is not None:
            stop(ingest)
        if tick is not None:
            tick.stop()
        if watching is not None:
            watching.stop(STOP_GRACE_S)
        if fold is not None:
            stop(fold)
            log.event(logger, logging.INFO, "serve.stopped")


# --- before the stack starts ----------------------------------------------------------------


def prepare_stack(settings: Settings) -> str | None:
    """Before the local stack starts: the schema, a first account, and a reconcile.

    Returns the first account's token when this start created it (shown once). The
    reconcile journals any body a crash left archived without its row, so a restart
    after a crash needs no manual step; the first pass then folds them.
    """
    from healthlog import tokens
    from healthlog.ops import reconcile, store

    with store.opened(settings, "create", archive=True) as opened:
        journal = opened.journal
        token = None
        if not journal.accounts():
            token = tokens.new_token()
            try:
                journal.add_account("default", tokens.hash_token(token))
            except AccountNameTaken:
                token = None  # a start beside this one made it first, and showed its token
        reconcile.reconcile(journal, opened.archive)
        return token


def first_token_path(settings: Settings) -> Path:
    """Where ``keep_first_token`` writes: ``first-token`` beside the SQLite journal, else ./var."""
    from healthlog import urls

    where = urls.journal_location(settings.journal_url)
    folder = Path(where.path).parent if isinstance(where, urls.SqliteLocation) else Path("var")
    return folder / "first-token"


def keep_first_token(settings: Settings, token: str) -> Path:
    """Write the first token to ``first_token_path`` (its folder made if missing), 0600."""
    from healthlog import files

    path = first_token_path(settings)
    files.private_dirs(path.parent)
    fd = files.private_file(path, os.O_WRONLY | os.O_TRUNC)
    with open(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    return path


def first_token_of(journal: Journal, settings: Settings) -> tuple[Path, str] | None:
    """The first-token file and the id of the account whose token it holds, if it still
    works; None when there is no such file or its token opens no account."""
    from healthlog import tokens

    path = first_token_path(settings)
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    found = journal.account_by_token_hash(tokens.hash_token(token)) if token else None
    return None if found is None else (path, found.id)


def http_url(host: str, port: int) -> str:
    """The URL a banner shows for a server listening on ``host`` (a wildcard as 0.0.0.0)."""
    shown = "0.0.0.0" if host in ("0.0.0.0", "") else host  # noqa: S104
    return f"http://{shown}:{port}/"
