"""A Workout element of export.xml as HAE's workout: statistics, events, activities, route.

``_WorkoutReader._workout`` builds what an HAE v2 workout would carry for it and hands
it to HAE's ``records.build`` (``_WORKOUTS``: its identity and series); a route's fixes
come from the GPX files it names or its inline ``Location`` elements, up to its cap.
"""

from __future__ import annotations

from typing import Any

from lxml import etree

from healthlog.applehealth import series, types
from healthlog.applehealth.elements import (
    _finite_or_none,
    _metadata,
    _Node,
    _number_or_text,
    _Pending,
    _quantity_text,
    _Reader,
    _without_none,
)
from healthlog.applehealth.files import safe_member
from healthlog.hae import records
from healthlog.hae.records import Spec

_SECONDS = {"s": 1.0, "sec": 1.0, "min": 60.0, "hr": 3600.0, "h": 3600.0, "d": 86400.0}


class _WorkoutReader(_Reader):
    """The reader of a Workout element and its routes."""

    def _workout(self, element: Any, pending: _Pending) -> None:
        activity = element.get("workoutActivityType") or ""
        try:
            point, _, _ = self._sample(element)
        except ValueError:
            self.unreadable["Workout"] += 1
            return
        meta = _metadata(element)
        body: dict[str, object] = {
            "name": types.workout_name(activity),
            "workoutActivityType": activity,
            "start": point.pop("date"),
            "end": point.pop("end", None),
            **point,
        }
        duration = _finite_or_none(element.get("duration"))
        factor = _SECONDS.get(element.get("durationUnit") or "min")
        if duration is not None and factor is not None:
            body["duration"] = duration * factor
        _workout_totals(element, body)
        stats = [child for child in element if child.tag == "WorkoutStatistics"]
        if stats:
            body["statistics"] = {_stat_name(s): _stat(s) for s in stats}
            _workout_summary(stats, body)
        if "HKIndoorWorkout" in meta:
            body["isIndoor"] = meta["HKIndoorWorkout"] == "1"
        for key, target in (
            ("HKWeatherTemperature", "temperature"),
            ("HKWeatherHumidity", "humidity"),
            ("HKElevationAscended", "elevationUp"),
            ("HKAverageMETs", "intensity"),
        ):
            if key in meta:
                qty, unit = _quantity_text(meta[key])
                if qty is not None and target == "humidity" and unit == "%" and qty > 100:
                    qty /= 100  # newer exports write hundredths: 8100 % is 81 %
                if qty is not None:
                    body[target] = {"qty": qty, "units": unit}
        if meta:
            body["metadata"] = meta
        events = [
            _without_none(
                {
                    "date": e.get("date"),
                    "type": e.get("type"),
                    "duration": _finite_or_none(e.get("duration")),
                    "units": e.get("durationUnit"),
                    "metadata": _metadata(e) or None,
                }
            )
            for e in element
            if e.tag == "WorkoutEvent"
        ]
        if events:
            body["events"] = events
        activities = [_activity(a) for a in element if a.tag == "WorkoutActivity"]
        if activities:
            body["activities"] = activities
        files: set[str] = set()
        fixes: list[dict[str, object]] = []
        sent = 0
        for route in element.iter("WorkoutRoute"):
            sent += self._route(route, body, fixes, files)
        if fixes:
            body["route"] = fixes
        found = self._found()
        record = records.build(_WORKOUTS, _without_none(body), found, sent={"route": sent})
        self._took(found)
        pending.records.append(record)
        pending.size += 1 + len(record.items)

    def _route(
        self, route: Any, body: dict[str, object], fixes: list[dict[str, object]], files: set[str]
    ) -> int:
        """A WorkoutRoute's fixes onto ``fixes``, up to the workout's cap: from the GPX
        files it names (each file once per workout, however often it is named: ``files``),
        or written inline as ``Location`` elements, as exports before iOS 13 do. How many
        fixes the route holds, those past the cap included (counted, not built)."""
        cap = self.caps.per_record(_WORKOUTS.section)
        sent = 0
        for place in route:
            if place.tag == "Location":
                sent += 1
                if len(fixes) < cap:
                    fixes.append(_location(place))
        for reference in route.iter("FileReference"):
            path = reference.get("path") or ""
            name = safe_member("", path)
            if name in files:
                continue
            stream = self.export.open_member(path)
            if name is None or stream is None:
                self.unreadable["WorkoutRoute"] += 1
                continue
            files.add(name)
            try:
                with stream:
                    read = series.route(stream, limit=max(0, cap - len(fixes)))
            except (etree.XMLSyntaxError, series.DoctypeRefused):
                self.unreadable["WorkoutRoute"] += 1
                continue
            fixes.extend(read.fixes)
            sent += read.sent
            body["routeFile"] = path.lstrip("/")
        return sent


def _workout_identity(element: dict[str, object], start: str | None, end: str | None) -> str:
    # The export has no workout UUID: the activity type, the start (UTC) and the source
    # name are written for every workout and do not change between two exports.
    return records.keyed(
        records.field_text(element, "workoutActivityType"),
        records.field_text(element, "source"),
        start,
    )


_WORKOUTS = Spec(
    "workouts",
    _workout_identity,
    name_key="name",
    qty_keys={"route": (), "events": ("duration",), "activities": ()},
)


def _stat_name(stat: Any) -> str:
    kind = stat.get("type") or ""
    return types.QUANTITIES.get(kind, kind)


def _stat(stat: Any) -> dict[str, object]:
    out: dict[str, object] = {}
    for key in ("sum", "average", "minimum", "maximum"):
        value = _finite_or_none(stat.get(key))
        if value is not None:
            out[key] = value
    out["units"] = stat.get("unit")
    for key in ("startDate", "endDate"):
        if stat.get(key) is not None:
            out[key] = stat.get(key)
    return _without_none(out)


def _workout_totals(element: Any, body: dict[str, object]) -> None:
    """The attributes of workouts exported before iOS 16 (no WorkoutStatistics)."""
    for attribute, target in (
        ("totalDistance", "distance"),
        ("totalEnergyBurned", "activeEnergyBurned"),
    ):
        qty = _finite_or_none(element.get(attribute))
        if qty is not None:
            body[target] = {"qty": qty, "units": element.get(attribute + "Unit")}
    for attribute in ("totalSwimmingStrokeCount", "totalFlightsClimbed"):
        qty = _finite_or_none(element.get(attribute))
        if qty is not None:
            body[attribute] = qty


def _workout_summary(stats: list[Any], body: dict[str, object]) -> None:
    """HAE v2's summary quantities from the workout's statistics."""
    for stat in stats:
        kind = (stat.get("type") or "").removeprefix(types.QUANTITY_PREFIX)
        unit = stat.get("unit")
        total = _finite_or_none(stat.get("sum"))
        if kind == "ActiveEnergyBurned" and total is not None:
            body["activeEnergyBurned"] = {"qty": total, "units": unit}
        elif kind.startswith("Distance") and total is not None:
            body["distance"] = {"qty": total, "units": unit}
        elif kind == "HeartRate":
            parts = {
                name: {"qty": value, "units": unit}
                for name, key in (("min", "minimum"), ("avg", "average"), ("max", "maximum"))
                if (value := _finite_or_none(stat.get(key))) is not None
            }
            if parts:
                body["heartRate"] = parts
            if "avg" in parts:
                body["avgHeartRate"] = parts["avg"]
            if "max" in parts:
                body["maxHeartRate"] = parts["max"]


# a Location's attributes that HAE v2's route fix has by the same name
_LOCATION_KEYS = (
    "latitude",
    "longitude",
    "altitude",
    "speed",
    "course",
    "horizontalAccuracy",
    "verticalAccuracy",
)


def _location(element: _Node) -> dict[str, object]:
    """An inline route fix (``<Location date= latitude= longitude= .../>``) as HAE v2's."""
    fix: dict[str, object] = {
        key: _number_or_text(element.attrib.get(key)) for key in _LOCATION_KEYS
    }
    fix["timestamp"] = element.attrib.get("date")
    return _without_none(fix)


def _activity(element: Any) -> dict[str, object]:
    """A WorkoutActivity (iOS 16 and later: one part of a multi-sport workout)."""
    out: dict[str, object] = {
        str(k): _number_or_text(str(v)) for k, v in element.attrib.items() if k != "startDate"
    }
    out["start"] = element.get("startDate")
    stats = [child for child in element if child.tag == "WorkoutStatistics"]
    if stats:
        out["statistics"] = {_stat_name(s): _stat(s) for s in stats}
    meta = _metadata(element)
    if meta:
        out["metadata"] = meta
    return _without_none(out)
