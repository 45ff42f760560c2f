"""Fixtures shared by every test folder: a real SQLite journal, a real local archive.

And the session-end check (``_nothing_left_behind``): a test run that leaves a process
or a listening port behind fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import psutil
import pytest
from healthlog import ids, tokens
from healthlog.archive.keys import body_key
from healthlog.archive.local import LocalArchive
from healthlog.archive.port import Archive
from healthlog.journal.port import Journal
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import Account, NewDelivery
from hypothesis import settings

#: real HAE bodies, copied from public projects (their origins: SOURCES.md in that folder)
SAMPLES = Path(__file__).resolve().parent / "fixtures" / "hae" / "samples"

#: set by CI so that a missing PostgreSQL server fails instead of skipping
REQUIRE_POSTGRES = os.environ.get("HEALTHLOG_REQUIRE_POSTGRES") == "1"

# Hypothesis profiles, chosen by HYPOTHESIS_PROFILE (the Makefile sets it): "ci", the full
# run (hypothesis's own defaults, 100 examples), is what `make test`, CI and a bare
# `pytest` get; "dev", `make fast`'s, tries a tenth of that. A test that wants more than
# the default asks for a multiple of the profile's count (settings.default.max_examples),
# so it shrinks with the profile. Loaded here, before any test module is imported.
settings.register_profile("ci")
settings.register_profile("dev", max_examples=10)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


#: every process a test starts carries this mark in its environment (unless it is given an
#: environment of its own), so one that outlives its parent is still found; each pytest
#: process (each xdist worker) has its own
LEFTOVER_MARK = "TESTS_SESSION_MARK"
os.environ[LEFTOVER_MARK] = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"


def _marked(proc: psutil.Process, mark: str) -> bool:
    try:
        return proc.environ().get(LEFTOVER_MARK) == mark
    except (psutil.Error, OSError):  # gone, or not ours to read
        return False


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def leftovers() -> list[str]:
    """What this pytest process left running: its descendants and the processes that carry
    its mark (orphans too), and the TCP ports it or they still listen on."""
    me = psutil.Process()
    mark = os.environ[LEFTOVER_MARK]
    procs = {p.pid: p for p in me.children(recursive=True) if _alive(p)}
    for p in psutil.process_iter():
        if p.pid != me.pid and p.pid not in procs and _marked(p, mark) and _alive(p):
            procs[p.pid] = p
    found = []
    for proc in [me, *procs.values()]:
        try:
            name = " ".join(proc.cmdline()[:4]) or proc.name()
            ports = sorted(
                f"{c.laddr.ip}:{c.laddr.port}"
                for c in proc.net_connections(kind="tcp")
                if c.status == psutil.CONN_LISTEN
            )
        except psutil.Error:
            continue
        if proc is not me:
            found.append(f"process {proc.pid} ({name}) still runs")
        found += [f"process {proc.pid} ({name}) still listens on {port}" for port in ports]
    return found


@pytest.fixture(scope="session", autouse=True)
def _nothing_left_behind() -> Iterator[None]:
    """Fail the run when its tests leave a process or a listening port behind (set up
    first, so torn down last: after every other session fixture has stopped its own)."""
    yield
    left = leftovers()
    if left:
        pytest.fail("the tests left behind:\n  " + "\n  ".join(left), pytrace=False)


def samples() -> list[Path]:
    found = sorted(SAMPLES.glob("*.json"))
    if not found:
        pytest.fail(f"the HAE samples are missing: expected *.json in {SAMPLES}")
    return found


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    j = SqliteJournal(str(tmp_path / "journal.db"))
    j.migrate()
    yield j
    j.close()


@pytest.fixture
def archive(tmp_path: Path) -> Archive:
    return LocalArchive(tmp_path / "archive")


@dataclass
class Phone:
    """Sends deliveries the way ingest stores them: body archived, then a pending row.

    Tests of the fold use it to place deliveries at chosen times in the journal's order.
    """

    journal: Journal
    archive: Archive
    account: Account
    token: str
    clock: datetime = datetime(2026, 1, 1, tzinfo=ids.EPOCH.tzinfo)

    def send(self, body: bytes | dict[str, object], *, at: datetime | None = None) -> str:
        raw = body if isinstance(body, bytes) else orjson.dumps(body)
        if at is None:
            self.clock += timedelta(seconds=1)
            at = self.clock
        delivery_id = ids.new_delivery_id(at)
        key = body_key(self.account.id, delivery_id, "application/json")
        self.archive.put(key, raw)
        self.journal.insert_delivery(
            NewDelivery(
                id=delivery_id,
                account_id=self.account.id,
                received_at=at,
                archive_key=key,
                size=len(raw),
                content_type="application/json",
            )
        )
        return delivery_id


@pytest.fixture
def phone(journal: Journal, archive: Archive) -> Phone:
    token = tokens.new_token()
    account = journal.add_account("alice", tokens.hash_token(token))
    return Phone(journal, archive, account, token)


def metrics_body(*metrics: tuple[str, str, list[dict[str, object]]]) -> dict[str, object]:
    """``{"data": {"metrics": [...]}}`` from (name, units, points) triples."""
    return {"data": {"metrics": [{"name": n, "units": u, "data": pts} for n, u, pts in metrics]}}
