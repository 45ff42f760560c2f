"""What the reliability tests share: bodies to send, a client that records every reply,
and a look at the archive and the journal as they are on disk."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import requests
from healthlog import tokens
from healthlog.archive.local import TMP_DIR, LocalArchive
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import Account

T0 = datetime(2026, 5, 1, 6, 0)


def steps_body(
    value: float, *, points: int, start_minute: int = 0, source: str = "Harness Watch"
) -> bytes:
    """An HAE ``step_count`` body: ``points`` minutes from T0 + ``start_minute``.

    Every point's value is ``value`` plus a fraction of its minute, so two bodies with
    different ``value`` differ in every point (and as layers, the newer one wins).
    """
    data = [
        {
            "date": (T0 + timedelta(minutes=start_minute + m)).strftime("%Y-%m-%d %H:%M:%S +0000"),
            "qty": round(value + (start_minute + m) / 100_000, 6),
            "source": source,
        }
        for m in range(points)
    ]
    return orjson.dumps(
        {"data": {"metrics": [{"name": "step_count", "units": "count", "data": data}]}}
    )


@dataclass
class Attempt:
    """One POST of one body, and what came back (``status`` None: no reply at all)."""

    body: int  # index of the body sent
    status: int | None
    delivery_id: str | None = None
    retry_after: str | None = None
    error: str | None = None
    latency_s: float = 0.0


def post(
    session: requests.Session,
    url: str,
    body_index: int,
    body: bytes,
    headers: Mapping[str, str],
    timeout_s: float = 30.0,
) -> Attempt:
    started = time.monotonic()
    try:
        reply = session.post(url, data=body, headers=dict(headers), timeout=timeout_s)
    except requests.RequestException as exc:
        error = f"{type(exc).__name__}: {exc}"[:300]
        return Attempt(body_index, None, error=error, latency_s=time.monotonic() - started)
    latency = time.monotonic() - started
    delivery_id = reply.json()["id"] if reply.status_code == 200 else None
    return Attempt(
        body_index,
        reply.status_code,
        delivery_id=delivery_id,
        retry_after=reply.headers.get("Retry-After"),
        error=None if reply.status_code == 200 else reply.text[:200],
        latency_s=latency,
    )


def new_account(journal: SqliteJournal, name: str) -> tuple[Account, str]:
    token = tokens.new_token()
    return journal.add_account(name, tokens.hash_token(token)), token


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL a process started in a session of its own, with its children, and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def temp_files(archive: LocalArchive) -> int:
    """Bodies a killed writer left half-written: never visible under a key."""
    folder = archive.root / TMP_DIR
    return len(list(folder.iterdir())) if folder.exists() else 0


def copy_database(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite database (its WAL included), by SQLite's backup."""
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


#: how long a driver process may take to start and take the fold lock
READY_TIMEOUT_S = 30.0


def wait_ready_or_exit(
    process: subprocess.Popen[bytes], ready: Path, who: str, timeout_s: float = READY_TIMEOUT_S
) -> int | None:
    """None once the ``who`` driver holds the fold lock (its ready file is there); its
    exit code if it ended before. A bounded poll of the file, not a sleep for work."""
    deadline = time.monotonic() + timeout_s
    while not ready.exists():
        code = process.poll()
        if code is not None:
            return code
        if time.monotonic() > deadline:
            raise AssertionError(f"the {who} driver did not start")
        time.sleep(0.002)
    return None
