"""Which metrics are amounts over an interval (summed), and which are readings.

The kernel's one list, so the read side (``reads.kind_of``), the journal's day sums and
the fold ask the same question the same way (docs/dashboard.md, "Metric kinds").
"""

from __future__ import annotations

_NUTRIENTS = (
    "biotin", "caffeine", "calcium", "carbohydrates", "chloride", "cholesterol", "chromium",
    "copper", "fiber", "folate", "iodine", "iron", "magnesium", "manganese", "molybdenum",
    "monounsaturated_fat", "niacin", "pantothenic_acid", "phosphorus", "polyunsaturated_fat",
    "potassium", "protein", "riboflavin", "saturated_fat", "selenium", "sodium", "sugar",
    "thiamin", "total_fat", "vitamin_a", "vitamin_b6", "vitamin_b12", "vitamin_c", "vitamin_d",
    "vitamin_e", "vitamin_k", "zinc",
)  # fmt: skip

#: the metrics HAE sends that are amounts over an interval, summed per bucket; every
#: other metric is a reading (documented in docs/dashboard.md, "Metric kinds")
CUMULATIVE = frozenset(
    {
        "active_energy",
        "apple_exercise_time",
        "apple_stand_hour",
        "apple_stand_time",
        "basal_energy_burned",
        "cycling_distance",
        "dietary_energy",
        "dietary_water",
        "distance_cycling",
        "distance_swimming",
        "distance_walking_running",
        "flights_climbed",
        "mindful_minutes",
        "number_of_times_fallen",
        "push_count",
        "step_count",
        "swimming_stroke_count",
        "time_in_daylight",
        "walking_running_distance",
        "wheelchair_distance",
        # HAE's names for the same amounts (hae.units.CANONICAL spells them so)
        "apple_move_time",
        "distance_downhill_snow_sports",
        "downhill_snow_sports",
        "swimming_distance",
        # what was eaten or drunk: amounts per entry, summed per day
        *(f"{prefix}{name}" for prefix in ("", "dietary_") for name in _NUTRIENTS),
    }
)


def is_cumulative(metric: str) -> bool:
    """Whether ``metric`` is an amount over an interval (summed per bucket, and spread
    over the buckets a sample spans: ``clock.spread``)."""
    return metric in CUMULATIVE
