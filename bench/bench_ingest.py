"""Ingest over real HTTP against its floor, a no-op function served the same way.

Both functions run under functions-framework on 127.0.0.1; a few client threads, each
with its own keep-alive session, POST the same HAE-like body for a fixed time. For
each body size the report gives deliveries/s and p50/p99 latency for both, and
``ratio`` = ingest throughput / no-op throughput. It also reads the ingest worker's
peak RSS (VmHWM) after each size, and after one 50 MB body in full mode: ingest streams
the body to the archive, so the peak should not follow the body's size.

    .venv/bin/python bench/bench_ingest.py [--quick]
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from _common import (
    KB,
    MB,
    ROOT,
    Server,
    clean_env,
    emit,
    exit_on_sigterm,
    function_server,
    machine,
    metrics_body,
    ms,
    note,
    percentile,
    rounded,
)
from healthlog import tokens, wiring
from healthlog.config import Settings
from healthlog.ingest import IngestRequest, accept
from healthlog.journal.sqlite import SqliteJournal

TARGET_RATIO = 0.70
THREADS = 4
BIG_BODY = 50 * MB


@dataclass(frozen=True)
class Mode:
    sizes: tuple[tuple[str, int], ...]
    # Each (server, size) case is timed in ``slices`` slices of ``duration_s``, the
    # no-op's and ingest's taking turns, so that a slow spell of a shared machine
    # weighs on both sides of the ratio alike.
    slices: int
    duration_s: float
    max_per_thread: int  # per slice: ...or this many requests per thread, if fewer
    warmup_per_thread: int
    big_body: bool


FULL = Mode((("100KB", 100 * KB), ("5MB", 5 * MB)), 4, 2.0, 100_000, 1, True)
QUICK = Mode((("100KB", 100 * KB), ("5MB", 5 * MB)), 1, 2.0, 3, 1, False)


@dataclass
class Run:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    server_cpu_s: float = 0.0

    def add(self, other: Run) -> None:
        self.latencies.extend(other.latencies)
        self.errors.extend(other.errors)
        self.seconds += other.seconds
        self.server_cpu_s += other.server_cpu_s

    def as_dict(self, body_bytes: int) -> dict[str, Any]:
        done = len(self.latencies)
        rate = done / self.seconds if self.seconds else 0.0
        return {
            "requests": done,
            "errors": len(self.errors),
            # what went wrong, each kind once with its count: a reply's status and the
            # start of its text (ingest's texts name the reason, never the data)
            "error_kinds": dict(Counter(self.errors).most_common(5)),
            "seconds": rounded(self.seconds),
            "deliveries_per_s": rounded(rate, 2),
            "mb_per_s": rounded(rate * body_bytes / MB, 1),
            "p50_ms": ms(percentile(self.latencies, 50)),
            "p99_ms": ms(percentile(self.latencies, 99)),
            # user + system CPU of the serving process, per request: what a delivery
            # costs the server, whatever the client and the disk did meanwhile
            "server_cpu_ms_per_request": ms(self.server_cpu_s / done) if done else 0.0,
        }


def hammer(server: Server, body: bytes, headers: dict[str, str], mode: Mode) -> Run:
    """``THREADS`` clients POST ``body`` until the time or the count is up."""
    run = Run()
    lock = threading.Lock()
    started: list[float] = []
    cpu_at_start: list[float] = []

    def start() -> None:
        cpu_at_start.append(server.cpu_s())
        started.append(time.perf_counter())

    barrier = threading.Barrier(THREADS, action=start)

    def client() -> None:
        with requests.Session() as session:
            try:
                for _ in range(mode.warmup_per_thread):
                    post(session)
            except Exception as exc:
                with lock:
                    run.errors.append(f"warmup: {exc!r}")
            barrier.wait()
            deadline = started[0] + mode.duration_s
            mine: list[float] = []
            while len(mine) < mode.max_per_thread and time.perf_counter() < deadline:
                t0 = time.perf_counter()
                try:
                    post(session)
                except Exception as exc:
                    with lock:
                        run.errors.append(repr(exc))
                    continue
                mine.append(time.perf_counter() - t0)
            with lock:
                run.latencies.extend(mine)

    def post(session: requests.Session) -> None:
        reply = session.post(server.url, data=body, headers=headers, timeout=120)
        if reply.status_code != 200:
            raise RuntimeError(f"HTTP {reply.status_code}: {reply.text[:200]}")

    threads = [threading.Thread(target=client, name=f"client-{i}") for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    run.seconds = time.perf_counter() - started[0]
    run.server_cpu_s = server.cpu_s() - cpu_at_start[0]
    if run.errors:
        note(f"{len(run.errors)} errors, first: {run.errors[0]}")
    if not run.latencies:
        raise RuntimeError(f"no request succeeded against {server.url}: {run.errors[:1]}")
    return run


def post_once(
    session: requests.Session, server: Server, body: bytes, headers: dict[str, str]
) -> float:
    """One POST of ``body``; its latency in seconds."""
    t0 = time.perf_counter()
    reply = session.post(server.url, data=body, headers=headers, timeout=300)
    if reply.status_code != 200:
        raise RuntimeError(f"HTTP {reply.status_code}: {reply.text[:200]}")
    return time.perf_counter() - t0


def prepare_journal(folder: Path) -> tuple[Path, str]:
    """A migrated journal holding one account; its path and the account's token."""
    path = folder / "j.db"
    journal = SqliteJournal(str(path))
    try:
        journal.migrate()
        token = tokens.new_token()
        journal.add_account("bench", tokens.hash_token(token))
    finally:
        journal.close()
    return path, token


def sequential_probe(
    source: Path,
    env: dict[str, str],
    folder: Path,
    bodies: list[tuple[str, bytes, int]],
    headers: dict[str, str],
) -> dict[str, float]:
    """Peak RSS of a fresh server fed growing bodies on one connection, one at a time."""
    with function_server("ingest", source, env, folder) as server:
        peaks = {"after_start": server.peak_rss_mib()}
        with requests.Session() as session:
            for label, body, times in bodies:
                for _ in range(times):
                    post_once(session, server, body, headers)
                peaks[f"after_{label}"] = server.peak_rss_mib()
    return peaks


def python_peak_kib(journal_path: Path, archive: Path, token: str, body: bytes) -> float:
    """The most Python memory one ``accept`` of ``body`` holds at once (tracemalloc), KiB.

    In process, through the real wiring, the body read from memory in the server's
    chunks: what ingest itself keeps while it streams, apart from the HTTP server and
    from the C allocator's habits that VmHWM also sees.
    """
    settings = Settings.from_env(
        {}, journal_url=f"sqlite:///{journal_path}", archive_url=f"file://{archive}"
    )
    deps = wiring.ingest_deps(settings)
    try:
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

        def request(raw: bytes) -> IngestRequest:
            return IngestRequest(headers, len(raw), io.BytesIO(raw).read)

        accept(deps, request(b'{"data": {}}'))  # connections, caches: not the body's
        stream = request(body)  # BytesIO shares the body's buffer: nothing traced
        tracemalloc.start()
        try:
            reply = accept(deps, stream)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        deps.journal.close()
    if reply.status != 200:
        raise RuntimeError(f"in-process ingest answered {reply.status}: {reply.body[:200]}")
    return round(peak / 1024, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a handful of requests per case")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    mode = QUICK if args.quick else FULL

    bodies = {label: metrics_body(size) for label, size in mode.sizes}
    big = metrics_body(BIG_BODY) if mode.big_body else b""
    report: dict[str, Any] = {
        "benchmark": "ingest",
        "mode": "quick" if args.quick else "full",
        "machine": machine(),
        "client_threads": THREADS,
        "seconds_per_case": mode.slices * mode.duration_s,
        "target_ratio": TARGET_RATIO,
    }
    results: dict[str, dict[str, Any]] = {
        label: {"body_bytes": len(body)} for label, body in bodies.items()
    }
    # VmHWM of the gunicorn worker after each run (the runs above: 4 client threads)
    server_peak: dict[str, float] = {}
    noop_peak: dict[str, float] = {}
    memory: dict[str, Any] = {}

    with tempfile.TemporaryDirectory(prefix="healthlog-bench-ingest-") as tmp:
        folder = Path(tmp)
        journal_path, token = prepare_journal(folder)
        headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "automation-name": "bench",
            "session-id": "bench-session",
        }
        ingest_env = clean_env(
            {
                "HEALTHLOG_JOURNAL_URL": f"sqlite:///{journal_path}",
                "HEALTHLOG_ARCHIVE_URL": f"file://{folder / 'archive'}",
            }
        )
        ingest_source = ROOT / "functions" / "ingest" / "main.py"

        with (
            function_server(
                "noop", ROOT / "bench" / "noop_function.py", clean_env({}), folder
            ) as noop,
            function_server("ingest", ingest_source, ingest_env, folder) as server,
        ):
            noop_peak["after_start"] = noop.peak_rss_mib()
            server_peak["after_start"] = server.peak_rss_mib()
            for label, body in bodies.items():
                note(f"{label}: no-op and ingest, {mode.slices} turns each")
                runs = {"noop": Run(), "ingest": Run()}
                for _ in range(mode.slices):
                    runs["noop"].add(hammer(noop, body, headers, mode))
                    runs["ingest"].add(hammer(server, body, headers, mode))
                for side, run in runs.items():
                    results[label][side] = run.as_dict(len(body))
                noop_peak[f"after_{label}"] = noop.peak_rss_mib()
                server_peak[f"after_{label}"] = server.peak_rss_mib()
            if big:
                note("ingest, one 50 MB body")
                with requests.Session() as session:
                    latency = post_once(session, server, big, headers)
                report["big_body"] = {"body_bytes": len(big), "ms": ms(latency)}
                server_peak["after_50MB"] = server.peak_rss_mib()

        sized = [*bodies.items(), *([("50MB", big)] if big else [])]
        if big:
            # a fresh server, one connection, one request at a time, growing bodies: does
            # the peak follow the body when concurrency does not change?
            note("ingest, growing bodies one at a time")
            counts = {"100KB": 20, "5MB": 5, "50MB": 1}
            sequence = [(label, body, counts.get(label, 1)) for label, body in sized]
            memory["server_peak_rss_mib_one_at_a_time"] = sequential_probe(
                ingest_source, ingest_env, folder, sequence, headers
            )
        note("ingest in process, tracemalloc")
        memory["python_peak_kib_per_delivery"] = {
            label: python_peak_kib(journal_path, folder / "archive", token, body)
            for label, body in sized
        }

    for result in results.values():
        noop_rate = result["noop"]["deliveries_per_s"]
        result["ratio"] = rounded(result["ingest"]["deliveries_per_s"] / noop_rate)
        # the same comparison in server CPU per request: steadier on a busy machine, and
        # the ratio throughput tends to when the server's one core is the bottleneck
        noop_cpu = result["noop"]["server_cpu_ms_per_request"]
        ingest_cpu = result["ingest"]["server_cpu_ms_per_request"]
        result["cpu_ratio"] = rounded(noop_cpu / ingest_cpu) if ingest_cpu else 0.0
    report["sizes"] = results
    first = f"after_{mode.sizes[0][0]}"
    for label in (mode.sizes[-1][0], "50MB"):
        if f"after_{label}" in server_peak:
            growth = server_peak[f"after_{label}"] - server_peak[first]
            server_peak[f"growth_{label}_over_{mode.sizes[0][0]}"] = rounded(growth, 1)
    report["ingest_memory"] = {
        "server_peak_rss_mib": server_peak,
        **memory,
        "noop_peak_rss_mib": noop_peak,
    }
    report["meets_target"] = all(r["ratio"] >= TARGET_RATIO for r in results.values())
    emit(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
