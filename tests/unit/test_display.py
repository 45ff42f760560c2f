"""healthlog.reads.display: a person's name for every metric HAE and the export send, its
fields and its units; a name made from any other (docs/dashboard.md, "Names")."""

from __future__ import annotations

import pytest
from healthlog import kinds
from healthlog.applehealth.types import CATEGORY_METRICS, QUANTITIES
from healthlog.hae.units import CANONICAL
from healthlog.reads import display

#: every metric (and workout series) name the HAE parser and the export reader produce
SENT = sorted(
    set(CANONICAL) | set(QUANTITIES.values()) | set(CATEGORY_METRICS.values()) | kinds.CUMULATIVE
)


@pytest.mark.parametrize("metric", SENT)
def test_every_metric_sent_has_a_persons_name(metric: str) -> None:
    name = display.metric_name(metric)
    assert name and name != metric
    assert metric in display.NAMES  # written, not made up from the stored name
    assert name[0].isupper() and "_" not in name


@pytest.mark.parametrize(
    ("metric", "name"),
    [
        ("step_count", "Steps"),
        ("heart_rate", "Heart rate"),
        ("active_energy", "Active energy"),
        ("weight_body_mass", "Weight"),
        ("sleep_analysis", "Sleep"),
        ("heart_rate_variability", "Heart rate variability"),
        ("heartRateData", "Heart rate"),
    ],
)
def test_the_common_names(metric: str, name: str) -> None:
    assert display.metric_name(metric) == name


@pytest.mark.parametrize(
    ("stored", "made"),
    [
        ("resting_heart_rate_of_a_new_kind", "Resting heart rate of a new kind"),
        ("someNewSeries", "Some new series"),
        ("vo2_new", "Vo2 new"),
        ("ABC_index", "ABC index"),
        ("", ""),
    ],
)
def test_an_unknown_name_gets_one_made_from_it(stored: str, made: str) -> None:
    assert display.metric_name(stored) == made
    assert display.generated("resting_heart_rate") == "Resting heart rate"


def test_fields_the_main_one_unnamed() -> None:
    assert display.field_name("heart_rate", "avg") == "Average"
    assert display.field_name("heart_rate", "min") == "Minimum"
    assert display.field_name("heart_rate", "max") == "Maximum"
    assert display.field_name("blood_pressure", "diastolic") == "Diastolic"
    assert display.field_name("sleep_analysis", "inBed") == "In bed"
    assert display.field_name("step_count", "qty") == ""
    assert display.field_name("x", "someField") == "Some field"
    assert display.display_name("step_count", "qty") == "Steps"
    assert display.display_name("heart_rate", "avg") == "Heart rate"
    assert display.display_name("heart_rate", "max") == "Heart rate · Maximum"
    assert display.display_name("blood_pressure", "systolic") == "Blood pressure · Systolic"
    assert display.display_name("sleep_analysis") == "Sleep"


@pytest.mark.parametrize(
    ("unit", "metric", "shown"),
    [
        ("count/min", "heart_rate", "bpm"),
        ("count/min", None, "bpm"),
        ("count", "step_count", "steps"),
        ("count", "flights_climbed", "floors"),
        ("count", "some_count", ""),
        ("count", None, ""),
        ("kcal", "active_energy", "kcal"),
        ("km", None, "km"),
        ("hr", "sleep_analysis", "h"),
        ("%", None, "%"),
        ("degC", None, "°C"),
        ("km/hr", None, "km/h"),
        ("ms", None, "ms"),
        ("mmHg", None, "mmHg"),  # as stored where it is a person's unit already
        (None, None, ""),
    ],
)
def test_units_as_a_person_reads_them(unit: str | None, metric: str | None, shown: str) -> None:
    assert display.unit_name(unit, metric) == shown


def test_every_canonical_unit_has_a_shown_unit() -> None:
    for metric, unit in CANONICAL.items():
        shown = display.unit_name(unit, metric)
        assert shown and "/min" not in shown.replace("/(kg·min)", ""), (metric, unit, shown)
