"""Real HAE bodies (tests/fixtures/hae/samples, origins in SOURCES.md there) through the parser."""

from __future__ import annotations

from pathlib import Path

import pytest
from healthlog.hae import parse
from healthlog.model import Point

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "hae" / "samples"


def samples() -> list[Path]:
    # collected at import: a missing folder must fail loudly, not collect zero tests
    if not SAMPLES.is_dir():
        pytest.fail(
            f"the HAE samples are missing: expected them at {SAMPLES} "
            "(tests/fixtures/hae/samples in the repository)",
            pytrace=False,
        )
    return sorted(SAMPLES.glob("*.json"))


# file name -> how many Points its metrics give (workouts give Records, see below)
POINTS = {
    "metrics_active-energy-kJ_empty-metric_2021_irvinlim-test.json": 2,
    "metrics_step-count_minute-agg_2021_ivailop7-sample.json": 6,
    # asleep, inBed
    "sleep_aggregated_pre-6.6.2_sleepSource-inBedSource_2021_irvinlim-test.json": 2,
    # asleep, core, deep, rem, awake, inBed
    "sleep_aggregated_v6.6.2-phases_pipe-joined-source_2023_irvinlim-test.json": 6,
    "sleep_unaggregated_single-segment_2021_irvinlim-test.json": 1,
    "workouts_v1_walking_hr-data-recovery_HAE-8.1.2_inner-data-object_workouts-to-ical.json": 0,
    "workouts_v1_walking_route-latlon_elevation_2021_irvinlim-test.json": 0,
}


def test_every_sample_has_an_expectation_here() -> None:
    assert {p.name for p in samples()} == set(POINTS), "a sample was added or renamed"


@pytest.mark.parametrize("path", samples(), ids=lambda p: p.name)
def test_every_sample_parses(path: Path) -> None:
    result = parse(path.read_bytes())
    assert len(result.points) == POINTS.get(path.name)
    # every section of every real body is covered: each folds to ``parsed``
    assert result.uncovered == ()
    if path.name.startswith("workouts_"):
        assert [r.section for r in result.records] == ["workouts"]


def read(name: str) -> list[Point]:
    return parse((SAMPLES / name).read_bytes()).points


def test_minute_active_energy_in_kilojoules_is_stored_in_kcal_with_what_was_sent() -> None:
    first, _ = read("metrics_active-energy-kJ_empty-metric_2021_irvinlim-test.json")
    assert first == Point(
        metric="active_energy",
        field="qty",
        source="",
        start="2021-12-23T16:04:00.000000Z",
        utc_offset=480,
        end=None,
        qty=0.76856774374845116 / 4.184,
        text=None,
        unit="kcal",
        extra='{"sent_qty":0.7685677437484512,"sent_unit":"kJ"}',
    )


def test_step_counts_keep_their_order_and_fractional_values() -> None:
    points = read("metrics_step-count_minute-agg_2021_ivailop7-sample.json")
    assert [(p.start[11:16], p.qty) for p in points] == [
        ("00:01", 34.0),
        ("00:51", 25.0),
        ("01:13", 8.2796763649358063),
        ("01:14", 17.719295979506633),
        ("01:15", 17.719295979506636),
        ("01:16", 7.2817316760509208),
    ]


def test_sleep_before_6_6_2_keeps_its_window_and_sources_in_extra() -> None:
    asleep, in_bed = read(
        "sleep_aggregated_pre-6.6.2_sleepSource-inBedSource_2021_irvinlim-test.json"
    )
    assert (asleep.field, asleep.qty, in_bed.field, in_bed.qty) == (
        "asleep",
        6.108333333333333,
        "inBed",
        6.809728874299261,
    )
    assert asleep.source == "Irvin’s Apple Watch"  # from sleepSource: no ``source`` then
    assert asleep.extra == (
        '{"inBedEnd":"2021-12-18 09:04:45 +0800","inBedSource":"iPhone",'
        '"inBedStart":"2021-12-18 02:12:50 +0800","sleepEnd":"2021-12-18 08:57:06 +0800",'
        '"sleepSource":"Irvin’s Apple Watch","sleepStart":"2021-12-18 02:21:06 +0800"}'
    )


def test_staged_sleep_keeps_the_pipe_joined_source_as_sent() -> None:
    points = read("sleep_aggregated_v6.6.2-phases_pipe-joined-source_2023_irvinlim-test.json")
    assert {p.source for p in points} == {"Irvin's iPhone|Irvin’s Apple Watch"}
    assert {p.start for p in points} == {"2023-01-30T18:44:02.000000Z"}
    assert [(p.field, p.unit) for p in points] == [
        (f, "hr") for f in ("asleep", "core", "deep", "rem", "awake", "inBed")
    ]


def test_an_unaggregated_segment_with_null_date() -> None:
    (segment,) = read("sleep_unaggregated_single-segment_2021_irvinlim-test.json")
    assert segment == Point(
        "sleep_analysis",
        "segment",
        "Irvin's Apple Watch",
        "2021-12-17T18:21:06.000000Z",
        480,
        "2021-12-18T00:57:06.000000Z",
        6.108333333333333,
        "Core",
        "hr",
        None,
    )
