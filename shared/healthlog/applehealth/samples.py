"""A Record element of export.xml (a quantity or a category sample) as HAE's points or events.

``_SampleReader._record`` hands a sample to HAE's own modules as the HAE point or event an
HAE body would carry (``hae.metrics.points``, ``hae.records.build``); ``_direct`` builds a
quantity sample's Points itself, the hot path of an export, with the decisions HAE's
builder makes per metric and unit taken once (``_Shape``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import orjson

from healthlog.applehealth import series, types
from healthlog.applehealth.elements import (
    _SAMPLE_EXTRAS,
    _finite,
    _metadata,
    _Pending,
    _quantity_text,
    _Reader,
    _seconds_between,
    _without_none,
)
from healthlog.hae import dates, metrics, records, sections, units
from healthlog.hae.records import Spec
from healthlog.model import Point

_MEAL_TIMES = {"1": "Before Meal", "2": "After Meal"}
_INSULIN_REASONS = {"1": "Basal", "2": "Bolus"}
_MOTION_CONTEXTS = {"1": "Sedentary", "2": "Active"}
# the metadata entry a quantity's point takes out of its metadata: heart rate as its
# ``context``, glucose and insulin as its text
_SPECIAL_METADATA = {
    "heart_rate": ("HKMetadataKeyHeartRateMotionContext", _MOTION_CONTEXTS),
    "blood_glucose": ("HKBloodGlucoseMealTime", _MEAL_TIMES),
    "insulin_delivery": ("HKInsulinDeliveryReason", _INSULIN_REASONS),
}
_PROTECTION = {"1": "Protection Used", "0": "Protection Not Used"}
_SEXUAL_FIELDS = ("Unspecified", "Protection Used", "Protection Not Used")
_isfinite = math.isfinite
_TIMES_KEPT = 512
_new = tuple.__new__
_MAX_SOURCE = metrics.MAX_SOURCE
_MAX_INLINE = metrics.MAX_INLINE
_SORTED = orjson.OPT_SORT_KEYS
_dumps = orjson.dumps
_instant = dates.instant
# the value key of HAE's point -> the Points' fields (hae.metrics: Min/Avg/Max are the
# fields min/avg/max; blood pressure's systolic/diastolic keep their names)
_HEART_RATE_FIELDS = ("min", "avg", "max")


@dataclass(frozen=True, slots=True)
class _Shape:
    """What becomes of one quantity type's samples in one unit, decided once per reading.

    The decisions HAE's builder makes per metric and unit (``hae.metrics._metric``): the
    fields, the unit stored, the conversion, whether the unit is too long to keep.
    """

    metric: str
    key: str  # the metric's uncovered key (``metrics.<name>``)
    fields: tuple[str, ...]
    sent: str  # the unit as HAE spells it: what the sample was sent in
    percent: bool  # HealthKit's fraction, HAE's percentage
    unit: str  # the unit stored
    too_long: bool  # a unit too long to be part of a key: every point is left out
    convert: bool  # stored in the canonical unit, what was sent kept in extra
    identity: bool
    factor: float
    offset: float
    incomparable: bool  # a unit that does not convert to the series' canonical one
    weight: int  # points per sample
    #: (metadata key, its values' texts) the point takes from its metadata
    metadata: tuple[str, dict[str, str]] | None
    note: bool  # ...as its text (else as its ``context``)

    @classmethod
    def of(cls, kind: str, raw_unit: str | None) -> _Shape:
        metric = types.QUANTITIES[kind]
        unit = types.unit_spelling(raw_unit or "")
        fields = (
            _HEART_RATE_FIELDS if metric == "heart_rate" else (types.VALUE_KEYS.get(kind, "qty"),)
        )
        conv = units.conversion(metric, unit)
        convert = conv is not None and not (conv.unit == unit and conv.identity)
        return cls(
            metric=metric,
            key=f"metrics.{metric}",
            fields=fields,
            sent=unit,
            percent=unit == types.PERCENT,
            unit=conv.unit if conv is not None and convert else unit,
            too_long=len(metric) > metrics.MAX_NAME or len(unit) > metrics.MAX_NAME,
            convert=convert,
            identity=conv is None or conv.identity,
            factor=1.0 if conv is None else conv.factor,
            offset=0.0 if conv is None else conv.offset,
            incomparable=conv is None,
            weight=len(fields),
            metadata=_SPECIAL_METADATA.get(metric),
            note=metric != "heart_rate",
        )


class _SampleReader(_Reader):
    """The readers of a Record element: a quantity or category sample's points, or an
    event of HAE's symptoms, cycle tracking or heart rate notifications."""

    _shapes: dict[tuple[str, str | None], _Shape]
    _times: dict[str, tuple[str, int | None]]

    def _record(self, element: Any, pending: _Pending) -> None:
        kind = element.get("type") or ""
        try:
            if kind in types.QUANTITIES:
                self._quantity(kind, element, pending)
            elif kind in types.CATEGORY_METRICS:
                self._category_metric(kind, element, pending)
            elif kind in types.SYMPTOMS:
                self._event(sections.SYMPTOMS, kind, element, pending)
            elif kind in types.CYCLE_TRACKING:
                self._event(sections.CYCLE_TRACKING, kind, element, pending)
            elif kind in types.NOTIFICATIONS:
                self._event(sections.HEART_RATE_NOTIFICATIONS, kind, element, pending)
            else:
                self.uncovered[kind or "Record"] += 1
        except ValueError:  # a value or a time that cannot be read, or no stable key
            self.unreadable[kind] += 1

    def _quantity(self, kind: str, element: Any, pending: _Pending) -> None:
        metric = types.QUANTITIES[kind]
        value = _finite(element.get("value"))
        unit = types.unit_spelling(element.get("unit") or "")
        if unit == types.PERCENT:  # HealthKit's fraction, HAE's percentage
            value *= 100.0
        point, start_utc, _ = self._sample(element)
        meta = _metadata(element)
        weight = 1
        if metric == "heart_rate":
            # a raw sample is HAE's un-aggregated (per-second) point: Min = Avg = Max; an
            # iOS 8 export's day of statistics has its own min and max (``ios8``)
            low, high = element.get("min"), element.get("max")
            point.update(
                Min=value if low is None else _finite(low),
                Avg=value,
                Max=value if high is None else _finite(high),
            )
            context = _MOTION_CONTEXTS.get(meta.get("HKMetadataKeyHeartRateMotionContext", ""))
            if context is not None:
                point["context"] = context
                del meta["HKMetadataKeyHeartRateMotionContext"]
            weight = 3
        else:
            point[types.VALUE_KEYS.get(kind, "qty")] = value
        if metric == "blood_glucose" and (
            meal := _MEAL_TIMES.get(meta.get("HKBloodGlucoseMealTime", ""))
        ):
            point["mealTime"] = meal
            del meta["HKBloodGlucoseMealTime"]
        if metric == "insulin_delivery" and (
            why := _INSULIN_REASONS.get(meta.get("HKInsulinDeliveryReason", ""))
        ):
            point["reason"] = why
            del meta["HKInsulinDeliveryReason"]
        if metric == "heart_rate_variability":
            sent = [
                (beat.get("bpm"), beat.get("time"))
                for beat in element.iter("InstantaneousBeatsPerMinute")
            ]
            if sent:
                point["heartbeatSeries"] = series.beats(str(point["date"]), start_utc, sent)
        if meta:
            point["metadata"] = meta
        pending.add(metric, unit, point, weight)

    def _direct(self, kind: str, element: Any, pending: _Pending) -> None:
        """A quantity sample straight to its Points: what ``_quantity`` hands HAE's builder
        (``metrics.points``) and what that builder makes of it, without the HAE point dict
        between them. The one hot path of an export (most of its elements are quantity
        samples); tests/unit/test_applehealth_direct.py holds it to HAE's builder, field
        by field, over every quantity type and the odd values of real exports.

        Raises ValueError where ``_quantity`` does (a value, a time or a source that
        cannot be read); what HAE's builder leaves out is its uncovered key, as there.
        """
        get = element.attrib.get
        raw_unit = get("unit")
        shape = self._shapes.get((kind, raw_unit))
        if shape is None:
            shape = self._shapes[(kind, raw_unit)] = _Shape.of(kind, raw_unit)
        text = get("value")
        if text is None:
            raise ValueError("no value")
        value = float(text)
        if not _isfinite(value):
            raise ValueError("not a finite number")
        if shape.percent:  # HealthKit's fraction, HAE's percentage
            value *= 100.0
        times = self._times
        start_raw = get("startDate")
        if start_raw is None:
            raise ValueError("no start")
        when = times.get(start_raw)
        if when is None:
            when = _instant(start_raw)
            if len(times) >= _TIMES_KEPT:
                times.clear()
            times[start_raw] = when
        start, offset = when
        end_raw = get("endDate")
        if end_raw is None:
            end = None
        else:
            when = times.get(end_raw)
            if when is None:
                when = times[end_raw] = _instant(end_raw)
            end = when[0]
        who = get("sourceName")
        if who is None:
            who = ""
        elif len(who) > _MAX_SOURCE:
            metrics.source(who)  # raises: a source too long to be part of a key
        rest: dict[str, object] = {}
        for key in _SAMPLE_EXTRAS:
            extra_value = get(key)
            if extra_value is not None:
                rest[key] = extra_value
        note = None
        if len(element):
            meta = _metadata(element)
            special = shape.metadata
            if special is not None:
                mapped = special[1].get(meta.get(special[0], ""))
                if mapped is not None:
                    del meta[special[0]]
                    if shape.note:
                        note = mapped
                    else:
                        rest["context"] = mapped
            if meta:
                rest["metadata"] = meta
        pending.size += shape.weight  # counted as read, as for the points HAE builds
        found = pending.found
        if shape.too_long:
            found.uncovered.add(shape.key)
            return
        extra = _dumps(rest, option=_SORTED).decode() if rest else None
        if extra is not None and len(extra) > _MAX_INLINE:
            found.uncovered.add(shape.key)  # fields too wide to keep inline
            return
        if shape.convert:
            rest["sent_unit"] = shape.sent
            if not shape.identity:
                rest["sent_qty"] = value
                value = units.justified(value * shape.factor + shape.offset, value, shape.factor)
            extra = _dumps(rest, option=_SORTED).decode()
        elif shape.incomparable:
            found.incomparable += shape.weight
        metric, unit = shape.metric, shape.unit
        append = pending.points.append
        for name in shape.fields:
            append(
                _new(Point, (metric, name, who, start, offset, end, value, note, unit, extra, 0))
            )

    def _category_metric(self, kind: str, element: Any, pending: _Pending) -> None:
        metric = types.CATEGORY_METRICS[kind]
        value = element.get("value")
        point, start_utc, end_utc = self._sample(element)
        seconds = _seconds_between(start_utc, end_utc)
        meta = _metadata(element)
        unit, weight = "count", 1
        if metric == "sleep_analysis":
            stage = types.SLEEP_STAGES.get(value or "")
            if stage is None:
                raise ValueError("a sleep value this reader does not know")
            # HAE's unaggregated segment: startDate, endDate, qty (hours), value
            point["startDate"] = point.pop("date")
            point["endDate"] = point.pop("end", point["startDate"])
            point.update(qty=seconds / 3600, value=stage)
            unit = "hr"
        elif metric == "mindful_minutes":
            point["qty"], unit = seconds / 60, "min"
        elif metric in ("handwashing", "toothbrushing"):
            point["qty"], unit = seconds, "s"
        elif metric == "apple_stand_hour":
            stood = value == "HKCategoryValueAppleStandHourStood"
            if not stood and value != "HKCategoryValueAppleStandHourIdle":
                raise ValueError("a stand-hour value this reader does not know")
            point["qty"] = 1.0 if stood else 0.0
        else:  # sexual_activity: HAE's three counts, one of them 1
            used = _PROTECTION.get(meta.pop("HKSexualActivityProtectionUsed", ""), "Unspecified")
            point.update({key: 1.0 if key == used else 0.0 for key in _SEXUAL_FIELDS})
            weight = 3
        if value not in (None, "HKCategoryValueNotApplicable") and metric not in (
            "sleep_analysis",
            "apple_stand_hour",
        ):
            point["categoryValue"] = value
        if meta:
            point["metadata"] = meta
        pending.add(metric, unit, point, weight)

    def _event(self, spec: Spec, kind: str, element: Any, pending: _Pending) -> None:
        """A category sample that HAE sends in one of its event sections."""
        point, _, _ = self._sample(element)
        meta = _metadata(element)
        event: dict[str, object] = {
            "start": point.pop("date"),
            "end": point.pop("end", None),
            **point,
        }
        value = types.category_text(element.get("value"))
        if spec is sections.SYMPTOMS:
            event["name"] = types.SYMPTOMS[kind]
            if value is not None:
                event["severity"] = value
            if "HKWasUserEntered" in meta:
                event["userEntered"] = meta.pop("HKWasUserEntered") == "1"
        elif spec is sections.CYCLE_TRACKING:
            event["name"] = types.CYCLE_TRACKING[kind]
            if value is not None:
                event["value"] = value
            if "HKMenstrualCycleStart" in meta:
                event["isCycleStart"] = meta.pop("HKMenstrualCycleStart") == "1"
        else:
            event["heartNotification"] = types.NOTIFICATIONS[kind]
            threshold = meta.pop("HKHeartRateEventThreshold", None)
            if threshold is not None:
                qty, unit = _quantity_text(threshold)
                event["threshold"] = qty if qty is not None else threshold
                if unit:
                    event["thresholdUnits"] = unit
        if meta:
            event["metadata"] = meta
        found = self._found()
        pending.records.append(records.build(spec, _without_none(event), found))
        self._took(found)
        pending.size += 1
