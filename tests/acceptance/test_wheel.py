"""``pip install .`` gives a ``healthlog`` whose ``serve`` works from any folder.

The wheel is built from a copy of the checkout's sources (nothing is written into the
checkout), without build isolation: the dev environment has the build backend
(setuptools, wheel: pinned in constraints.txt), so nothing is fetched. It is installed
into a fresh virtual environment with ``--no-deps``; the dependencies come from this
environment's site-packages through a ``.pth`` line, which adds that folder to the path
without running its own ``.pth`` files, so the checkout's editable install stays out
and ``import healthlog`` is the wheel's. ``serve`` is then started in an empty folder,
with no ``HEALTHLOG_*`` variable: it must serve the functions from the wheel's copy,
take a delivery and stop cleanly.
"""

from __future__ import annotations

import shutil
import signal
import site
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import requests
from healthlog.local import launcher

from tests.integration.servers import free_port

ROOT = launcher.ROOT
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "shared", "functions")


def _build_wheel(folder: Path) -> Path:
    tree = folder / "src"
    tree.mkdir()
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))  # fmt: skip
        else:
            shutil.copy2(source, tree / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-q", "-w", str(folder / "dist"), str(tree)],
        check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    (wheel,) = (folder / "dist").glob("healthlog-*.whl")
    return wheel


def test_the_wheel_carries_the_functions_and_serve_runs_from_an_empty_folder(
    tmp_path: Path,
) -> None:
    wheel = _build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    for target in ("ingest", "fold"):
        assert f"healthlog/_functions/{target}/main.py" in names
    assert "healthlog/journal/sql/sqlite.sql" in names

    fresh = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(fresh)], check=True, timeout=120)
    python = fresh / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    fresh_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    (Path(fresh_site) / "dev-dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    where = subprocess.run(
        [str(python), "-c",
         "from healthlog.local import launcher; print(launcher.function_source('ingest'))"],
        check=True, capture_output=True, text=True, timeout=60, cwd=tmp_path,
    ).stdout.strip()  # fmt: skip
    assert where.startswith(fresh_site), where  # the wheel's copy, not the checkout's

    empty = tmp_path / "anywhere"
    empty.mkdir()
    port, fold_port = free_port(), free_port()
    out = tmp_path / "serve.out"
    with open(out, "wb") as stdout:
        process = subprocess.Popen(
            [str(fresh / "bin" / "healthlog"), "serve", "--port", str(port),
             "--fold-port", str(fold_port), "--no-dashboard", "--tick", "3600"],
            cwd=empty, env=launcher.clean_env({"HEALTHLOG_LOG_LEVEL": "WARNING"}),
            stdout=stdout, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while "taking deliveries" not in out.read_text() and time.monotonic() < deadline:
            assert process.poll() is None, out.read_text()
            time.sleep(0.1)
        shown = out.read_text()
        assert f"creating a new journal at {empty}/var/healthlog.db" in shown, shown
        assert "taking deliveries" in shown, shown
        assert "MissingSourceException" not in shown and "Traceback" not in shown
        token = (empty / "var" / "first-token").read_text().strip()
        health = requests.get(f"http://127.0.0.1:{port}/health", timeout=10)
        assert health.status_code == 200, health.text
        reply = requests.post(
            f"http://127.0.0.1:{port}/", timeout=30,
            data=b'{"data": {"metrics": []}}', headers={"Authorization": f"Bearer {token}"},
        )  # fmt: skip
        assert reply.status_code == 200, reply.text
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=90) == 0, out.read_text()
