"""Ingest over real HTTP against two floors, functions served the same way.

Every server runs ``python -m healthlog.local.server`` on 127.0.0.1; a few client threads,
each with its own keep-alive session, POST the same HAE-like body for a fixed time. The
servers, for each body size:

* ``noop``: ``noop_function.py``, reads the body and throws it away (the HTTP floor);
* ``physical``: ``durable_noop_function.py``, the no-op plus the durable writes ingest
  owes before its 200 (the body's file written and fsynced with its folder, one fsynced
  append to an append-only file): the floor the disk sets;
* ``ingest`` on a SQLite journal and the local archive, and the same ingest on a fresh
  PostgreSQL database (``postgres``; skipped, with the reason, when the server cannot be
  reached).

The report gives deliveries/s and p50/p99 latency for each, ``ratio`` (ingest ÷ no-op
throughput), ``ratio_to_physical`` (ingest ÷ physical floor) and the p99 ratios; then
the same with 2 and 4 server processes of each kind over one journal and archive, the
client threads spread round-robin over them (``processes``, with ``scaling`` =
throughput at N ÷ at 1). It also reads the ingest worker's peak RSS (VmHWM) after each
size, and after one 50 MB body in full mode: ingest streams the body to the archive, so
the peak should not follow the body's size. ``in_process`` runs ingest's ``accept`` in
this process through the real wiring (SQLite), by one thread and by as many threads as
there are clients, with no HTTP around it: what ingest's own work allows, and whether
threads of one server that write at once get in each other's way. ``--profile`` runs
``accept`` in process under cProfile and reports where its time goes.

    .venv/bin/python bench/bench_ingest.py [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from _common import (
    KB,
    MB,
    ROOT,
    Server,
    ServerPool,
    Stopwatch,
    clean_env,
    emit,
    exit_on_sigterm,
    function_server,
    machine,
    metrics_body,
    ms,
    note,
    percentile,
    pg_database,
    pg_unreachable,
    ranked_functions,
    rounded,
)
from healthlog import tokens
from healthlog.config import Settings
from healthlog.ingest import IngestRequest, Reply, accept
from healthlog.ops import wiring

TARGET_RATIO = 0.70
#: ingest's p99 may be at most this many times the no-op's
TARGET_P99_RATIO = 2.0
THREADS = 4
BIG_BODY = 50 * MB
INGEST_SOURCE = ROOT / "functions" / "ingest" / "main.py"
FLOORS = {
    "noop": ROOT / "bench" / "noop_function.py",
    "physical": ROOT / "bench" / "durable_noop_function.py",
}
#: the journals ingest is measured on; the PostgreSQL one when the server answers
JOURNALS = ("sqlite", "postgres")
#: how many functions the profile lists, and of how many deliveries of each size
PROFILE_TOP = 8


@dataclass(frozen=True)
class Mode:
    sizes: tuple[tuple[str, int], ...]
    # Each (server, size) case is timed in ``slices`` slices of ``duration_s``, the
    # servers taking turns, so that a slow spell of a shared machine weighs on every
    # side of a ratio alike.
    slices: int
    duration_s: float
    max_per_thread: int  # per slice: ...or this many requests per thread, if fewer
    warmup_per_thread: int
    big_body: bool
    # server processes of each kind beyond the first, and the sizes and slices they get
    processes: tuple[int, ...]
    scaling_sizes: tuple[str, ...]
    scaling_slices: int
    # deliveries per size that the in-process profile runs
    profile_deliveries: dict[str, int]
    # deliveries of the first size in process, by one thread and by THREADS at once
    in_process_deliveries: int = 1200


FULL = Mode(
    (("100KB", 100 * KB), ("5MB", 5 * MB)), 4, 2.0, 100_000, 1, True,
    (1, 2, 4), ("100KB", "5MB"), 2, {"100KB": 300, "5MB": 12},
)  # fmt: skip
QUICK = Mode(
    (("100KB", 100 * KB), ("5MB", 5 * MB)), 1, 2.0, 3, 1, False,
    (1, 2), ("100KB",), 1, {"100KB": 5, "5MB": 2}, 40,
)  # fmt: skip


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
            # user + system CPU of the serving processes, per request: what a delivery
            # costs the servers, whatever the client and the disk did meanwhile
            "server_cpu_ms_per_request": ms(self.server_cpu_s / done) if done else 0.0,
        }


def hammer(servers: list[Server], body: bytes, headers: dict[str, str], mode: Mode) -> Run:
    """``THREADS`` clients, spread round-robin over ``servers``, POST ``body`` until the
    time or the count is up."""
    run = Run()
    lock = threading.Lock()
    started: list[float] = []
    cpu_at_start: list[float] = []

    def cpu_s() -> float:
        return sum(server.cpu_s() for server in servers)

    def start() -> None:
        cpu_at_start.append(cpu_s())
        started.append(time.perf_counter())

    barrier = threading.Barrier(THREADS, action=start)

    def client(server: Server) -> None:
        with requests.Session() as session:
            try:
                for _ in range(mode.warmup_per_thread):
                    post_once(session, server, body, headers)
            except Exception as exc:
                with lock:
                    run.errors.append(f"warmup: {exc!r}")
            barrier.wait()
            deadline = started[0] + mode.duration_s
            mine: list[float] = []
            while len(mine) < mode.max_per_thread and time.perf_counter() < deadline:
                try:
                    mine.append(post_once(session, server, body, headers))
                except Exception as exc:
                    with lock:
                        run.errors.append(repr(exc))
            with lock:
                run.latencies.extend(mine)

    threads = [
        threading.Thread(target=client, args=(servers[i % len(servers)],), name=f"client-{i}")
        for i in range(THREADS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    run.seconds = time.perf_counter() - started[0]
    run.server_cpu_s = cpu_s() - cpu_at_start[0]
    if run.errors:
        note(f"{len(run.errors)} errors, first: {run.errors[0]}")
    if not run.latencies:
        raise RuntimeError(f"no request succeeded against {servers[0].url}: {run.errors[:1]}")
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


def prepare_journal(journal_url: str, token: str) -> None:
    """Migrate the journal at ``journal_url`` and give it one account, ``token``'s."""
    journal = wiring.open_journal(Settings.from_env({}, journal_url=journal_url))
    try:
        journal.migrate()
        journal.add_account("bench", tokens.hash_token(token))
    finally:
        journal.close()


def sequential_probe(
    env: dict[str, str],
    folder: Path,
    bodies: list[tuple[str, bytes, int]],
    headers: dict[str, str],
) -> dict[str, float]:
    """Peak RSS of a fresh server fed growing bodies on one connection, one at a time."""
    with function_server("ingest", INGEST_SOURCE, env, folder) as server:
        peaks = {"after_start": server.peak_rss_mib()}
        with requests.Session() as session:
            for label, body, times in bodies:
                for _ in range(times):
                    post_once(session, server, body, headers)
                peaks[f"after_{label}"] = server.peak_rss_mib()
    return peaks


@contextlib.contextmanager
def in_process(journal_url: str, archive: Path, token: str) -> Iterator[Callable[[bytes], Reply]]:
    """``accept`` in this process through the real wiring: a function of a body.

    The body is read from memory in the server's chunks (``BytesIO`` shares the body's
    buffer); one small delivery first opens the connections and fills the caches.
    """
    settings = Settings.from_env({}, journal_url=journal_url, archive_url=f"file://{archive}")
    deps = wiring.ingest_deps(settings)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def deliver(raw: bytes) -> Reply:
        reply = accept(deps, IngestRequest(headers, len(raw), io.BytesIO(raw).read))
        if reply.status != 200:
            raise RuntimeError(f"in-process ingest answered {reply.status}: {reply.body[:200]}")
        return reply

    try:
        deliver(b'{"data": {}}')
        yield deliver
    finally:
        deps.journal.close()


def threaded(deliver: Callable[[bytes], Reply], body: bytes, threads: int, count: int) -> Run:
    """``count`` deliveries of ``body`` in process, ``threads`` threads delivering at once."""
    run = Run()
    lock = threading.Lock()
    barrier = threading.Barrier(threads + 1)

    def deliverer() -> None:
        mine, failed = [], []
        barrier.wait()
        for _ in range(count // threads):
            t0 = time.perf_counter()
            try:
                deliver(body)
            except Exception as exc:  # counted in the report, as the HTTP clients' are
                failed.append(repr(exc)[:200])
                continue
            mine.append(time.perf_counter() - t0)
        with lock:
            run.latencies.extend(mine)
            run.errors.extend(failed)

    workers = [threading.Thread(target=deliverer) for _ in range(threads)]
    for t in workers:
        t.start()
    barrier.wait()
    with Stopwatch() as sw:
        for t in workers:
            t.join()
    run.seconds, run.server_cpu_s = sw.s, sw.cpu_s
    return run


def in_process_report(deliver: Callable[[bytes], Reply], body: bytes, mode: Mode) -> dict[str, Any]:
    """Deliveries/s in process by 1 and by THREADS threads, two alternating turns each."""
    runs = {1: Run(), THREADS: Run()}
    for _ in range(2):
        for threads, total in runs.items():
            total.add(threaded(deliver, body, threads, mode.in_process_deliveries // 2))
    out: dict[str, Any] = {}
    for threads, run in runs.items():
        found = run.as_dict(len(body))
        out[f"threads_{threads}"] = {
            "deliveries": len(run.latencies),
            "errors": found["errors"],
            "deliveries_per_s": found["deliveries_per_s"],
            "p99_ms": found["p99_ms"],
            "cpu_ms_per_delivery": found["server_cpu_ms_per_request"],
        }
    one, many = out["threads_1"], out[f"threads_{THREADS}"]
    out["scaling"] = rounded(many["deliveries_per_s"] / one["deliveries_per_s"])
    return out


def python_peak_kib(deliver: Callable[[bytes], Reply], body: bytes) -> float:
    """The most Python memory one ``accept`` of ``body`` holds at once (tracemalloc), KiB.

    What ingest itself keeps while it streams, apart from the HTTP server and from the
    C allocator's habits that VmHWM also sees.
    """
    tracemalloc.start()
    try:
        deliver(body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return round(peak / 1024, 1)


def profile(deliver: Callable[[bytes], Reply], body: bytes, times: int) -> dict[str, Any]:
    """``times`` in-process deliveries of ``body`` under cProfile (wall clock), one at a
    time: their cost, and the functions that take the most of it, cumulative and own."""
    profiler = cProfile.Profile()
    with Stopwatch() as sw:
        profiler.enable()
        for _ in range(times):
            deliver(body)
        profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stderr)
    total = stats.total_tt  # type: ignore[attr-defined]
    table = stats.stats  # type: ignore[attr-defined]

    stats.sort_stats("cumulative").print_stats(20)
    stats.sort_stats("tottime").print_stats(12)
    return {
        "deliveries": times,
        # the profiler's own overhead is in these: read them against each other
        "wall_ms_per_delivery": ms(sw.s / times),
        "cpu_ms_per_delivery": ms(sw.cpu_s / times),
        "top_cumulative": ranked_functions(table, 3, total, PROFILE_TOP),
        "top_own": ranked_functions(table, 2, total, PROFILE_TOP),
    }


def ratios(result: dict[str, Any], side: str) -> dict[str, float]:
    """``side``'s throughput and p99 against the floors measured beside it, and its CPU."""
    noop, physical, run = result["noop"], result["physical"], result[side]
    rate = run["deliveries_per_s"]
    cpu = run["server_cpu_ms_per_request"]
    return {
        "ratio": rounded(rate / noop["deliveries_per_s"]),
        "ratio_to_physical": rounded(rate / physical["deliveries_per_s"]),
        "p99_ratio": rounded(run["p99_ms"] / noop["p99_ms"]),
        "p99_ratio_to_physical": rounded(run["p99_ms"] / physical["p99_ms"]),
        # the same comparison in server CPU per request: steadier on a busy machine,
        # and the ratio throughput tends to when the server's core is the bottleneck
        "cpu_ratio": rounded(noop["server_cpu_ms_per_request"] / cpu) if cpu else 0.0,
    }


def measure(
    pools: dict[str, list[Server]],
    bodies: dict[str, bytes],
    headers: dict[str, str],
    mode: Mode,
    slices: int,
) -> dict[str, dict[str, Any]]:
    """Each size against each kind of server, the kinds taking turns ``slices`` times."""
    results: dict[str, dict[str, Any]] = {}
    for label, body in bodies.items():
        n = len(pools["noop"])
        note(f"{label}, {n} process(es) each: {', '.join(pools)}, {slices} turns each")
        runs = {kind: Run() for kind in pools}
        for _ in range(slices):
            for kind, servers in pools.items():
                runs[kind].add(hammer(servers, body, headers, mode))
        result: dict[str, Any] = {kind: run.as_dict(len(body)) for kind, run in runs.items()}
        for kind in pools:
            if kind not in FLOORS:
                result[kind] |= ratios(result, kind)
        results[label] = result
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a handful of requests per case")
    parser.add_argument(
        "--profile", action="store_true", help="profile ingest's accept in process (cProfile)"
    )
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
        "target_p99_ratio": TARGET_P99_RATIO,
    }
    # VmHWM of the first ingest (SQLite) server after each run (4 client threads)
    server_peak: dict[str, float] = {}
    noop_peak: dict[str, float] = {}
    memory: dict[str, Any] = {}
    token = tokens.new_token()
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "automation-name": "bench",
        "session-id": "bench-session",
    }

    with (
        tempfile.TemporaryDirectory(prefix="healthlog-bench-ingest-") as tmp,
        contextlib.ExitStack() as stack,
    ):
        folder = Path(tmp)
        journal_urls = {"sqlite": f"sqlite:///{folder / 'j.db'}"}
        reason = pg_unreachable()
        if reason is None:
            journal_urls["postgres"] = stack.enter_context(pg_database())
        else:
            report["postgres"] = {"skipped": reason}
            note(f"postgres skipped: {reason}")
        envs = {kind: clean_env({"BENCH_DURABLE_DIR": str(folder / kind)}) for kind in FLOORS}
        for journal, url in journal_urls.items():
            prepare_journal(url, token)
            envs[journal] = clean_env(
                {
                    "HEALTHLOG_JOURNAL_URL": url,
                    "HEALTHLOG_ARCHIVE_URL": f"file://{folder / f'archive-{journal}'}",
                }
            )
        sources = {**FLOORS, **dict.fromkeys(journal_urls, INGEST_SOURCE)}
        targets = {"noop": "noop", "physical": "durable_noop"}

        with ServerPool() as servers:
            pools: dict[str, list[Server]] = {kind: [] for kind in sources}

            def grow(n: int) -> None:
                note(f"{n} server process(es) of each kind")
                for kind, pool in pools.items():
                    while len(pool) < n:
                        target = targets.get(kind, "ingest")
                        pool.append(servers.start(target, sources[kind], envs[kind], folder))

            grow(1)
            noop_peak["after_start"] = pools["noop"][0].peak_rss_mib()
            server_peak["after_start"] = pools["sqlite"][0].peak_rss_mib()
            results: dict[str, dict[str, Any]] = {}
            for label, body in bodies.items():
                results |= measure(pools, {label: body}, headers, mode, mode.slices)
                noop_peak[f"after_{label}"] = pools["noop"][0].peak_rss_mib()
                server_peak[f"after_{label}"] = pools["sqlite"][0].peak_rss_mib()
            if big:
                note("ingest, one 50 MB body")
                with requests.Session() as session:
                    latency = post_once(session, pools["sqlite"][0], big, headers)
                report["big_body"] = {"body_bytes": len(big), "ms": ms(latency)}
                server_peak["after_50MB"] = pools["sqlite"][0].peak_rss_mib()
            scaling = {1: {label: results[label] for label in mode.scaling_sizes}}
            for n in mode.processes[1:]:
                grow(n)
                scaled = {label: bodies[label] for label in mode.scaling_sizes}
                scaling[n] = measure(pools, scaled, headers, mode, mode.scaling_slices)

        sized = [*bodies.items(), *([("50MB", big)] if big else [])]
        if big:
            # a fresh server, one connection, one request at a time, growing bodies: does
            # the peak follow the body when concurrency does not change?
            note("ingest, growing bodies one at a time")
            counts = {"100KB": 20, "5MB": 5, "50MB": 1}
            sequence = [(label, body, counts.get(label, 1)) for label, body in sized]
            memory["server_peak_rss_mib_one_at_a_time"] = sequential_probe(
                envs["sqlite"], folder, sequence, headers
            )
        note("ingest in process, tracemalloc" + (" and cProfile" if args.profile else ""))
        with in_process(journal_urls["sqlite"], folder / "archive-sqlite", token) as deliver:
            memory["python_peak_kib_per_delivery"] = {
                label: python_peak_kib(deliver, body) for label, body in sized
            }
            first_label, first_body = next(iter(bodies.items()))
            note(f"ingest in process, {first_label}, 1 and {THREADS} threads")
            report["in_process"] = {
                "body": first_label,
                **in_process_report(deliver, first_body, mode),
            }
            if args.profile:
                report["profile"] = {
                    label: profile(deliver, bodies[label], times)
                    for label, times in mode.profile_deliveries.items()
                }
                report["profile_top"] = {
                    label: found["top_cumulative"] for label, found in report["profile"].items()
                }

    report["processes"] = processes_report(scaling)
    report["sizes"] = {
        label: {
            "body_bytes": len(bodies[label]),
            "noop": result["noop"],
            "physical": result["physical"],
            **against_floors(result["sqlite"]),
        }
        for label, result in results.items()
    }
    if "postgres" in journal_urls:
        report["postgres"] = {
            "sizes": {label: against_floors(r["postgres"]) for label, r in results.items()}
        }
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
    report["meets_target"] = all(
        r["ratio"] >= TARGET_RATIO and r["p99_ratio"] <= TARGET_P99_RATIO
        for r in report["sizes"].values()
    )
    emit(report)
    return 0


def against_floors(run: dict[str, Any]) -> dict[str, Any]:
    """An ingest run's figures under ``ingest``, its ratios to the floors beside them."""
    ratio_keys = ("ratio", "ratio_to_physical", "p99_ratio", "p99_ratio_to_physical", "cpu_ratio")
    return {
        "ingest": {k: v for k, v in run.items() if k not in ratio_keys},
        **{k: run[k] for k in ratio_keys},
    }


def processes_report(scaling: dict[int, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Per size, per kind of server, per number of processes: throughput, p99, the ratios
    to the floors beside them, and ``scaling``, the throughput over the one process's."""
    counts = sorted(scaling)
    out: dict[str, Any] = {"counts": counts, "sizes": {}}
    for label, at_one in scaling[counts[0]].items():
        per_kind: dict[str, Any] = {}
        for kind, first in at_one.items():
            per_n: dict[str, Any] = {}
            for n in counts:
                run = scaling[n][label][kind]
                brief = {k: run[k] for k in ("requests", "errors", "deliveries_per_s", "p99_ms")}
                brief["scaling"] = rounded(run["deliveries_per_s"] / first["deliveries_per_s"])
                for key in ("ratio", "ratio_to_physical"):
                    if key in run:
                        brief[key] = run[key]
                per_n[str(n)] = brief
            per_kind[kind] = per_n
        out["sizes"][label] = per_kind
    return out


if __name__ == "__main__":
    sys.exit(main())
