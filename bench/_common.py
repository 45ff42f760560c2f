"""What every benchmark shares: the report, timing, HAE-like bodies, stores of history,
profiles and servers.

A benchmark prints one JSON object to stdout (``emit``) and everything else to stderr
(``note``). Servers are started, awaited and stopped by ``healthlog.local.launcher``, as the
local stack's and the tests' are: ``python -m healthlog.local.server`` (functions-framework's
Flask app and gunicorn server) on 127.0.0.1, serving ``functions/<target>/main.py`` or
the no-op from ``bench/``. ``healthlog`` is imported from the venv, where it is
installed editable (``make bench`` runs ``.venv/bin/python``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from healthlog import ids
from healthlog.journal.core import SqlJournal
from healthlog.journal.postgres import PostgresJournal
from healthlog.journal.rows import to_text
from healthlog.journal.sqlite import SqliteJournal
from healthlog.local import launcher
from healthlog.local.launcher import clean_env as clean_env  # the tests' and the benchmarks' one
from healthlog.model import NewDelivery, ParseStatus, Point

ROOT = Path(__file__).resolve().parents[1]

KB = 1000
MB = 1000 * KB
MIB = 1024 * 1024


# --- the report ------------------------------------------------------------------------


def emit(report: Mapping[str, Any]) -> None:
    """The one JSON object on stdout."""
    sys.stdout.write(json.dumps(report, indent=2) + "\n")
    sys.stdout.flush()


def note(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit, so servers and temp folders are cleaned up on the way."""

    def stop(signum: int, frame: object) -> None:
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def machine() -> dict[str, Any]:
    """Enough about the machine to read the figures by."""
    return {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": sys.platform,
        # glibc tuning passed on to the servers, if any (it changes ingest's figures)
        "malloc_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("MALLOC_")},
    }


# --- numbers ---------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linear between the closest ranks."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def rounded(value: float, digits: int = 3) -> float:
    return round(value, digits)


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.s`` (wall) and ``sw.cpu_s`` (this process)."""

    s: float = 0.0
    cpu_s: float = 0.0

    def __enter__(self) -> Stopwatch:
        self._start = time.perf_counter()
        self._cpu_start = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.s = time.perf_counter() - self._start
        self.cpu_s = time.process_time() - self._cpu_start


# --- bodies ----------------------------------------------------------------------------

SOURCES = ("Simon's Apple Watch", "Simon’s iPhone", "Oura")
# (name, units, share of the points): mostly plain quantities at minute resolution
PLAIN = (
    ("step_count", "count", 0.30),
    ("active_energy", "kcal", 0.25),
    ("basal_energy_burned", "kcal", 0.15),
    ("walking_running_distance", "mi", 0.10),
    ("apple_exercise_time", "min", 0.05),
    ("environmental_audio_exposure", "dBASPL", 0.05),
)
HEART_RATE_SHARE = 0.10  # the rest: heart_rate with Min/Avg/Max
_START = datetime(2024, 6, 1, tzinfo=UTC)


def _stamp(at: datetime) -> str:
    # the app's own form: "2024-06-01 00:01:00 +0100"
    local = at + timedelta(hours=1)
    return local.strftime("%Y-%m-%d %H:%M:%S") + " +0100"


def _series(count: int, rng: random.Random, heart: bool) -> list[dict[str, object]]:
    points: list[dict[str, object]] = []
    source = SOURCES[0]
    for i in range(count):
        if i % 500 == 0:
            source = rng.choice(SOURCES)
        date = _stamp(_START + timedelta(minutes=i))
        if heart:
            low = rng.randint(48, 90)
            high = low + rng.randint(0, 40)
            avg = round(rng.uniform(low, high), 3)
            points.append({"date": date, "Min": low, "Avg": avg, "Max": high, "source": source})
        else:
            points.append({"date": date, "qty": rng.random() * 40, "source": source})
    return points


def minute_points(day: datetime, rng: random.Random, offset: int) -> list[Point]:
    """A day of one person's minute-level data, as the parser would give it: heart rate
    every minute (min, avg, max) and steps on most waking minutes."""
    points: list[Point] = []
    for minute in range(1440):
        at = to_text(day + timedelta(minutes=minute))
        hr = 60 + 25 * math.sin(minute / 1440 * 2 * math.pi) + rng.random() * 8
        for field, value in (("min", hr - 4), ("avg", hr), ("max", hr + 5)):
            points.append(
                Point("heart_rate", field, "Watch", at, offset, None, round(value, 1), None,
                      "count/min")
            )  # fmt: skip
        if 7 * 60 <= minute < 22 * 60 and rng.random() < 0.6:
            points.append(
                Point("step_count", "qty", "iPhone", at, offset, None, rng.randrange(5, 120),
                      None, "count")
            )  # fmt: skip
    return points


def metrics_document(points: int, seed: int = 7) -> dict[str, object]:
    """An HAE metrics body with about ``points`` data points (heart_rate ones count once)."""
    rng = random.Random(seed)
    metrics: list[dict[str, object]] = []
    for name, units, share in PLAIN:
        metrics.append(
            {"name": name, "units": units, "data": _series(int(points * share), rng, False)}
        )
    metrics.append(
        {
            "name": "heart_rate",
            "units": "count/min",
            "data": _series(int(points * HEART_RATE_SHARE), rng, True),
        }
    )
    return {"data": {"metrics": metrics, "workouts": []}}


def metrics_body(size: int, seed: int = 7) -> bytes:
    """An HAE-like metrics body of about ``size`` bytes (within a few percent)."""
    probe = orjson.dumps(metrics_document(2000, seed))
    per_point = len(probe) / 2000
    return orjson.dumps(metrics_document(max(20, int(size / per_point)), seed))


# --- PostgreSQL ------------------------------------------------------------------------

#: a maintenance database on the server the benchmarks use (the tests' server by default)
PG_URL = os.environ.get("HEALTHLOG_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


def pg_unreachable(url: str = PG_URL) -> str | None:
    """Why the PostgreSQL server of ``url`` cannot be used, or None."""
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        # libpq's first line says which host and port, and why
        lines = str(exc).strip().splitlines()
        return lines[0].strip() if lines else type(exc).__name__
    return None


@contextlib.contextmanager
def pg_database(url: str = PG_URL) -> Iterator[str]:
    """A new, empty database on the server of ``url``, its URL; dropped on the way out.

    ``healthlog_bench_<pid>_<random>``, dropped ``WITH (FORCE)``: connections that a
    server left open (or a SIGTERM's ``SystemExit``) do not leave it behind.
    """
    import psycopg

    name = f"healthlog_bench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- stores of history ----------------------------------------------------------------


@dataclass
class Store:
    """A migrated-or-not journal of one backend, and what the benchmarks read it by."""

    journal: SqlJournal
    #: the journal's URL, as HEALTHLOG_JOURNAL_URL names it
    url: str
    #: the database's bytes (SQLite: the file after a checkpoint; PostgreSQL: its tables
    #: with their indexes, after VACUUM ANALYZE)
    size: Callable[[], int]
    #: a new DB-API connection of the backend's own driver, bare (no journal), and its
    #: parameter marker: for floors that read the same rows without healthlog
    connect: Callable[[], Any]
    marker: str


@contextlib.contextmanager
def sqlite_store(folder: Path) -> Iterator[Store]:
    import sqlite3

    path = folder / "journal.db"
    journal = SqliteJournal(str(path))

    def size() -> int:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            page = conn.execute("PRAGMA page_size").fetchone()[0]
        return int(pages) * int(page)

    try:
        yield Store(journal, f"sqlite:///{path}", size, lambda: sqlite3.connect(path), "?")
    finally:
        journal.close()


@contextlib.contextmanager
def postgres_store(_: Path) -> Iterator[Store]:
    """A journal in a database of its own (``pg_database``), dropped on the way out."""
    import psycopg

    with pg_database() as url:
        journal = PostgresJournal(url)

        def size() -> int:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
                found = conn.execute(
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c"
                    " JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = 'public' AND c.relkind = 'r'"
                ).fetchone()
            return int(found[0] or 0) if found else 0

        try:
            yield Store(journal, url, size, lambda: psycopg.connect(url), "%s")
        finally:
            journal.close()


STORES = {"sqlite": sqlite_store, "postgres": postgres_store}

#: the phone's offset in the stores' history, minutes
HISTORY_OFFSET = 60


def fill(
    journal: SqlJournal, account_id: str, days: int, end: datetime, seed: int = 5
) -> tuple[int, float]:
    """Write ``days`` of ``minute_points`` ending the day before ``end``, a delivery a
    day (each day's points in one ``write_outcome``), through the real journal.

    Returns (points written, seconds).
    """
    rng = random.Random(seed)
    written = 0
    with Stopwatch() as sw:
        for n in range(days):
            day = end - timedelta(days=days - n)
            batch = minute_points(day, rng, HISTORY_OFFSET)
            at = day + timedelta(days=1, hours=1)
            delivery_id = ids.new_delivery_id(at)
            journal.insert_delivery(
                NewDelivery(delivery_id, account_id, at, f"{account_id}/h/{delivery_id}.json",
                            1, "application/json")
            )  # fmt: skip
            journal.write_outcome(
                delivery_id, expected=ParseStatus.PENDING, status=ParseStatus.PARSED,
                uncovered=(), failure=None, points=batch,
            )  # fmt: skip
            written += len(batch)
            if n % 200 == 199:
                note(f"  {written:,} points, {n + 1} days")
    return written, sw.s


# --- profiles --------------------------------------------------------------------------


def function_name(key: tuple[str, int, str]) -> str:
    """A pstats key as a short name: ``healthlog/reads/series.py:202(series)``."""
    path, line, name = key
    if path == "~":  # a builtin: pstats names it "<method 'fsync' ...>" already
        return name
    for marker in ("site-packages/", "shared/", "/lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            if marker == "/lib/python3":  # "11/pathlib.py": the standard library's
                path = "stdlib/" + path.split("/", 1)[-1]
            break
    return f"{path}:{line}({name})"


#: the benchmarks' own files, left out of the functions a profile ranks
BENCH = str(ROOT / "bench")


def ranked_functions(
    table: dict[Any, Any], column: int, total: float, limit: int, seconds: str | None = None
) -> list[dict[str, Any]]:
    """The ``limit`` functions of a pstats table (``Stats.stats``) that take the most by
    ``column`` (pstats rows: calls, primitive calls, own, cumulative), the benchmarks'
    own left out: each its name and share of ``total``, and with ``seconds`` given its
    seconds under that key and its calls."""
    kept = [(key, row) for key, row in table.items() if not key[0].startswith(BENCH)]
    ranked = sorted(kept, key=lambda item: item[1][column], reverse=True)
    out = []
    for key, row in ranked[:limit]:
        if row[column] <= 0:
            break
        entry: dict[str, Any] = {"function": function_name(key)}
        if seconds is not None:
            entry[seconds] = rounded(row[column], 3)
        entry["share"] = rounded(row[column] / total)
        if seconds is not None:
            entry["calls"] = row[0]
        out.append(entry)
    return out


# --- servers ---------------------------------------------------------------------------


class Server(launcher.FunctionServer):
    """A function server (``healthlog.local.launcher.FunctionServer``) and what it costs."""

    def worker_pids(self) -> list[int]:
        """The processes that serve requests: gunicorn's workers, else the process itself."""
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children")
        try:
            pids = [int(p) for p in children.read_text().split()]
        except OSError:
            pids = []
        return pids or [pid]

    def peak_rss_mib(self) -> float:
        """The largest VmHWM (peak resident set) among the serving processes, MiB."""
        return round(max(peak_rss_kib(pid) for pid in self.worker_pids()) / 1024, 1)

    def cpu_s(self) -> float:
        """User + system CPU seconds used so far by the serving processes."""
        return sum(cpu_seconds(pid) for pid in self.worker_pids())


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmHWM for pid {pid}")


def cpu_seconds(pid: int) -> float:
    # /proc/<pid>/stat: utime and stime are fields 14 and 15, after the "(comm)" field
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(target: str, source: Path, env: Mapping[str, str], log_dir: Path) -> Server:
    """Serve ``target`` from ``source``, in its own process group.

    A Ctrl-C then reaches the benchmark only, which stops the server on its way out, and
    a server that will not stop is killed together with its gunicorn worker.
    """
    return Server.start(target, source=source, env=env, cwd=ROOT, log_dir=log_dir, own_group=True)


@contextlib.contextmanager
def function_server(
    target: str, source: Path, env: Mapping[str, str], log_dir: Path
) -> Iterator[Server]:
    """Serve ``target`` from ``source`` (``start_server``); stop it on the way out."""
    server = start_server(target, source, env, log_dir)
    try:
        yield server
    finally:
        server.stop()


class ServerPool(contextlib.AbstractContextManager["ServerPool"]):
    """Any number of servers (``start``), all stopped at once on the way out.

    At once, each in a thread of its own: a server that has served a request can take
    a second to stop (ingest's does), and ten of them in turn would take ten.
    """

    def __init__(self) -> None:
        self.servers: list[Server] = []

    def start(self, target: str, source: Path, env: Mapping[str, str], log_dir: Path) -> Server:
        server = start_server(target, source, env, log_dir)
        self.servers.append(server)
        return server

    def __exit__(self, *exc: object) -> None:
        stoppers = [threading.Thread(target=server.stop) for server in self.servers]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()
