"""Workouts: the ``Workout`` value, its route's summary and splits, and the reads.

``WorkoutReads``: the workouts of a range (without their series) and one workout with its
series; ``summarise_route`` (distance, elevation gain, bounding box) and ``route_splits``
(a stretch every kilometre, timed from the fixes), which ``Workout``'s methods use.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from healthlog.clock import Moment, from_text
from healthlog.model import Item, Record
from healthlog.reads.base import Base
from healthlog.reads.bounds import _bound, local_text
from healthlog.reads.values import HeartRateStats, NotFound, RouteSummary, Split


@dataclass(frozen=True)
class Workout:
    identity: str
    name: str | None
    start: str | None  # with the workout's offset
    end: str | None
    source: str | None
    body: dict[str, Any]
    series: dict[str, list[Item]] = field(default_factory=dict)
    utc_offset: int | None = None  # the workout's, minutes east of UTC: its items' clock

    def route(self) -> list[Item]:
        return [i for i in self.series.get("route", []) if i.lat is not None and i.lon is not None]

    def route_summary(self) -> RouteSummary:
        return summarise_route(self.route())

    def splits(self, every_m: float = 1000.0) -> list[Split]:
        """The route's splits of ``every_m`` metres (``route_splits``)."""
        return route_splits(self.route(), every_m)

    def heart_rate_stats(self, series: str = "heartRateData") -> HeartRateStats | None:
        """Min, average and max of a heart-rate series (the samples' ``qty``), or None.

        A v2 sample's ``qty`` is its ``Avg`` (its own Min and Max are in ``extra``): the
        average is of the samples, the min and max of their averages.
        """
        items = [i for i in self.series.get(series, []) if i.qty is not None]
        if not items:
            return None
        values = [i.qty for i in items if i.qty is not None]
        units = sorted({i.unit for i in items if i.unit})
        return HeartRateStats(
            samples=len(values),
            min=min(values),
            avg=round(sum(values) / len(values), 2),
            max=max(values),
            unit=units[0] if units else None,
        )


def summarise_route(route: Iterable[Item]) -> RouteSummary:
    """Distance (great circle, m), elevation gain (m) and bounding box of a route."""
    fixes = [i for i in route if i.lat is not None and i.lon is not None]
    distance = gain = 0.0
    for a, b in itertools.pairwise(fixes):
        distance += _haversine_m(a.lat, a.lon, b.lat, b.lon)  # type: ignore[arg-type]
        if a.alt is not None and b.alt is not None and b.alt > a.alt:
            gain += b.alt - a.alt
    if not fixes:
        return RouteSummary(0, 0.0, 0.0, None)
    lons = [i.lon for i in fixes if i.lon is not None]
    lats = [i.lat for i in fixes if i.lat is not None]
    bbox = (min(lons), min(lats), max(lons), max(lats))
    return RouteSummary(len(fixes), round(distance, 1), round(gain, 1), bbox)


def route_splits(route: Sequence[Item], every_m: float = 1000.0) -> list[Split]:
    """The route cut every ``every_m`` metres of great-circle distance, in order.

    A split's duration is read off the fixes' times, each boundary placed between the two
    fixes that straddle it in proportion to the distance (None when a fix has no time);
    the last split is what is left, when anything is. No fixes, or a route that does not
    move: no splits.
    """
    fixes = [i for i in route if i.lat is not None and i.lon is not None]
    timed = all(i.t is not None for i in fixes)
    seconds = [from_text(i.t).timestamp() if i.t is not None else 0.0 for i in fixes]
    splits: list[Split] = []
    done = 0.0  # the distance up to the last boundary
    at = 0.0  # the distance up to the current fix
    boundary_s = seconds[0] if fixes else 0.0
    for n in range(1, len(fixes)):
        a, b = fixes[n - 1], fixes[n]
        step = _haversine_m(a.lat, a.lon, b.lat, b.lon)  # type: ignore[arg-type]
        while step > 0 and at + step >= done + every_m:
            share = (done + every_m - at) / step
            crossed = seconds[n - 1] + share * (seconds[n] - seconds[n - 1])
            duration = round(crossed - boundary_s, 1) if timed else None
            splits.append(Split(len(splits) + 1, every_m, duration))
            done += every_m
            boundary_s = crossed
        at += step
    rest = at - done
    if rest >= 0.5:  # less than half a metre left is rounding, not a stretch
        duration = round(seconds[-1] - boundary_s, 1) if timed else None
        splits.append(Split(len(splits) + 1, round(rest, 1), duration))
    return splits


def _haversine_m(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    radius = 6_371_008.8  # the mean Earth radius
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * radius * math.asin(math.sqrt(min(1.0, h)))


def _workout(record: Record) -> Workout:
    series: dict[str, list[Item]] = defaultdict(list)
    for item in record.items:
        series[item.series].append(item)
    return Workout(
        identity=record.identity,
        name=record.name,
        start=local_text(record.start, record.utc_offset),
        end=local_text(record.end, record.utc_offset),
        source=record.source,
        body=orjson.loads(record.body),
        series=dict(series),
        utc_offset=record.utc_offset,
    )


class WorkoutReads(Base):
    """The reads of workouts."""

    def workouts(self, *, start: Moment | None = None, end: Moment | None = None) -> list[Workout]:
        """The workouts in [start, end), without their series."""
        return [
            _workout(stored.record)
            for stored in self.journal.export_records(
                account_id=self.account.id,
                section="workouts",
                start_from=_bound(start),
                start_to=_bound(end),
                with_items=False,
            )
        ]

    def workout(self, identity: str) -> Workout:
        """One workout with its series (route, heart rate, ...)."""
        found = list(
            self.journal.export_records(
                account_id=self.account.id, section="workouts", identity=identity
            )
        )
        if not found:
            raise NotFound("no such workout")
        return _workout(found[0].record)
