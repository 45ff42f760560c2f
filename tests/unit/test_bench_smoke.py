"""The benchmarks run: each, in ``--quick`` mode, prints one JSON object with its figures.

No timing is asserted here (a shared CI machine makes any threshold flaky); the figures
only have to be there and be positive.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REQUIRE_POSTGRES

# a subprocess per benchmark, seconds each: `make test` runs them, `make fast` does not
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def run_quick(name: str, *flags: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / f"bench_{name}.py"), "--quick", *flags],
        cwd=ROOT,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    # json.loads refuses anything after the first value: exactly one object on stdout
    report = json.loads(done.stdout)
    assert isinstance(report, dict)
    assert report["benchmark"] == name
    assert report["mode"] == "quick"
    return report


def at(report: dict[str, Any], path: str) -> Any:
    value: Any = report
    for part in path.split("."):
        assert isinstance(value, dict) and part in value, f"{path} missing from the report"
        value = value[part]
    return value


def assert_positive(report: dict[str, Any], *paths: str) -> None:
    for path in paths:
        value = at(report, path)
        assert isinstance(value, int | float) and not isinstance(value, bool), path
        assert value > 0, f"{path} = {value}"


def test_ingest_benchmark_reports_both_servers_and_the_memory_of_ingest() -> None:
    """Per body size: throughput and latency of ingest and of both floors (the no-op and
    the physical one), their ratios, on SQLite and PostgreSQL, with 1 and 2 server
    processes; the memory of ingest; and the profile of its accept."""
    report = run_quick("ingest", "--profile")
    assert set(report["sizes"]) == {"100KB", "5MB"}
    postgres = report["postgres"]
    if "skipped" in postgres and not REQUIRE_POSTGRES:
        print(f"postgres not measured: {postgres['skipped']}")
    figures = {"sizes": report["sizes"]}
    if "skipped" not in postgres or REQUIRE_POSTGRES:
        assert set(at(report, "postgres.sizes")) == {"100KB", "5MB"}
        figures["postgres.sizes"] = postgres["sizes"]
    for where, sizes in figures.items():
        for size, result in sizes.items():
            for side in ("ingest", "noop", "physical"):
                if side not in result:
                    continue  # PostgreSQL's entry holds ingest only: its floors are above
                assert_positive(
                    report,
                    *(
                        f"{where}.{size}.{side}.{key}"
                        for key in ("requests", "deliveries_per_s", "p50_ms", "p99_ms")
                    ),
                )
                errors = at(report, f"{where}.{size}.{side}.errors")
                assert errors == 0, at(report, f"{where}.{size}.{side}.error_kinds")
            assert_positive(
                report,
                *(
                    f"{where}.{size}.{key}"
                    for key in ("ratio", "ratio_to_physical", "p99_ratio", "p99_ratio_to_physical")
                ),
            )
        assert_positive(report, "sizes.5MB.body_bytes")
    processes = report["processes"]
    assert processes["counts"] == [1, 2]
    kinds = ["noop", "physical", "sqlite", *(["postgres"] if len(figures) == 2 else [])]
    for size in processes["sizes"]:
        assert set(processes["sizes"][size]) == set(kinds)
        for kind in kinds:
            for n in ("1", "2"):
                where = f"processes.sizes.{size}.{kind}.{n}"
                assert_positive(report, f"{where}.deliveries_per_s", f"{where}.scaling")
                assert at(report, f"{where}.errors") == 0
    assert report["profile_top"]["100KB"] and report["profile_top"]["5MB"]
    for entries in report["profile_top"].values():
        assert all(entry["function"] and entry["share"] > 0 for entry in entries)
    assert_positive(
        report,
        "ingest_memory.server_peak_rss_mib.after_100KB",
        "ingest_memory.server_peak_rss_mib.after_5MB",
        "ingest_memory.python_peak_kib_per_delivery.5MB",
        "ingest_memory.noop_peak_rss_mib.after_5MB",
        "in_process.threads_1.deliveries_per_s",
        "in_process.threads_4.deliveries_per_s",
        "in_process.threads_4.cpu_ms_per_delivery",
        "in_process.scaling",
    )
    one, four = at(report, "in_process.threads_1"), at(report, "in_process.threads_4")
    assert one["deliveries"] == four["deliveries"] > 0
    assert one["errors"] == four["errors"] == 0
    assert isinstance(report["meets_target"], bool)


def test_fold_benchmark_reports_the_fold_against_its_floor() -> None:
    """Points, fold and floor times and rates, their ratio, and the parser's share."""
    report = run_quick("fold")
    assert_positive(
        report,
        "points",
        "fold_s",
        "fold_points_per_s",
        "floor_s",
        "floor_points_per_s",
        "ratio",
        "fold_breakdown.parse_s",
    )
    assert isinstance(report["meets_target"], bool)


def test_pending_benchmark_reports_the_lookup_at_both_sizes() -> None:
    """Median and p99 of a page lookup for a small and a large journal, and the plan."""
    report = run_quick("pending")
    assert set(report["sizes"]) == {"1000", "20000"}
    for size in report["sizes"]:
        for cursor in ("zero_cursor", "mid_cursor"):
            where = f"sizes.{size}.{cursor}"
            assert_positive(report, f"{where}.median_us", f"{where}.p99_us")
            assert at(report, f"{where}.rows") == 100
    assert_positive(report, "ratio_large_to_small", "ratio_large_to_small_mid_cursor")
    # the lookup goes through an index, not a scan of the table
    assert "SEARCH" in report["query_plan"]


def test_dashboard_benchmark_times_every_read_a_page_makes_against_a_scan_floor() -> None:
    report = run_quick("dashboard")
    assert report["points_sent"] > 50_000
    # every late point the benchmark sent, and no other, is found by coverage
    assert report["late_points_found"] == report["late_points_sent"] > 0
    assert_positive(report, "floor_full_scan_s", "build_s")
    assert set(report["seconds"]) == {
        "overview", "catalog", "resting_heart_rate_per_day", "heart_rate_year_auto",
        "heart_rate_last_day_auto", "sleep_last_month", "workouts_last_week",
        "one_workout_with_route", "coverage_every_metric",
        "steps_all_minutes_refused", "heart_rate_all_minutes_refused",
        "steps_most_hours_two_sources", "heart_rate_most_hours", "heart_rate_raw_year",
    }  # fmt: skip
    assert all(v > 0 for v in report["seconds"].values())
    assert all(v > 0 for v in report["answer_chars"].values())
    assert report["slowest"] in report["seconds"]
    # peak RSS per read and 8 heavy requests at once, each answered or told "busy"
    assert set(report["peak_rss_mib"]) == set(report["seconds"])
    assert all(v is None or v > 0 for v in report["peak_rss_mib"].values())
    at_once = report["at_once"]
    assert at_once["requests"] == 8 and at_once["answered"] + at_once["busy"] == 8
    assert at_once["other"] == 0 and at_once["answered"] >= 2


def test_applehealth_benchmark_reads_two_sizes_against_a_bare_iterparse() -> None:
    report = run_quick("applehealth")
    small, big = report["cases"]
    assert 0 < small["xml_mb"] < big["xml_mb"]
    for case in (small, big):
        assert case["points"] > 0 and case["elements"] > 0
        assert case["floor_elements_per_s"] > 0 and case["reader_elements_per_s"] > 0
        assert case["reader_peak_rss_mb"] > 0


def test_scale_benchmark_folds_into_an_empty_and_a_full_store_on_both_backends() -> None:
    report = run_quick("scale")
    for backend in ("sqlite", "postgres"):
        found = report[backend]
        if backend == "postgres" and "unavailable" in found and not REQUIRE_POSTGRES:
            print(f"postgres not measured: {found['unavailable']}")
            continue
        assert found["history_points"] > 50_000
        assert found["fold_empty_s"] > 0 and found["fold_full_s"] > 0
        assert found["ratio"] > 0 and found["bytes_per_point"] > 0


def test_import_benchmark_reports_the_whole_import_against_a_parse_and_insert_floor() -> None:
    """Two sizes: records/s of the import and of its floor, their ratio, and peak RSS."""
    report = run_quick("import")
    small, big = report["cases"]
    assert 0 < small["xml_mb"] < big["xml_mb"]
    for case in (small, big):
        assert case["records"] > 0 and case["points"] == case["showcase_rows"] > 0
        assert case["steps"] >= 1
        for key in ("import_s", "import_records_per_s", "floor_s", "floor_records_per_s",
                    "ratio", "import_peak_rss_mb", "floor_peak_rss_mb"):  # fmt: skip
            assert case[key] > 0, key
        assert case["reader_peak_rss_mb"] >= 0  # 0: read in the import's own process
        assert set(case["import_breakdown_s"]) == {"check_and_archive", "fold"}
        assert set(case["floor_breakdown_s"]) == {"iterparse", "executemany"}
    assert report["ratio"] == big["ratio"]
    assert isinstance(report["rss_growth_mb"], int | float)
    assert isinstance(report["reader_rss_growth_mb"], int | float)
    assert isinstance(report["meets_target"], bool)


def test_read_benchmark_times_daily_summaries_over_one_and_five_years_and_an_export() -> None:
    """Per metric: the 1-year and 5-year reads, the bare scan, their ratios; the export
    against its SELECT-and-orjson floor; a profile for what misses its target."""
    report = run_quick("read")
    assert report["backend"] == "sqlite"
    assert_positive(report, "history_points", "history_write_s", "db_bytes")
    assert set(report["summaries"]) == {"heart_rate", "step_count"}
    for metric, found in report["summaries"].items():
        where = f"summaries.{metric}"
        assert_positive(
            report,
            *(f"{where}.{span}.{key}" for span in ("1y", "5y") for key in ("s", "days", "points")),
            f"{where}.scan_1y.s",
            f"{where}.ratio_5y_to_1y",
            f"{where}.ratio_1y_to_scan",
        )
        assert found["scan_1y"]["points"] == found["1y"]["points"]
        assert found["5y"]["days"] > found["1y"]["days"]
        for target, met in found["meets_target"].items():
            assert isinstance(met, bool)
            if not met:  # what misses its target says why
                span = "5y" if target == "ratio_5y_to_1y" else "1y"
                assert found["profile"][span]["top_cumulative"]
    assert_positive(
        report, "export.points", "export.export_points_per_s", "export.floor_points_per_s",
        "export.ratio",
    )  # fmt: skip
    assert report["export"]["meets_target"] or report["export"]["profile"]["top_own"]
    assert isinstance(report["meets_target"], bool)
