"""The session-end check finds what a test leaves behind: a child, an orphan, a listener."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from tests.conftest import leftovers


def test_a_child_left_running_is_found_and_gone_once_stopped() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert any(f"process {child.pid} " in line for line in leftovers())
    finally:
        child.kill()
        child.wait()
    assert not any(f"process {child.pid} " in line for line in leftovers())


def test_an_orphan_is_found_by_its_mark() -> None:
    # a shell that starts a sleeper in the background and exits: the sleeper is reparented
    script = f"{sys.executable} -c 'import time; time.sleep(60)' >/dev/null 2>&1 & echo $!"
    pid = int(subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout)
    try:
        assert any(f"process {pid} " in line for line in leftovers())
    finally:
        os.kill(pid, 9)


def test_a_socket_left_listening_in_this_process_is_found() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert any(line.endswith(f"listens on 127.0.0.1:{port}") for line in leftovers())
    assert not any(line.endswith(f":{port}") for line in leftovers())
