"""A workout's figures as the Health app's Fitness view shows them, in one unit system.

One read for every interface (the dashboard's API, the MCP tools): ``figures`` (duration,
energy, distance, heart rate, pace or speed, elevation gain, steps, cadence, weather),
``unit_splits`` (a split per kilometre or mile), ``heart_rate_zones`` (five zones by share
of the maximum heart rate) and ``weekly_totals`` (per ISO week on the phone's clock). Each
figure says where it comes from (its ``basis``):

* ``sent``: the workout's summary as the phone sent it (HAE v1 or v2), or as the Health
  app's export wrote it (its WorkoutStatistics and metadata, ``healthlog.applehealth``);
* ``series``: read off the workout's series (heart rate, energy, distance samples);
* ``route``: measured along the route's fixes;
* ``computed``: from other figures (a pace is the duration over the distance; a v1
  workout's duration, which it does not send, is its end less its start).

What was sent wins, except for heart rate: the series, when there is one, gives the
average (of its samples) and the maximum (of their maximums), else the summary does. A
quantity in a unit of another dimension than expected (a distance in kcal) is left out.
Units: ``healthlog.reads.units``.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from healthlog.clock import Moment, from_text
from healthlog.model import Item
from healthlog.reads import units
from healthlog.reads.units import UnitSystem
from healthlog.reads.workouts import Workout, WorkoutReads, route_splits

#: words in a workout's name (or activity type) whose pace is shown instead of its speed
PACE_WORDS: Final = ("run", "walk", "hik")
#: the series whose samples sum to a workout's distance, in this order of preference
DISTANCE_SERIES: Final = ("walkingAndRunningDistance", "cyclingDistance", "swimDistance")
#: the lower bounds of zones 2 to 5, as shares of the maximum heart rate (zone 1: below)
ZONE_SHARES: Final = (0.6, 0.7, 0.8, 0.9)
#: a heart-rate sample counts for the time to the next one, at most this long
ZONE_SAMPLE_S: Final = 60.0

_HEART = "heartRateData"


@dataclass(frozen=True, slots=True)
class Figure:
    value: float
    unit: str  # as a person reads it: km, mi, kcal, bpm, s/km, °C...
    basis: str  # sent, series, route or computed

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit, "basis": self.basis}


@dataclass(frozen=True, slots=True)
class Figures:
    """A workout's figures in one unit system; None: not sent and not measurable."""

    unit_system: UnitSystem
    duration: Figure | None = None
    active_energy: Figure | None = None
    total_energy: Figure | None = None
    distance: Figure | None = None
    avg_heart_rate: Figure | None = None
    max_heart_rate: Figure | None = None
    pace: Figure | None = None  # running, walking, hiking
    speed: Figure | None = None  # every other workout that moves
    elevation_gain: Figure | None = None
    steps: Figure | None = None
    step_cadence: Figure | None = None
    swim_cadence: Figure | None = None
    temperature: Figure | None = None
    humidity: Figure | None = None
    intensity: Figure | None = None


@dataclass(frozen=True, slots=True)
class UnitSplit:
    """A split of a kilometre or a mile (the last one: what is left), timed from the route."""

    number: int
    distance: float  # in ``unit``
    unit: str  # km or mi
    distance_m: float
    duration_s: float | None
    pace: float | None  # seconds per ``unit``


@dataclass(frozen=True, slots=True)
class Zone:
    zone: int  # 1 to 5
    low_bpm: float | None  # None for zone 1: everything below zone 2
    high_bpm: float | None  # None for zone 5
    seconds: float
    share: float  # of the seconds counted in all zones


@dataclass(frozen=True, slots=True)
class Zones:
    max_bpm: float  # the maximum heart rate the zones are shares of
    zones: list[Zone]


@dataclass(frozen=True, slots=True)
class WeekTotal:
    week: str  # ISO week, 2026-W11, of the workouts' starts on the phone's clock
    monday: str  # its first day, YYYY-MM-DD
    workouts: int
    duration_s: float
    distance: float | None  # in ``distance_unit``, of the workouts that have one (None: none)
    distance_unit: str
    active_energy: float | None  # kcal, of the workouts that have one (None: none)
    energy_unit: str


# --- reading a body ---------------------------------------------------------------------------


def _sent(value: object) -> tuple[float, str] | None:
    """A ``{qty, units}`` (v1 and v2) as (qty, units); None for anything else."""
    if not isinstance(value, dict):
        return None
    qty, unit = value.get("qty"), value.get("units")
    if isinstance(qty, bool) or not isinstance(qty, int | float) or not isinstance(unit, str):
        return None
    return float(qty), unit


def _as(sent: tuple[float, str] | None, to: str, basis: str, digits: int = 2) -> Figure | None:
    if sent is None:
        return None
    value = units.convert(sent[0], sent[1], to)
    return None if value is None else Figure(round(value, digits), units.shown(to), basis)


def _series_sum(items: Iterable[Item], to: str) -> float | None:
    """The sum of a series' samples in ``to``; None when no sample converts."""
    values = [units.convert(i.qty, i.unit or "", to) for i in items if i.qty is not None]
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _peak(item: Item) -> float | None:
    """A heart-rate sample's highest reading: its Max (v2), else its qty."""
    if item.extra:
        top = json.loads(item.extra).get("Max")
        if isinstance(top, int | float) and not isinstance(top, bool):
            return float(top)
    return item.qty


def _heart(w: Workout) -> list[Item]:
    return [i for i in w.series.get(_HEART, []) if i.qty is not None]


def is_paced(w: Workout) -> bool:
    """Whether a workout's pace is shown (running, walking, hiking), not its speed."""
    words = f"{w.name or ''} {w.body.get('workoutActivityType') or ''}".lower()
    return any(word in words for word in PACE_WORDS)


def _duration(w: Workout) -> Figure | None:
    sent = w.body.get("duration")
    if isinstance(sent, int | float) and not isinstance(sent, bool) and sent >= 0:
        return Figure(round(float(sent), 1), "s", "sent")
    if w.start and w.end:
        seconds = (from_text(w.end) - from_text(w.start)).total_seconds()
        if seconds >= 0:
            return Figure(round(seconds, 1), "s", "computed")
    return None


def _distance(w: Workout, to: str) -> Figure | None:
    sent = _as(_sent(w.body.get("distance")), to, "sent", 3)
    if sent is not None:
        return sent
    for name in DISTANCE_SERIES:
        total = _series_sum(w.series.get(name, []), to)
        if total is not None:
            return Figure(round(total, 3), units.shown(to), "series")
    route = w.route()
    if len(route) > 1:
        metres = w.route_summary().distance_m
        value = units.convert(metres, "m", to)
        if value is not None:
            return Figure(round(value, 3), units.shown(to), "route")
    return None


def _active_energy(w: Workout) -> Figure | None:
    for key in ("activeEnergyBurned", "activeEnergy"):  # v2 (and the export), v1
        found = _as(_sent(w.body.get(key)), "kcal", "sent", 1)
        if found is not None:
            return found
    total = _series_sum(w.series.get("activeEnergy", []), "kcal")
    return None if total is None else Figure(round(total, 1), "kcal", "series")


def _heart_rate(w: Workout) -> tuple[Figure | None, Figure | None]:
    items = _heart(w)
    if items:
        values = [i.qty for i in items if i.qty is not None]
        peaks = [p for p in map(_peak, items) if p is not None]
        return (
            Figure(round(sum(values) / len(values), 1), "bpm", "series"),
            Figure(round(max(peaks), 1), "bpm", "series"),
        )
    summary = w.body.get("heartRate")
    parts = summary if isinstance(summary, dict) else {}
    avg = _sent(w.body.get("avgHeartRate")) or _sent(parts.get("avg"))
    top = _sent(w.body.get("maxHeartRate")) or _sent(parts.get("max"))
    return _as(avg, "count/min", "sent", 1), _as(top, "count/min", "sent", 1)


def _elevation_gain(w: Workout, to: str) -> Figure | None:
    found = _as(_sent(w.body.get("elevationUp")), to, "sent")
    if found is not None:
        return found
    v1 = w.body.get("elevation")  # {ascent, descent, units}
    if isinstance(v1, dict):
        found = _as(_sent({"qty": v1.get("ascent"), "units": v1.get("units")}), to, "sent")
        if found is not None:
            return found
    route = w.route()
    if len(route) > 1 and sum(i.alt is not None for i in route) > 1:
        value = units.convert(w.route_summary().elevation_gain_m, "m", to)
        if value is not None:
            return Figure(round(value, 2), units.shown(to), "route")
    return None


def _steps(w: Workout) -> Figure | None:
    sent = _sent(w.body.get("stepCount"))  # v1: one {qty, units}
    if sent is not None:
        return Figure(round(sent[0]), "steps", "sent")
    items = [i.qty for i in w.series.get("stepCount", []) if i.qty is not None]
    return Figure(round(sum(items)), "steps", "series") if items else None


def _cadence(w: Workout, key: str) -> Figure | None:
    sent = _sent(w.body.get(key))
    # the app sends 0 for the cadence a workout has not (a walk's swim cadence)
    if sent is None or sent[0] <= 0:
        return None
    unit = "spm" if sent[1] in ("spm", "count/min", "steps/min") else sent[1]
    return Figure(round(sent[0], 1), unit, "sent")


def _plain(w: Workout, keys: Sequence[str], known: Sequence[str], unit: str) -> Figure | None:
    """A figure shown as sent, in one of the ``known`` spellings of ``unit``."""
    for key in keys:
        sent = _sent(w.body.get(key))
        if sent is not None and sent[1] in known:
            return Figure(round(sent[0], 1), unit, "sent")
    return None


def figures(w: Workout, system: UnitSystem) -> Figures:
    """The figures of ``w`` in ``system`` (its series and route, where it has them loaded)."""
    to_length = units.target(system, "distance")
    duration = _duration(w)
    distance = _distance(w, to_length)
    avg_hr, max_hr = _heart_rate(w)
    pace = speed = None
    moved = distance is not None and distance.value > 0
    if is_paced(w):
        if moved and duration is not None and duration.value > 0:
            assert distance is not None
            pace = Figure(round(duration.value / distance.value, 1), units.pace_unit(system),
                          "computed")  # fmt: skip
    else:
        to_speed = units.target(system, "speed")
        speed = _as(_sent(w.body.get("avgSpeed")) or _sent(w.body.get("speed")), to_speed, "sent")
        if speed is None and moved and duration is not None and duration.value > 0:
            assert distance is not None
            per_hour = distance.value / (duration.value / 3600)
            speed = Figure(round(per_hour, 2), units.shown(to_speed), "computed")
    return Figures(
        unit_system=system,
        duration=duration,
        active_energy=_active_energy(w),
        total_energy=_as(_sent(w.body.get("totalEnergy")), "kcal", "sent", 1),
        distance=distance,
        avg_heart_rate=avg_hr,
        max_heart_rate=max_hr,
        pace=pace,
        speed=speed,
        elevation_gain=_elevation_gain(w, units.target(system, "elevation")),
        steps=_steps(w),
        step_cadence=_cadence(w, "stepCadence"),
        swim_cadence=_cadence(w, "swimCadence"),
        temperature=_as(
            _sent(w.body.get("temperature")), units.target(system, "temperature"), "sent", 1
        ),
        humidity=_plain(w, ("humidity",), ("%",), "%"),
        # the wiki spells v1's "intesity"; MET is a kcal/(kg·h)
        intensity=_plain(w, ("intensity", "intesity"), ("MET", "kcal/hr·kg"), "MET"),
    )


# --- splits, zones, weeks ---------------------------------------------------------------------


def unit_splits(w: Workout, system: UnitSystem) -> list[UnitSplit]:
    """The route's splits of a kilometre or a mile (``route_splits``), in that unit."""
    every = units.split_m(system)
    unit = units.length_unit(system)
    out = []
    for s in route_splits(w.route(), every):
        share = s.distance_m / every
        pace = None if s.duration_s is None or share <= 0 else round(s.duration_s / share, 1)
        out.append(UnitSplit(s.number, round(share, 3), unit, s.distance_m, s.duration_s, pace))
    return out


def peak_heart_rate(w: Workout) -> float | None:
    """The highest heart rate of a workout: its series' (when loaded), else its summary's."""
    peaks = [p for p in map(_peak, _heart(w)) if p is not None]
    if peaks:
        return max(peaks)
    _, top = _heart_rate(w)
    return None if top is None else top.value


def heart_rate_zones(w: Workout, max_bpm: float | None) -> Zones | None:
    """Seconds in five zones of ``max_bpm`` (``ZONE_SHARES``): each heart-rate sample counts
    for the time until the next one, at most ``ZONE_SAMPLE_S``, the last one up to the
    workout's end. None without a series or a maximum."""
    items = sorted(_heart(w), key=lambda i: i.t or "")
    if not items or not max_bpm or max_bpm <= 0 or any(i.t is None for i in items):
        return None
    bounds = [round(max_bpm * share, 1) for share in ZONE_SHARES]
    seconds = [0.0] * 5
    times = [from_text(i.t).timestamp() for i in items if i.t is not None]
    end = from_text(w.end).timestamp() if w.end else times[-1]
    for n, item in enumerate(items):
        following = times[n + 1] if n + 1 < len(items) else max(end, times[n])
        held = min(ZONE_SAMPLE_S, following - times[n])
        zone = sum(1 for low in bounds if (item.qty or 0) >= low)
        seconds[zone] += held
    total = sum(seconds)
    lows: list[float | None] = [None, *bounds]
    highs: list[float | None] = [*bounds, None]
    return Zones(
        max_bpm=round(max_bpm, 1),
        zones=[
            Zone(
                zone=n + 1,
                low_bpm=lows[n],
                high_bpm=highs[n],
                seconds=round(seconds[n], 1),
                share=round(seconds[n] / total, 4) if total else 0.0,
            )
            for n in range(5)
        ],
    )


def weekly_totals(found: Iterable[tuple[Workout, Figures]], system: UnitSystem) -> list[WeekTotal]:
    """Per ISO week of the workouts' starts on the phone's clock, oldest first: how many,
    their duration, distance and active energy (of those that have one), in ``system``
    (the figures' own)."""
    weeks: dict[tuple[int, int], list[Figures]] = {}
    length = units.length_unit(system)
    for w, f in found:
        if not w.start:
            continue
        year, week, _ = dt.date.fromisoformat(w.start[:10]).isocalendar()
        weeks.setdefault((year, week), []).append(f)
    out = []
    for (year, week), listed in sorted(weeks.items()):
        distances = [f.distance.value for f in listed if f.distance]
        energies = [f.active_energy.value for f in listed if f.active_energy]
        out.append(
            WeekTotal(
                week=f"{year}-W{week:02d}",
                monday=dt.date.fromisocalendar(year, week, 1).isoformat(),
                workouts=len(listed),
                duration_s=round(sum(f.duration.value for f in listed if f.duration), 1),
                distance=round(sum(distances), 3) if distances else None,
                distance_unit=length,
                active_energy=round(sum(energies), 1) if energies else None,
                energy_unit="kcal",
            )
        )
    return out


def account_peak(bodies: Iterable[Workout], this: Workout) -> float | None:
    """The maximum heart rate the zones are shares of: the highest of the peaks the
    account's workouts sent in their summaries (``bodies``, read without series) and of
    ``this`` workout's own series."""
    peaks = [p for p in itertools.chain(map(peak_heart_rate, bodies), [peak_heart_rate(this)])
             if p is not None]  # fmt: skip
    return max(peaks) if peaks else None


# --- the reads --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkoutDetail:
    """One workout with its figures, splits and heart-rate zones, in one unit system."""

    workout: Workout
    figures: Figures
    splits: list[UnitSplit]
    zones: Zones | None


@dataclass(frozen=True, slots=True)
class WorkoutList:
    """The workouts of a range with their figures (from their summaries: the list reads no
    series), and their totals per week."""

    unit_system: UnitSystem
    workouts: list[tuple[Workout, Figures]]
    weeks: list[WeekTotal]


class FigureReads(WorkoutReads):
    """The workouts with their figures, in the account's unit system unless one is named."""

    def unit_system(self, chosen: str | None = None) -> UnitSystem:
        """``chosen`` (BadUnitSystem if it is none), else the account's."""
        if chosen is not None:
            return units.check_system(chosen)
        return units.system_of(self.account.unit_system)

    def workout_list(
        self,
        *,
        start: Moment | None = None,
        end: Moment | None = None,
        unit_system: str | None = None,
    ) -> WorkoutList:
        system = self.unit_system(unit_system)
        found = [(w, figures(w, system)) for w in self.workouts(start=start, end=end)]
        return WorkoutList(system, found, weekly_totals(found, system))

    def workout_detail(self, identity: str, *, unit_system: str | None = None) -> WorkoutDetail:
        """One workout (NotFound if none) with its series, figures, splits and zones; the
        zones' maximum is ``account_peak`` of all the account's workouts."""
        system = self.unit_system(unit_system)
        w = self.workout(identity)
        zones = None
        if _heart(w):
            zones = heart_rate_zones(w, account_peak(self.workouts(), w))
        return WorkoutDetail(w, figures(w, system), unit_splits(w, system), zones)
