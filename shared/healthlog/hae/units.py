"""Units: one canonical unit per series, so a series never silently mixes units.

The phone sends values in the user's unit preferences (kJ or kcal, km or mi, degC or
degF, kg or lb: docs/hae-format.md, "Units"), and a preference can change between two
deliveries. Each unit spelling HAE sends belongs to a *dimension* with a factor (and,
for temperatures, an offset) to that dimension's base unit. A series' canonical unit is
chosen by its name alone (``CANONICAL``), never by which delivery came first, so the
showcase is the same whatever order deliveries are folded in:

* a metric (or workout series) named in ``CANONICAL``: a value whose unit is of the same
  dimension is converted and stored in the canonical unit, the original kept in
  ``extra`` as ``sent_qty``/``sent_unit``; a value in any other unit is kept as sent and
  counted as *incomparable* in the fold's outcome;
* any other series (a metric name this table does not know yet, ``count``-like
  metrics, ``%``, ``mmHg``...) is stored as sent and not counted: there is nothing it
  was expected to be. A metric whose unit can change with the phone's preferences
  belongs in ``CANONICAL``.
"""

from __future__ import annotations

import math
from typing import NamedTuple


def decimals(value: float) -> int:
    """The decimals of ``value`` as written (its shortest repr): 165.3 has 1, 1e-05 has 5."""
    mantissa, _, exponent = repr(float(value)).partition("e")
    written = len(mantissa.partition(".")[2].rstrip("0"))
    return max(0, written - int(exponent or 0))


def justified(qty: float, sent_qty: float, factor: float) -> float:
    """``qty``, converted from ``sent_qty`` by ``factor``, to the decimals that justifies.

    ``sent_qty`` with ``d`` decimals is known to ``10**-d`` of its unit, that is
    ``factor * 10**-d`` of the canonical one; the result keeps one decimal more than
    the coarsest step no larger than that: ``d + ceil(-log10 factor) + 1``. So 165.3 lb
    is 74.979 kg, not 74.97881876100001 (docs/hae-format.md, "Units").
    """
    if not (math.isfinite(qty) and math.isfinite(sent_qty)) or factor <= 0:
        return qty
    return round(qty, decimals(sent_qty) + math.ceil(-math.log10(factor)) + 1)


class Conversion(NamedTuple):
    """canonical = sent * factor + offset, to the decimals the sent value justifies;
    ``unit`` is the canonical spelling."""

    unit: str
    factor: float
    offset: float = 0.0

    @property
    def identity(self) -> bool:
        return self.factor == 1.0 and self.offset == 0.0

    def apply(self, value: float) -> float:
        return justified(value * self.factor + self.offset, value, self.factor)


# spelling -> (dimension, factor to the base unit, offset to the base unit)
_KNOWN: dict[str, tuple[str, float, float]] = {
    # mass, base g
    "g": ("mass", 1.0, 0.0),
    "kg": ("mass", 1000.0, 0.0),
    "mg": ("mass", 1e-3, 0.0),
    "mcg": ("mass", 1e-6, 0.0),
    "µg": ("mass", 1e-6, 0.0),
    "lb": ("mass", 453.59237, 0.0),
    "oz": ("mass", 28.349523125, 0.0),
    "st": ("mass", 6350.29318, 0.0),
    # length, base m
    "m": ("length", 1.0, 0.0),
    "km": ("length", 1000.0, 0.0),
    "cm": ("length", 0.01, 0.0),
    "mm": ("length", 0.001, 0.0),
    "mi": ("length", 1609.344, 0.0),
    "yd": ("length", 0.9144, 0.0),
    "ft": ("length", 0.3048, 0.0),
    "in": ("length", 0.0254, 0.0),
    # energy, base kcal ("Cal" is the food calorie, a kcal)
    "kcal": ("energy", 1.0, 0.0),
    "Cal": ("energy", 1.0, 0.0),
    "cal": ("energy", 0.001, 0.0),
    "kJ": ("energy", 1 / 4.184, 0.0),
    "J": ("energy", 1 / 4184, 0.0),
    # temperature, base degC
    "degC": ("temperature", 1.0, 0.0),
    "degF": ("temperature", 5 / 9, -32 * 5 / 9),
    "K": ("temperature", 1.0, -273.15),
    # speed, base m/s
    "m/s": ("speed", 1.0, 0.0),
    "km/hr": ("speed", 1 / 3.6, 0.0),
    "km/h": ("speed", 1 / 3.6, 0.0),
    "mi/hr": ("speed", 0.44704, 0.0),
    "mph": ("speed", 0.44704, 0.0),
    "ft/s": ("speed", 0.3048, 0.0),
    "m/min": ("speed", 1 / 60, 0.0),
    # volume, base mL
    "mL": ("volume", 1.0, 0.0),
    "ml": ("volume", 1.0, 0.0),
    "L": ("volume", 1000.0, 0.0),
    "dL": ("volume", 100.0, 0.0),
    "fl_oz_us": ("volume", 29.5735295625, 0.0),
    "cup_us": ("volume", 236.5882365, 0.0),
    # duration, base s
    "s": ("duration", 1.0, 0.0),
    "ms": ("duration", 0.001, 0.0),
    "min": ("duration", 60.0, 0.0),
    "hr": ("duration", 3600.0, 0.0),
    "h": ("duration", 3600.0, 0.0),
    "d": ("duration", 86400.0, 0.0),
    # beats or breaths per time, base count/min
    "count/min": ("rate", 1.0, 0.0),
    "bpm": ("rate", 1.0, 0.0),
    "count/s": ("rate", 60.0, 0.0),
    "count/hr": ("rate", 1 / 60, 0.0),
}

_MACROS = (
    "carbohydrates dietary_sugar fiber protein total_fat saturated_fat monounsaturated_fat"
    " monosaturated_fat polyunsaturated_fat"
)
_MICROS = (
    "biotin caffeine calcium chloride chromium cholesterol copper folate iodine iron"
    " magnesium manganese molybdenum niacin pantothenic_acid phosphorus potassium"
    " riboflavin selenium sodium thiamin vitamin_a vitamin_b6 vitamin_b12 vitamin_c"
    " vitamin_d vitamin_e vitamin_k zinc"
)


def _all(unit: str, names: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), unit)


#: series name (metric name, or workout series key) -> canonical unit
CANONICAL: dict[str, str] = {
    **_all("kcal", "active_energy basal_energy_burned dietary_energy activeEnergy basalEnergy"),
    **_all(
        "km",
        "walking_running_distance cycling_distance wheelchair_distance downhill_snow_sports"
        " distance_downhill_snow_sports cyclingDistance walkingAndRunningDistance",
    ),
    **_all(
        "m",
        "swimming_distance six_minute_walking_test_distance six-minute_walking_test_distance"
        " running_stride_length under_water_depth swimDistance",
    ),
    **_all("cm", "height waist_circumference walking_step_length running_vertical_oscillation"),
    **_all("kg", "weight_body_mass lean_body_mass"),
    **_all("g", _MACROS),
    **_all("g", " ".join(f"dietary_{n}" for n in _MACROS.split())),
    **_all("mg", _MICROS),
    **_all("mg", " ".join(f"dietary_{n}" for n in _MICROS.split())),
    **_all(
        "degC",
        "body_temperature basal_body_temperature apple_sleeping_wrist_temperature"
        " under_water_temperature",
    ),
    **_all("km/hr", "walking_speed running_speed cycling_speed cyclingSpeed"),
    **_all("m/s", "stair_speed_up stair_speed_down stair_speed:_up stair_speed:_down"),
    "dietary_water": "mL",
    **_all("L", "forced_vital_capacity forced_expiratory_volume forced_expiratory_volume_1"),
    **_all("min", "apple_exercise_time apple_move_time apple_stand_time mindful_minutes"),
    "time_in_daylight": "min",
    **_all("s", "handwashing toothbrushing"),
    "heart_rate_variability": "ms",
    "sleep_analysis": "hr",
    **_all(
        "count/min",
        "heart_rate resting_heart_rate walking_heart_rate_average walking_heart_rate"
        " respiratory_rate heartRateData heartRateRecovery heartRate",
    ),
}


def conversion(series: str, unit: str) -> Conversion | None:
    """How a value of ``series`` sent in ``unit`` is stored; None when it is incomparable.

    The returned ``Conversion`` may be the identity (``.identity``), in which case the
    value is stored as sent.
    """
    canonical = CANONICAL.get(series)
    if canonical is None or unit == canonical:
        return Conversion(unit, 1.0)
    known = _KNOWN.get(unit)
    if known is None:
        return None
    dimension, factor, offset = known
    target = _KNOWN.get(canonical)
    if target is None or target[0] != dimension:
        return None
    # sent -> base -> canonical: base = v*f + o; canonical = (base - o_c) / f_c
    _, c_factor, c_offset = target
    return Conversion(canonical, factor / c_factor, (offset - c_offset) / c_factor)


def dimension_of(unit: str) -> tuple[str, float, float] | None:
    """A unit spelling's dimension (``length``, ``energy``...) with its factor and offset
    to that dimension's base unit (base = value * factor + offset); None if unknown.
    ``healthlog.reads.units`` converts figures for people with it, so a spelling is known in
    one place."""
    return _KNOWN.get(unit)
