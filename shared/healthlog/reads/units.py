"""Units for people: an account's unit system, and a quantity sent in any unit shown in it.

The phone sends each quantity in the unit its owner chose (kJ or kcal, km or mi, degC or
degF: docs/hae-format.md, "Units"), and the Health app's export in its own spellings
(``Cal``, ``cm``). The store keeps what was sent; a page shows one unit system, the
account's (``Account.unit_system``, ``healthlog account set-units``), metric unless set:

=============  ============  ============
quantity       metric        imperial
=============  ============  ============
distance       km            mi
elevation      m             ft
speed          km/h          mph
pace           s/km          s/mi
energy         kcal          kcal
temperature    °C            °F
=============  ============  ============

Energy is kcal in both (the Health app's "Calories"); kJ is converted to it. Each
spelling's factor to its dimension's base unit is ``healthlog.hae.units``' (one table for
the parser and for people); this module only picks the target and converts. No library
(pint would do it): the conversions are a dozen linear factors the parser already has, and
a new dependency would land in every cold start and the Lambda layer for them.

Pure: no I/O, no state.
"""

from __future__ import annotations

from typing import Final, Literal

from healthlog.errors import HealthlogError
from healthlog.hae.units import dimension_of

UnitSystem = Literal["metric", "imperial"]
#: the unit systems an account may have, the default first
SYSTEMS: Final = ("metric", "imperial")
DEFAULT: Final = "metric"

#: metres in a mile (the split and pace length of the imperial system)
MILE_M: Final = 1609.344

#: per system: the quantity -> the unit it is shown in (``hae.units`` spellings)
_TARGETS: Final[dict[str, dict[str, str]]] = {
    "metric": {
        "distance": "km",
        "elevation": "m",
        "speed": "km/hr",
        "energy": "kcal",
        "temperature": "degC",
    },
    "imperial": {
        "distance": "mi",
        "elevation": "ft",
        "speed": "mi/hr",
        "energy": "kcal",
        "temperature": "degF",
    },
}

#: a target spelling as a person reads it
_SHOWN: Final = {
    "km/hr": "km/h",
    "mi/hr": "mph",
    "degC": "°C",
    "degF": "°F",
    "count/min": "bpm",
}


class BadUnitSystem(HealthlogError):
    """Not a unit system an account may have."""


def check_system(name: str) -> UnitSystem:
    """``name`` if it is a unit system (``metric``, ``imperial``); BadUnitSystem if not."""
    if name == "metric":
        return "metric"
    if name == "imperial":
        return "imperial"
    raise BadUnitSystem(f"no unit system named {name!r} (metric or imperial)")


def system_of(name: str | None) -> UnitSystem:
    """An account's stored unit system, the default for anything else (a journal that
    another healthlog wrote)."""
    try:
        return check_system(name or DEFAULT)
    except BadUnitSystem:
        return "metric"


def convert(qty: float, unit: str, to: str) -> float | None:
    """``qty`` sent in ``unit`` as a quantity in ``to`` (both ``hae.units`` spellings);
    None when either is unknown or they measure different things (km and kcal)."""
    if unit == to:
        return qty
    sent, target = dimension_of(unit), dimension_of(to)
    if sent is None or target is None or sent[0] != target[0]:
        return None
    base = qty * sent[1] + sent[2]
    return (base - target[2]) / target[1]


def target(system: UnitSystem, quantity: str) -> str:
    """The spelling ``quantity`` (distance, elevation, speed, energy, temperature) is shown
    in under ``system``."""
    return _TARGETS[system][quantity]


def shown(spelling: str) -> str:
    """A target spelling as a person reads it: ``km/hr`` is "km/h", ``degF`` "°F"."""
    return _SHOWN.get(spelling, spelling)


def split_m(system: UnitSystem) -> float:
    """The length of a split, and of a pace's unit: a kilometre or a mile, in metres."""
    return 1000.0 if system == "metric" else MILE_M


def pace_unit(system: UnitSystem) -> str:
    """The unit of a pace: seconds per kilometre or per mile."""
    return "s/km" if system == "metric" else "s/mi"


def length_unit(system: UnitSystem) -> str:
    """The unit of a distance or a split: km or mi."""
    return target(system, "distance")
