"""The HAE parser's first coverage: the envelope and the whole ``metrics`` section.

Fixtures in tests/fixtures/hae are written from the shapes docs/hae-format.md describes
(the app's newer shapes have no public sample body); the real bodies are exercised in
test_hae_samples.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from healthlog.errors import FoldDeadline, UnreadableBody
from healthlog.hae import dates, metrics, parse
from healthlog.hae.records import Found
from healthlog.model import ParseResult, Point
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hae"


def fixture(name: str) -> ParseResult:
    return parse((FIXTURES / name).read_bytes())


def body(document: object) -> bytes:
    return orjson.dumps(document)


def metrics_body(*items: dict[str, Any]) -> bytes:
    return body({"data": {"metrics": list(items)}})


def of(result: ParseResult, metric: str) -> list[Point]:
    return [p for p in result.points if p.metric == metric]


# --- point shapes ------------------------------------------------------------------------


def test_plain_quantity_is_one_qty_point() -> None:
    result = parse(
        metrics_body(
            {
                "name": "step_count",
                "units": "count",
                "data": [{"date": "2021-03-14 00:01:00 +0000", "qty": 34, "source": "iPhone"}],
            }
        )
    )
    assert result == ParseResult(
        points=[
            Point(
                metric="step_count",
                field="qty",
                source="iPhone",
                start="2021-03-14T00:01:00.000000Z",
                utc_offset=0,
                end=None,
                qty=34.0,
                text=None,
                unit="count",
                extra=None,
            )
        ],
        uncovered=(),
    )


def test_heart_rate_is_min_avg_max_with_context_kept_in_extra() -> None:
    result = fixture("metrics_heart_rate.json")
    assert result.uncovered == ()
    assert [(p.field, p.qty, p.source) for p in result.points] == [
        ("min", 101.0, "Ben's Apple Watch"),
        ("avg", 101.0, "Ben's Apple Watch"),
        ("max", 101.0, "Ben's Apple Watch"),
        ("min", 58.0, "Ben's Apple Watch"),
        ("avg", 72.25, "Ben's Apple Watch"),
        ("max", 131.0, "Ben's Apple Watch"),
        ("qty", 64.0, "Oura"),  # a qty-only heart rate point
    ]
    assert result.points[4] == Point(
        "heart_rate",
        "avg",
        "Ben's Apple Watch",
        "2023-06-07T02:00:00.000000Z",
        -300,
        None,
        72.25,
        None,
        "count/min",
        '{"context":"Not Set"}',
    )
    assert {p.extra for p in result.points[:3]} == {None}


def test_hae_9x_points_keep_end_and_drop_a_start_that_repeats_date() -> None:
    result = fixture("metrics_9x_start_end.json")
    assert result.uncovered == ()
    assert of(result, "heart_rate") == [
        Point(
            "heart_rate",
            field,
            "Simon's Apple Watch",
            "2024-06-01T00:00:00.000000Z",
            60,
            "2024-06-01T00:59:59.000000Z",
            value,
            None,
            "count/min",
            '{"context":"Sedentary"}',
        )
        for field, value in (("min", 52.0), ("avg", 61.5), ("max", 88.0))
    ]
    # newest first, as the app sends resting heart rate: kept as sent
    assert [(p.start, p.end, p.qty, p.extra) for p in of(result, "resting_heart_rate")] == [
        ("2024-06-01T23:00:00.000000Z", "2024-06-02T22:59:59.000000Z", 54.0, None),
        ("2024-05-31T23:00:00.000000Z", "2024-06-01T22:59:59.000000Z", 56.0, None),
    ]


def test_hae_9x_start_that_differs_from_date_goes_to_extra() -> None:
    (spo2,) = of(fixture("metrics_9x_start_end.json"), "blood_oxygen_saturation")
    assert spo2 == Point(
        "blood_oxygen_saturation",
        "qty",
        "Simon's Apple Watch",
        "2024-05-31T23:00:04.000000Z",
        60,
        "2024-05-31T23:59:59.000000Z",
        96.0,
        None,
        "%",
        '{"start":"2024-06-01 00:00:00 +0100"}',
    )


def test_hae_9x_point_without_date_is_keyed_by_its_start() -> None:
    (steps,) = of(fixture("metrics_9x_start_end.json"), "step_count")
    assert (steps.start, steps.end, steps.utc_offset, steps.extra) == (
        "2024-06-01T01:00:00.000000Z",
        "2024-06-01T01:59:59.000000Z",
        60,
        None,
    )


def test_blood_pressure_is_systolic_and_diastolic() -> None:
    result = fixture("metrics_special_shapes.json")
    assert result.uncovered == ()
    assert of(result, "blood_pressure") == [
        Point(
            "blood_pressure", f, "Omron", "2024-06-01T06:00:00.000000Z", 120, None, q, None, "mmHg"
        )
        for f, q in (("systolic", 121.0), ("diastolic", 79.0))
    ]


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        ("blood_glucose", [(97.0, "Before Meal"), (131.5, "After Meal")]),
        ("handwashing", [(21.0, "Complete")]),
        ("toothbrushing", [(95.0, "Incomplete")]),
        ("insulin_delivery", [(4.5, "Bolus"), (12.0, "Basal")]),
    ],
)
def test_enum_fields_of_special_metrics_become_text(
    metric: str, expected: list[tuple[float, str]]
) -> None:
    points = of(fixture("metrics_special_shapes.json"), metric)
    assert [(p.field, p.qty, p.text, p.extra) for p in points] == [
        ("qty", q, t, None) for q, t in expected
    ]


def test_sexual_activity_has_one_field_per_key_as_sent() -> None:
    points = of(fixture("metrics_special_shapes.json"), "sexual_activity")
    assert [(p.field, p.qty, p.source) for p in points] == [
        ("Unspecified", 0.0, ""),
        ("Protection Used", 1.0, ""),
        ("Protection Not Used", 0.0, ""),
    ]


def test_mealtime_is_text_only_for_blood_glucose_elsewhere_it_is_extra() -> None:
    point = {"date": "2024-06-01 07:30:00 +0200", "qty": 5, "mealTime": "Before Meal"}
    (p,) = parse(metrics_body({"name": "step_count", "data": [point]})).points
    assert (p.text, p.extra) == (None, '{"mealTime":"Before Meal"}')


def test_heartbeat_series_keeps_the_sdnn_and_stores_the_beats_as_a_record() -> None:
    result = fixture("metrics_hrv_heartbeat_series.json")
    assert result.uncovered == ()
    assert [(r.section, r.identity, len(r.items)) for r in result.records] == [
        ("heartbeatSeries", "Simon's Apple Watch|2024-06-01T02:12:40.000000Z", 2)
    ]
    assert [(p.field, p.qty, p.start, p.extra) for p in result.points] == [
        ("qty", 41.2, "2024-06-01T02:12:40.000000Z", None),
        ("qty", 38.0, "2024-06-01T06:40:02.000000Z", None),
    ]


def test_empty_heartbeat_series_is_not_uncovered() -> None:
    point = {"date": "2024-06-01 07:40:02 +0100", "qty": 38, "heartbeatSeries": []}
    result = parse(metrics_body({"name": "heart_rate_variability", "data": [point]}))
    assert result.uncovered == ()
    assert len(result.points) == 1


# --- sleep_analysis ----------------------------------------------------------------------


def test_aggregated_sleep_with_date_only_key_and_total_sleep() -> None:
    result = fixture("sleep_aggregated_date_only_total_sleep.json")
    assert result.uncovered == ()
    extra = '{"sleepEnd":"2024-06-01 06:40:00 +0100","sleepStart":"2024-05-31 23:10:00 +0100"}'
    # the day's midnight on the night's clock, sleepStart's +0100 (test_hae_sleep_keys.py)
    assert result.points == [
        Point(
            "sleep_analysis",
            field,
            "Simon's Apple Watch",
            "2024-05-31T23:00:00.000000Z",
            60,
            None,
            hours,
            None,
            "hr",
            extra,
        )
        for field, hours in (
            ("totalSleep", 7.25),
            ("asleep", 0.0),
            ("core", 4.5),
            ("deep", 1.0),
            ("rem", 1.75),
            ("awake", 0.25),
            ("inBed", 0.0),
        )
    ]


def test_aggregated_sleep_before_6_6_2_takes_its_source_from_sleep_source() -> None:
    night = {
        "date": "2021-12-18 09:03:36 +0800",
        "asleep": 6.1,
        "sleepSource": "Watch",
        "inBedSource": "iPhone",
    }
    points = parse(metrics_body({"name": "sleep_analysis", "units": "hr", "data": [night]})).points
    assert [(p.field, p.source, p.extra) for p in points] == [
        ("asleep", "Watch", '{"inBedSource":"iPhone","sleepSource":"Watch"}')
    ]


def test_unaggregated_sleep_segments_of_hae_9x() -> None:
    result = fixture("sleep_unaggregated_9x.json")
    assert result.uncovered == ()
    assert [(p.field, p.start, p.end, p.qty, p.text, p.extra) for p in result.points] == [
        ("segment", "2024-05-31T23:10:00.000000Z", "2024-06-01T00:40:00.000000Z", 1.5, "REM", None),
        (
            "segment",
            "2024-06-01T00:40:00.000000Z",
            "2024-06-01T00:55:00.000000Z",
            0.25,
            "Awake",
            # a 9.x ``date`` that is not the segment's start is kept
            '{"date":"2024-06-01 01:55:00 +0100"}',
        ),
        (
            "segment",
            "2024-06-01T00:55:00.000000Z",
            "2024-06-01T01:55:00.000000Z",
            1.0,
            "Deep",
            None,
        ),
    ]


def test_a_sleep_point_of_neither_shape_marks_sleep_uncovered() -> None:
    data = [{"date": "2024-06-01", "quality": "good"}, {"date": "2024-06-01", "asleep": 7}]
    result = parse(metrics_body({"name": "sleep_analysis", "units": "hr", "data": data}))
    assert result.uncovered == ("metrics.sleep_analysis",)
    assert [(p.field, p.qty) for p in result.points] == [("asleep", 7.0)]


# --- dates in points ---------------------------------------------------------------------


def test_twelve_hour_dates_in_points() -> None:
    result = fixture("metrics_12_hour_dates.json")
    assert result.uncovered == ()
    assert [(p.start, p.utc_offset, p.qty) for p in result.points] == [
        ("2024-09-20T21:57:00.000000Z", 600, 12.0),
        ("2024-09-20T21:58:00.000000Z", 600, 13.0),
        ("2024-09-21T02:05:00.000000Z", 600, 14.0),
        ("2024-09-20T14:06:00.000000Z", 600, 15.0),
        ("2024-09-21T13:59:00.000000Z", 600, 16.0),
    ]


@pytest.mark.parametrize(
    ("date", "start", "offset"),
    [
        ("2021-12-24 00:04:00 +0800", "2021-12-23T16:04:00.000000Z", 480),
        ("2023-06-06 20:38:38 -0500", "2023-06-07T01:38:38.000000Z", -300),
        ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05.000000Z", 0),
        ("2021-12-18", "2021-12-18T00:00:00.000000Z", None),
        (1717207960.5, "2024-06-01T02:12:40.500000Z", None),
    ],
)
def test_every_date_form_keys_a_point(date: object, start: str, offset: int | None) -> None:
    result = parse(metrics_body({"name": "x", "data": [{"date": date, "qty": 1}]}))
    assert [(p.start, p.utc_offset) for p in result.points] == [(start, offset)]


# --- unknown and partly understood -------------------------------------------------------


def test_unknown_metric_names_are_kept_as_their_own_series() -> None:
    result = fixture("metrics_unknown_names_and_shapes.json")
    assert [(p.field, p.qty, p.unit) for p in of(result, "rmssd")] == [("qty", 35.5, "ms")]
    assert [p.field for p in of(result, "high_heart_rate_notifications")] == ["min", "avg", "max"]


def test_points_not_understood_mark_the_metric_and_its_good_points_stay() -> None:
    result = fixture("metrics_unknown_names_and_shapes.json")
    # no value field, an unreadable date, no date, not an object, a string qty
    assert "metrics.foo" in result.uncovered
    assert [(p.start, p.qty) for p in of(result, "foo")] == [
        ("2024-05-31T23:00:00.000000Z", 1.0),
        ("2024-06-01T02:00:00.000000Z", 5.0),
    ]


def test_metric_items_without_a_name_are_the_metrics_key() -> None:
    # one item lacks ``name``, another is the number 42
    assert fixture("metrics_unknown_names_and_shapes.json").uncovered == ("metrics", "metrics.foo")


@pytest.mark.parametrize(
    "item",
    [
        {"name": "x", "data": {"date": "2024-06-01", "qty": 1}},
        {"name": "x", "data": 7},
        {"name": "x", "units": 5, "data": []},
        {"name": "x", "data": [], "aggregation": "hours"},
    ],
)
def test_an_item_we_cannot_place_marks_its_metric(item: dict[str, Any]) -> None:
    assert parse(metrics_body(item)).uncovered == ("metrics.x",)


@pytest.mark.parametrize("section", [{"name": "x"}, 5, "step_count", [None], [{"name": ""}]])
def test_a_metrics_section_that_is_not_a_list_of_items_is_the_metrics_key(
    section: object,
) -> None:
    assert parse(body({"data": {"metrics": section}})).uncovered == ("metrics",)


@pytest.mark.parametrize("data", [[], None])
def test_empty_data_gives_no_points_and_nothing_uncovered(data: list[object] | None) -> None:
    item = {"name": "basal_body_temperature", "units": "degC", "data": data}
    assert parse(metrics_body(item)) == ParseResult([], ())


def test_missing_units_source_and_null_qty() -> None:
    result = parse(metrics_body({"name": "x", "data": [{"date": "2021-12-18", "qty": None}]}))
    assert [(p.unit, p.source, p.qty) for p in result.points] == [("", "", None)]


def test_extra_is_canonical_json_of_unmapped_fields_without_nulls() -> None:
    point = {
        "zeta": [1, {"b": 2, "a": "ü"}],
        "date": "2021-12-18",
        "qty": 1,
        "alpha": None,
        "mid": True,
    }
    (p,) = parse(metrics_body({"name": "x", "data": [point]})).points
    assert p.extra == '{"mid":true,"zeta":[1,{"a":"ü","b":2}]}'


def test_a_field_nested_deeper_than_extra_can_hold_marks_the_metric() -> None:
    # orjson reads 1024 levels but writes 254: such a point cannot be kept whole
    deep = b"[" * 300 + b"]" * 300
    raw = (
        b'{"data":{"metrics":[{"name":"x","data":[{"date":"2021-12-18","qty":1,"odd":'
        + deep
        + b'},{"date":"2021-12-19","qty":2}]}]}}'
    )
    result = parse(raw)
    assert result.uncovered == ("metrics.x",)
    assert [p.qty for p in result.points] == [2.0]


# --- the envelope ------------------------------------------------------------------------


def test_sections_this_parser_does_not_know_are_uncovered_by_name() -> None:
    result = fixture("envelope_other_sections.json")
    assert result.uncovered == ("somethingNew",)
    assert [r.section for r in result.records] == ["stateOfMind", "symptoms"]
    assert [(p.metric, p.qty) for p in result.points] == [("step_count", 100.0)]


@pytest.mark.parametrize("document", [{"data": {}}, {}, {"data": {"metrics": []}}])
def test_an_envelope_with_nothing_in_it_parses_to_nothing(document: object) -> None:
    assert parse(body(document)) == ParseResult([], ())


def test_a_body_without_data_is_read_as_the_inner_object() -> None:
    document = {
        "symptoms": [],
        "metrics": [{"name": "x", "data": [{"date": "2021-12-18", "qty": 2}]}],
        "workouts": [{"name": "Walking"}],
    }
    result = parse(body(document))
    assert result.uncovered == ("workouts",)
    assert [p.qty for p in result.points] == [2.0]


def test_a_stray_key_beside_data_is_considered_too() -> None:
    inner = {"metrics": [{"name": "x", "data": [{"date": "2021-12-18", "qty": 2}]}]}
    assert parse(body({"data": inner, "workouts": []})).uncovered == ()
    assert parse(body({"data": inner, "workouts": [{"name": "Walking"}]})).uncovered == (
        "workouts",
    )


@pytest.mark.parametrize(
    "raw",
    [
        b"[1,2]",
        b"not json",
        b'"str"',
        b"null",
        b"",
        b'{"data": "\xff"}',  # not UTF-8
        b'{"data": 5}',
        b'{"data": null}',
        b'{"data": []}',
        b'{"data": {"metrics": [{"name": "secret-42"}]',  # cut short
    ],
)
def test_unreadable_bodies(raw: bytes) -> None:
    with pytest.raises(UnreadableBody) as caught:
        parse(raw)
    assert "secret" not in str(caught.value)
    assert caught.value.__cause__ is None


# --- the deadline ------------------------------------------------------------------------


def steps(n: int) -> dict[str, Any]:
    data = [
        {"date": f"2024-06-01 {i // 60 % 24:02d}:{i % 60:02d}:00 +0000", "qty": i} for i in range(n)
    ]
    return {"name": "step_count", "units": "count", "data": data}


def test_a_deadline_already_past_raises_fold_deadline() -> None:
    with pytest.raises(FoldDeadline):
        parse(metrics_body(steps(3)), deadline=time.monotonic() - 1)


def test_a_deadline_in_the_future_changes_nothing() -> None:
    raw = metrics_body(steps(3000))
    assert parse(raw, deadline=time.monotonic() + 60) == parse(raw)


def test_a_deadline_passing_midway_carries_the_keys_found_so_far(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the clock says "in time" once (after reading the JSON), then "too late"
    clock = iter([0.0] + [100.0] * 10)
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    raw = body({"data": {"workouts": [{"name": "Walking"}], "metrics": [{"name": 1}, steps(3000)]}})
    with pytest.raises(FoldDeadline) as caught:
        parse(raw, deadline=50.0)
    # the clock is read after each record too: the workout (no start, so no identity)
    # was the last thing read
    assert caught.value.uncovered == ("workouts",)


# --- any JSON at all ---------------------------------------------------------------------

NAMES = ["heart_rate", "heart_rate_variability", "sleep_analysis", "blood_pressure"]
NAMES += ["blood_glucose", "sexual_activity", "insulin_delivery", "step_count", ""]
TIMES = ["2021-12-24 00:04:00 +0800", "2021-12-18", "2024-09-21 7:57:00\u202fpm +1000"]
TIMES += ["2024-01-02T03:04:05Z", "0001-01-01 00:00:00 +0100", "9999-12-31 23:59:59 -1200"]
TIME_KEYS = ["date", "start", "end", "startDate", "endDate", "sleepStart"]
VALUE_KEYS = ["qty", "Min", "Avg", "Max", "systolic", "Protection Used", "asleep", "inBed"]
TEXT_KEYS = ["source", "sleepSource", "value", "mealTime", "reason", "context"]

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(NAMES + TIMES)
    | text
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(TIME_KEYS + VALUE_KEYS + TEXT_KEYS) | text, inner, max_size=5
        )
    ),
    max_leaves=30,
)
# HAE-like points and items, so that the fuzz reaches the point readers, not just the
# first isinstance check
times = st.sampled_from(TIMES) | st.integers(0, 2**40) | json_values
numbers = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**63), 2**63)
optional_fields = {
    **{k: times for k in TIME_KEYS},
    **{k: numbers | json_values for k in VALUE_KEYS},
    **{k: text | json_values for k in TEXT_KEYS},
    "heartbeatSeries": json_values,
}
# well formed, of any shape; dated with odd fields; anything keyed like HAE
hae_points = (
    st.fixed_dictionaries(
        {"date": st.sampled_from(TIMES), "qty": numbers},
        optional={"source": text, "end": st.sampled_from(TIMES), "Min": numbers, "asleep": numbers},
    )
    | st.fixed_dictionaries(
        {"date": st.sampled_from(TIMES)},
        optional={k: v for k, v in optional_fields.items() if k != "date"},
    )
    | st.fixed_dictionaries({}, optional=optional_fields)
)
hae_items = st.fixed_dictionaries(
    {"name": st.sampled_from(NAMES), "data": st.lists(hae_points, max_size=5)},
    optional={"units": text | json_values},
) | st.fixed_dictionaries({}, optional={"name": json_values, "data": json_values})
metrics_sections = (
    st.lists(hae_items, max_size=4) | st.lists(hae_items | json_values, max_size=4) | json_values
)


def parses_or_is_unreadable(raw: bytes) -> None:
    try:
        result = parse(raw)
    except UnreadableBody:
        return
    assert result.uncovered == tuple(sorted(set(result.uncovered)))
    assert all(isinstance(p, Point) and len(p.start) == 27 for p in result.points)


@settings(
    suppress_health_check=[HealthCheck.too_slow], max_examples=4 * settings.default.max_examples
)
@given(metrics_sections)
def test_any_json_as_the_metrics_section_parses_or_is_unreadable(value: object) -> None:
    parses_or_is_unreadable(json.dumps({"data": {"metrics": value}}).encode())


@settings(
    suppress_health_check=[HealthCheck.too_slow], max_examples=4 * settings.default.max_examples
)
@given(json_values | st.dictionaries(text, json_values | metrics_sections, max_size=4))
def test_any_json_as_the_whole_body_parses_or_is_unreadable(value: object) -> None:
    parses_or_is_unreadable(json.dumps(value).encode())


@given(st.binary(max_size=64))
def test_any_bytes_parse_or_are_unreadable(raw: bytes) -> None:
    parses_or_is_unreadable(raw)


def test_a_point_too_wide_to_keep_inline_is_not_understood_and_its_metric_uncovered() -> None:
    """A 4 MB field would be a wide row in the points b-tree that every later upsert
    of its metric reads: the point stays in the archive, the rest of the metric folds."""
    wide = "w" * (4 * 1024 * 1024)
    body = orjson.dumps({"data": {"metrics": [
        {"name": "step_count", "units": "count", "data": [
            {"date": "2026-01-01 10:00:00 +0000", "qty": 1, "note": wide},
            {"date": "2026-01-01 11:00:00 +0000", "qty": 2, "source": "s" * 2000},
            {"date": "2026-01-01 12:00:00 +0000", "qty": 3, "note": "short"},
        ]},
        {"name": "m" * 10_000, "units": "count", "data": [
            {"date": "2026-01-01 10:00:00 +0000", "qty": 1}]},
        {"name": "blood_glucose", "units": "mg/dL", "data": [
            {"date": "2026-01-01 10:00:00 +0000", "qty": 90, "mealTime": "x" * 20_000}]},
    ]}})  # fmt: skip

    result = parse(body)

    assert [(p.metric, p.qty) for p in result.points] == [("step_count", 3.0)]
    assert set(result.uncovered) == {
        "metrics.step_count",
        "metrics." + "m" * 10_000,
        "metrics.blood_glucose",
    }
    assert all(len(p.extra or "") <= metrics.MAX_INLINE for p in result.points)


# --- Values.many: a chunk of plain points read at once, exactly as one at a time ---------

PLAIN_NAMES = ["step_count", "heart_rate", "heart_rate_variability", "blood_pressure"]
PLAIN_NAMES += ["blood_glucose", "sexual_activity", "walking_running_distance", "active_energy"]
PLAIN_NAMES += ["weight_body_mass", "mystery_metric"]
PLAIN_SHAPES: list[tuple[str, ...]] = [
    (),
    ("qty",),
    ("Min", "Avg", "Max"),
    ("systolic", "diastolic"),
    ("Protection Used", "Unspecified"),
    ("qty", "Max"),
]
SOME_TIMES = ["2024-06-01 00:01:00 +0100", "2024-06-01 00:01:30 +0100", "2024-06-01 00:02:00 +0100"]
SOME_TIMES += ["2024-05-31 23:59:59 -1200", "2024-06-01 7:57:00 am +0100", "2024-06-01"]
# what may make a point other than plain: each must send the chunk one point at a time
ODD_VALUES: st.SearchStrategy[object] = st.sampled_from(
    [None, True, "7", [], {}, 10**19, -0.0, 2**53 + 1]
)
ODD_TIMES: st.SearchStrategy[object] = st.sampled_from(
    [None, 5, [], {"a": 1}, "2024-02-30 00:00:00 +0100", "x", "2024-06-01 00:01:60 +0100"]
)
# a key outside the plain shapes, sent by every point of a metric or by one
ODD_KEYS = ["context", "mealTime", "value", "heartbeatSeries"]
# what may be odd in every point of a metric: one of those keys, or its times
EVERYWHERE = [*ODD_KEYS, "date", "end"]


@st.composite
def plain_sections(draw: st.DrawFn) -> list[dict[str, object]]:
    items: list[dict[str, object]] = []
    for _ in range(draw(st.integers(1, 3))):
        shape = draw(st.sampled_from(PLAIN_SHAPES))
        with_source = draw(st.booleans())
        hae_9x = draw(st.booleans())
        everywhere = draw(st.none() | st.sampled_from(EVERYWHERE))
        data: list[object] = []
        for _ in range(draw(st.integers(0, 12))):
            date = draw(st.sampled_from(SOME_TIMES))
            point: dict[str, object] = {"date": date}
            if hae_9x:
                point["start"] = date
                point["end"] = draw(st.sampled_from(SOME_TIMES))
            if with_source:
                point["source"] = draw(st.sampled_from(["Watch", "", "Simon’s iPhone"]))
            for key in shape:
                point[key] = draw(st.floats(allow_nan=False) | st.integers(-(2**53), 2**53))
            if everywhere in ("date", "end"):
                point[everywhere] = draw(ODD_TIMES)
            elif everywhere is not None:
                point[everywhere] = "Sedentary"
            if draw(st.integers(0, 5)) == 0:  # now and then, one thing odd
                odd = draw(st.sampled_from(["value", "time", "key", "source", "start", "shape"]))
                if odd == "value" and shape:
                    point[shape[0]] = draw(ODD_VALUES)
                elif odd == "time":
                    point[draw(st.sampled_from(["date", "end"]))] = draw(ODD_TIMES)
                elif odd == "key":
                    point[draw(st.sampled_from(ODD_KEYS))] = "x"
                elif odd == "source":
                    point["source"] = draw(st.sampled_from([None, 3, "s" * 2000]))
                elif odd == "start":
                    point["start"] = "2024-06-01 00:09:00 +0100"
                else:
                    data.append(draw(st.sampled_from([None, [], "point", {"qty": 1}])))
            data.append(point)
        items.append(
            {
                "name": draw(st.sampled_from(PLAIN_NAMES)),
                "units": draw(st.sampled_from(["count", "mi", "kJ", "lb", "mmHg", "", "bpm"])),
                "data": data,
            }
        )
    return items


def _typed(found: Found, points: list[Point]) -> object:
    return (
        [(p, tuple(type(v) for v in p)) for p in points],
        found.uncovered,
        found.records,
        found.incomparable,
    )


@settings(
    suppress_health_check=[HealthCheck.too_slow], max_examples=3 * settings.default.max_examples
)
@given(plain_sections())
def test_plain_chunks_read_at_once_give_what_one_point_at_a_time_gives(
    section: list[dict[str, object]],
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(metrics, "_CHUNK", 3)  # chunks end inside the drawn data
        patch.setattr(metrics, "_MANY_AT_LEAST", 1)
        found = Found()
        at_once = _typed(found, list(metrics.points(section, found)))
        patch.setattr(metrics.Values, "many", lambda *args: None)
        found = Found()
        one_by_one = _typed(found, list(metrics.points(section, found)))
    assert at_once == one_by_one


@pytest.mark.parametrize(
    ("name", "point"),
    [
        ("step_count", {"date": "2024-06-01 00:01:00 +0100", "qty": 3.5, "source": "Watch"}),
        ("heart_rate", {"date": "2024-06-01 00:01:00 +0100", "Min": 50, "Avg": 55.5, "Max": 61}),
        (
            "walking_running_distance",
            {
                "date": "2024-06-01 00:01:00 +0100",
                "start": "2024-06-01 00:01:00 +0100",
                "end": "2024-06-01 00:01:59 +0100",
                "qty": 0.25,
                "source": "Watch",
            },
        ),
    ],
)
def test_the_plain_shapes_of_hae_bodies_are_read_at_once(
    name: str, point: dict[str, object]
) -> None:
    """The fast path is taken for what real bodies send most (not only correct when taken)."""
    values = metrics._BUILDERS.get(name, metrics._GENERIC.build).__self__  # type: ignore[attr-defined]
    assert isinstance(values, metrics.Values)
    chunk: list[object] = [dict(point) for _ in range(3)]
    read = values.many(name, chunk, "count", dates.Instants())
    assert read is not None
    one_by_one = [p for q in chunk for p in values.build(name, q, "count", dates.Instants())]  # type: ignore[arg-type]
    assert _typed(Found(), read) == _typed(Found(), one_by_one)
