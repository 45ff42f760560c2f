"""The local stack as a new user runs it: `healthlog serve`, a phone posting over HTTP.

One scenario, end to end, through real processes: the stack prints the URL and a token;
real and generated HAE deliveries are posted (overlapping windows whose values change,
an unknown section, bad bodies, concurrent posts); a pass is driven synchronously over
HTTP; the results are read through the CLI's ``--json`` and ``export``; SIGTERM stops
everything with exit code 0; and no log line of any process carries a health value, a
source name, a token or a header value.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.conftest import metrics_body, samples
from tests.integration.servers import free_port

BIN = Path(sys.executable).parent
WAKE_SECRET = "the-stacks-own-wake-secret"
SECRET_AUTOMATION = "Automation-Name-Nobody-Should-Log"
SOURCE = "Zelda’s Apple Watch"
VALUE = 4242.171717


@dataclass
class Stack:
    process: subprocess.Popen[bytes]
    folder: Path
    env: dict[str, str]
    url: str
    fold_url: str
    token: str

    def cli(self, *args: str) -> object:
        out = subprocess.run(
            [str(BIN / "healthlog"), *args],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
        return json.loads(out) if "--json" in args else out.decode()

    def post(self, body: bytes, **headers: str) -> requests.Response:
        sent = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        return requests.post(self.url, data=body, headers={**sent, **headers}, timeout=30)

    def fold_now(self) -> dict[str, object]:
        """One pass, synchronously: it starts after any running pass ends."""
        reply = requests.post(
            self.fold_url + "?wait=1", headers={"X-Healthlog-Wake": WAKE_SECRET}, timeout=120
        )
        assert reply.status_code == 200, reply.text
        report: dict[str, object] = reply.json()
        return report

    def logs(self) -> str:
        return (self.folder / "stderr.log").read_text(errors="replace")


def _read_token(stdout: Path, process: subprocess.Popen[bytes]) -> str:
    """stdout is a file, not a terminal: the token is in the file serve names as soon as
    it makes the account; returned once the banner says deliveries are taken."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        printed = stdout.read_text()
        lines = printed.splitlines()
        named = [line for line in lines if line.startswith("The first account's token is in ")]
        if named and any(line.startswith("healthlog is taking deliveries at") for line in lines):
            kept = Path(named[0].removeprefix("The first account's token is in ").split(" (")[0])
            kept = kept if kept.is_absolute() else stdout.parent / kept
            assert stat.S_IMODE(kept.stat().st_mode) == 0o600
            assert "hl_" not in printed  # the token itself never reaches the log
            return kept.read_text().strip()
        assert process.poll() is None, printed
        time.sleep(0.05)
    raise AssertionError("serve named no token file, or never took deliveries")


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    port, fold_port, dashboard_port = free_port(), free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHLOG_")}
    env.update(
        HEALTHLOG_MAX_BODY_BYTES=str(1_000_000),
        HEALTHLOG_FOLD_SECRET=WAKE_SECRET,  # serve makes one when none is given
        HEALTHLOG_LOG_LEVEL="DEBUG",
        PYTHONUNBUFFERED="1",
    )
    with open(tmp_path / "stdout.log", "wb") as out, open(tmp_path / "stderr.log", "wb") as err:
        process = subprocess.Popen(
            [str(BIN / "healthlog"), "serve", "--port", str(port), "--fold-port",
             str(fold_port), "--tick", "3600", "--dashboard-port", str(dashboard_port)],
            cwd=tmp_path, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        token = _read_token(tmp_path / "stdout.log", process)
        yield Stack(
            process, tmp_path, env, f"http://127.0.0.1:{port}/",
            f"http://127.0.0.1:{fold_port}/", token,
        )  # fmt: skip
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def steps(start_minute: int, values: list[float]) -> bytes:
    points = [
        {"date": f"2026-06-01 10:{start_minute + i:02d}:00 +0200", "qty": v, "source": SOURCE}
        for i, v in enumerate(values)
    ]
    return json.dumps(metrics_body(("step_count", "count", points))).encode()


def test_a_new_user_runs_the_stack_and_every_delivery_is_accounted_for(stack: Stack) -> None:
    stdout = (stack.folder / "stdout.log").read_text()
    assert stack.url in stdout  # the URL to type into the app
    # the dashboard beside it, read-only on 127.0.0.1, its URL in the banner
    dashboard = next(line for line in stdout.splitlines() if "dashboard" in line).split()[-1]
    assert dashboard.startswith("http://127.0.0.1:")
    assert requests.get(dashboard + "api/status", timeout=30).json()["backlog"] == 0
    assert (stack.folder / "var" / "healthlog.db").exists()  # the embedded default

    # real sample bodies, byte for byte
    sent = {p.name: stack.post(p.read_bytes()) for p in samples()}
    assert {name: r.status_code for name, r in sent.items()} == dict.fromkeys(sent, 200)

    # overlapping windows whose values change: the later delivery wins per point
    assert stack.post(steps(0, [1, 2, 3]), **{"automation-name": SECRET_AUTOMATION}).ok
    assert stack.post(steps(1, [20, 30, VALUE])).ok
    # an unknown section is kept and reported, not dropped
    unknown = {"data": {"metrics": [], "somethingNew": [{"x": 1}]}}
    assert stack.post(json.dumps(unknown).encode()).ok
    # concurrent posts
    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(lambda i: stack.post(steps(30, [float(i)])).status_code, range(24)))
    assert codes == [200] * 24

    # bad bodies get a readable 4xx and store nothing
    bad = {
        "array": (stack.post(b"[1,2]"), 400),
        "not json": (stack.post(b"not json"), 400),
        "no token": (requests.post(stack.url, data=b"{}", timeout=30), 401),
        "wrong token": (stack.post(b"{}", Authorization="Bearer hl_wrong"), 401),
        "too large": (stack.post(b'{"x":"' + b"a" * 1_000_000 + b'"}'), 413),
    }
    for name, (reply, code) in bad.items():
        assert reply.status_code == code, name
        assert len(reply.text) > 20 and "Traceback" not in reply.text, name
    assert "Batch Requests" in bad["too large"][0].text

    # the fold port runs a pass only for this stack's tick and ingest (their secret)
    refused = {
        "no secret": (requests.post(stack.fold_url, data=b"{}", timeout=30), 401),
        "wrong secret": (
            requests.post(stack.fold_url, headers={"X-Healthlog-Wake": "guess"}, timeout=30),
            401,
        ),
        "GET": (requests.get(stack.fold_url, timeout=30), 405),
        "another path": (requests.post(stack.fold_url + "x", timeout=30), 404),
    }
    for name, (reply, code) in refused.items():
        assert reply.status_code == code, name
        assert WAKE_SECRET not in reply.text, name
    report = stack.fold_now()
    assert report["stopped"] is None

    status = stack.cli("status", "--json")
    assert isinstance(status, dict)
    total = len(sent) + 2 + 1 + 24
    assert sum(status["counts"].values()) == total  # nothing else was stored
    assert status["counts"]["pending"] == 0 and status["counts"]["failed"] == 0
    assert status["counts"]["partial"] == 1  # every section HAE sends is covered
    assert status["uncovered"] == {"somethingNew": 1}

    exported = [json.loads(line) for line in str(
        stack.cli("export", "--metric", "step_count", "--format", "jsonl", "--from", "2026-06-01")
    ).splitlines()]  # fmt: skip
    by_start = {p["start"][11:16]: p["qty"] for p in exported}
    assert by_start["08:00"] == 1 and by_start["08:01"] == 20 and by_start["08:02"] == 30
    assert by_start["08:03"] == VALUE
    assert by_start["08:30"] in {float(i) for i in range(24)}

    deliveries = stack.cli("deliveries", "--limit", "1000", "--json")
    assert isinstance(deliveries, list) and len(deliveries) == total

    # SIGTERM: ingest stops first, then the fold; exit code 0
    stack.process.send_signal(signal.SIGTERM)
    assert stack.process.wait(timeout=90) == 0
    with pytest.raises(requests.ConnectionError):
        stack.post(b"{}")

    logs = stack.logs()
    assert "fold.pass" in logs and "delivery.folded" in logs  # the logs are there...
    for secret in (stack.token, SOURCE, "Zelda", "Irvin", str(VALUE), "0.76856774374845116",
                   SECRET_AUTOMATION, "hl_wrong"):  # fmt: skip
        assert secret not in logs, f"a log line carries {secret!r}"
    for line in logs.splitlines():
        if line.startswith("{"):
            json.loads(line)  # every structured line is one JSON object


def test_on_a_terminal_the_first_token_is_shown_and_no_token_file_is_written(
    tmp_path: Path,
) -> None:
    """The token goes to a person's terminal, never to a file nobody asked for."""
    import pty
    import select

    ports = [str(free_port()) for _ in range(3)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHLOG_")}
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(BIN / "healthlog"), "serve", "--port", ports[0], "--fold-port", ports[1],
         "--tick", "3600", "--dashboard-port", ports[2]],
        cwd=tmp_path, env=env, stdout=follower, stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while b"Authorization: Bearer hl_" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                seen += os.read(leader, 4096)
            except OSError:  # the other end closed: serve exited
                break
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        os.close(leader)

    assert b"Authorization: Bearer hl_" in seen, seen.decode(errors="replace")
    assert not list(tmp_path.rglob("first-token"))


def test_without_the_dashboard_extra_the_banner_says_what_to_install(tmp_path: Path) -> None:
    """serve with plotly unimportable (``pip install .``, no extras): one banner line
    names the extra, as `healthlog dashboard` says it (tests/acceptance/test_dashboard.py)."""
    from tests.browser import WITHOUT

    ports = [str(free_port()) for _ in range(3)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEALTHLOG_")}
    env["PYTHONUNBUFFERED"] = "1"
    process = subprocess.Popen(
        [sys.executable, "-c", WITHOUT, "plotly", "serve", "--port", ports[0],
         "--fold-port", ports[1], "--tick", "3600", "--dashboard-port", ports[2]],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip
    assert process.stdout is not None
    banner = []
    # a serve that never ends its banner is killed with its servers, which hold the
    # same stdout: that ends the reading below
    watchdog = threading.Timer(90, os.killpg, (process.pid, signal.SIGKILL))
    watchdog.start()
    try:  # the banner ends with what to do to listen beyond this machine
        for line in process.stdout:
            banner.append(line.rstrip("\n"))
            if line.startswith("and use this machine's address"):
                break
    finally:
        watchdog.cancel()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    told = [line for line in banner if "pip install 'healthlog[dashboard]'" in line]
    assert told == [
        "  (healthlog dashboard needs the extra for its charts (plotly.js): "
        "pip install 'healthlog[dashboard]')"
    ], banner
    assert any(line.startswith("the dashboard (read-only) is at") for line in banner), banner
