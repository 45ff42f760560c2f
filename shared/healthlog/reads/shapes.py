"""One place for the JSON of a metric field, a workout (its head, or all of one), a record
and its fields, a night and the figures of nights, and a delivery.

Every interface renders these as they are, so a key means one thing everywhere: the
dashboard's ``/api``, the MCP tools, ``healthlog deliveries --json`` and ``healthlog
export --section``. Where an interface adds to one (the dashboard's ``body_url``, a
workout's series), it adds keys of its own beside these.

Times given to ``show`` are ISO 8601 with the phone's offset (``local_text``); an
interface that shows them in another zone passes its own (the MCP tools' ``time_zone``),
the others leave them as they are (``as_is``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from healthlog.journal.port import StoredRecord
from healthlog.model import Delivery, Item, Record
from healthlog.reads import display
from healthlog.reads.bounds import local_text
from healthlog.reads.figures import Figures, UnitSplit, WeekTotal, WorkoutDetail, Zones
from healthlog.reads.sleep_figures import SleepFigures, Window
from healthlog.reads.summary import Glance
from healthlog.reads.values import MetricInfo, Night
from healthlog.reads.workouts import Workout

#: how an interface shows a time with its offset (None: no time)
Show = Callable[[str | None], str | None]

#: a workout's amounts that its head carries when sent as ``{qty, units}``
WORKOUT_AMOUNTS = ("distance", "activeEnergyBurned", "activeEnergy", "totalEnergy")


def as_is(at: str | None) -> str | None:
    """A time shown as the reads give it: with the phone's offset."""
    return at


def workout_head(w: Workout, show: Show = as_is) -> dict[str, Any]:
    """A workout without its series: identity, name, times, source, its duration in
    seconds as sent (``duration``, and ``duration_s`` for the MCP tools' clients), its
    location, and its distance and energies where sent as ``{qty, units}``."""
    body = w.body
    duration = body.get("duration")
    return {
        "identity": w.identity,
        "name": w.name,
        "start": show(w.start),
        "end": show(w.end),
        "source": w.source,
        "duration": duration,
        "duration_s": duration,
        "location": body.get("location"),
        **{key: body[key] for key in WORKOUT_AMOUNTS if isinstance(body.get(key), dict)},
    }


def figures_dict(f: Figures) -> dict[str, Any]:
    """A workout's figures: ``unit_system``, and each figure it has as ``{value, unit,
    basis, display_name}`` (``reads.figures``; basis: sent, series, route or computed;
    the name for people: ``display.figure_name``); one it has not is absent."""
    out: dict[str, Any] = {"unit_system": f.unit_system}
    for name in f.__dataclass_fields__:
        value = getattr(f, name)
        if name != "unit_system" and value is not None:
            out[name] = value.as_dict() | {"display_name": display.figure_name(name)}
    return out


def split_dict(s: UnitSplit) -> dict[str, Any]:
    """A split of a kilometre or a mile: number, distance (in its unit, and in metres),
    seconds, pace (seconds per unit)."""
    return {
        "split": s.number,
        "distance": s.distance,
        "unit": s.unit,
        "distance_m": round(s.distance_m, 1),
        "duration_s": s.duration_s,
        "pace": s.pace,
        "pace_unit": f"s/{s.unit}",
    }


def zones_dict(z: Zones | None) -> dict[str, Any] | None:
    """Heart-rate zones: the maximum they are shares of, and each zone's bounds (bpm; None:
    open), seconds and share of the time counted."""
    if z is None:
        return None
    return {
        "max_bpm": z.max_bpm,
        "zones": [
            {"zone": n.zone, "low_bpm": n.low_bpm, "high_bpm": n.high_bpm,
             "seconds": n.seconds, "share": n.share}
            for n in z.zones
        ],
    }  # fmt: skip


def week_dict(t: WeekTotal) -> dict[str, Any]:
    """A week's totals of workouts (ISO week on the phone's clock)."""
    return {
        "week": t.week,
        "monday": t.monday,
        "workouts": t.workouts,
        "duration_s": t.duration_s,
        "distance": t.distance,
        "distance_unit": t.distance_unit,
        "active_energy": t.active_energy,
        "energy_unit": t.energy_unit,
    }


def workout_detail_dict(d: WorkoutDetail) -> dict[str, Any]:
    """What one workout's read adds to its head: its figures, splits and zones."""
    return {
        "figures": figures_dict(d.figures),
        "splits": [split_dict(s) for s in d.splits],
        "heart_rate_zones": zones_dict(d.zones),
    }


def workout_dict(d: WorkoutDetail, show: Show = as_is) -> dict[str, Any]:
    """One workout as its page and its tool give it: its head (``workout_head``), its
    figures, splits and zones (``workout_detail_dict``), the unit system of its figures,
    its body as sent and the names of its series. An interface adds its series' values
    and its route in its own shapes (the dashboard's chart, the MCP tool's cut)."""
    w = d.workout
    return (
        workout_head(w, show)
        | workout_detail_dict(d)
        | {"unit_system": d.figures.unit_system, "body": w.body, "series": sorted(w.series)}
    )


def field_dict(info: MetricInfo, show: Show = as_is) -> dict[str, Any]:
    """A metric field of the catalog: its metric and kind, field, unit, the points its
    deliveries brought (a point sent twice counts twice), its first and last start (UTC
    text, or as ``show`` shows a UTC time), its sources. The MCP tool groups these by
    metric; the dashboard and ``healthlog metrics`` list them."""
    return {
        "metric": info.metric,
        "kind": info.kind.value,
        "field": info.field,
        "unit": info.unit,
        "points": info.points,
        "first": show(info.first),
        "last": show(info.last),
        "sources": list(info.sources),
    }


def night_dict(n: Night, show: Show = as_is) -> dict[str, Any]:
    """A night of sleep: its label (the day it ends on), the source that counted, hours
    asleep, hours per stage (``stages``, and ``stages_h`` for the MCP tools' clients:
    the same hours), its first and last time."""
    return {
        "night": n.night,
        "source": n.source,
        "asleep_h": round(n.asleep_h, 4),
        "stages": n.stages,
        "stages_h": n.stages,
        "start": show(n.start),
        "end": show(n.end),
    }


def sleep_dict(found: SleepFigures, show: Show = as_is) -> dict[str, Any]:
    """Nights of sleep with their figures (``reads.sleep_figures``): each night as
    ``night_dict`` gives it and its ``in_bed_h``, ``bedtime`` and ``wake_time`` (``HH:MM``
    on the phone's clock that night), ``asleep_7d_h`` (the average over the 7 days that
    end on it); and ``windows``, the 7 and 30 days that end on the last night, each
    with its ``nights``, averages (``asleep_h``, ``in_bed_h``, ``stages``, ``bedtime``,
    ``wake_time``) and the spread of bedtime and wake time in minutes
    (``bedtime_sd_min``, ``wake_time_sd_min``: standard deviations)."""
    return {
        "nights": [
            night_dict(f.night, show)
            | {
                "in_bed_h": f.in_bed_h,
                "bedtime": f.bedtime,
                "wake_time": f.wake_time,
                "asleep_7d_h": f.asleep_7d_h,
            }
            for f in found.nights
        ],
        "windows": [window_dict(w) for w in found.windows],
    }


def window_dict(w: Window) -> dict[str, Any]:
    """The figures of one window of nights (``sleep_dict``)."""
    return {
        "days": w.days,
        "first": w.first,
        "last": w.last,
        "nights": w.nights,
        "asleep_h": w.asleep_h,
        "in_bed_h": w.in_bed_h,
        "stages": w.stages,
        "bedtime": w.bedtime,
        "wake_time": w.wake_time,
        "bedtime_sd_min": w.bedtime_sd_min,
        "wake_time_sd_min": w.wake_time_sd_min,
    }


def record_dict(record: Record, show: Show = as_is) -> dict[str, Any]:
    """A record as plain values: times with their offset, the source as stored and by
    its name (``source_name``), the body as JSON, every field it sent for people
    (``fields``, ``record_fields``), and with its items the series by name."""
    body = orjson.loads(record.body)
    out: dict[str, Any] = {
        "section": record.section,
        "identity": record.identity,
        "name": record.name,
        "start": show(local_text(record.start, record.utc_offset)),
        "end": show(local_text(record.end, record.utc_offset)),
        "source": record.source,
        "source_name": source_name(record.source, body),
        "body": body,
    }
    grouped: dict[str, list[Item]] = defaultdict(list)
    for item in record.items:
        grouped[item.series].append(item)
    out["fields"] = record_fields(record.section, body, grouped)
    if grouped:
        out["series"] = {
            series: [
                {
                    k: v
                    for k, v in (
                        ("t", show(local_text(item.t, record.utc_offset))),
                        ("qty", item.qty),
                        ("lat", item.lat),
                        ("lon", item.lon),
                        ("alt", item.alt),
                        ("unit", item.unit),
                    )
                    if v is not None
                }
                for item in items
            ]
            for series, items in grouped.items()
        }
    return out


#: the body's fields a record's head shows already: its times and its source (a source
#: sent as an object is a field too: the head shows its name, the field all of it)
HEAD_FIELDS = frozenset({"start", "end", "source"})
#: series drawn as a chart rather than listed among the fields: an ECG's voltages
TRACES = frozenset({"voltage"})
#: the keys of a source or a device sent as an object that name it, the first present
_NAME_KEYS = ("name", "deviceName", "device", "productType", "model", "bundleIdentifier")
#: the name in the Health app's export's device text: ``<<HKDevice: 0x...>, name:Apple Watch, ...>``
_DEVICE_NAME = re.compile(r"(?:^|[<,\s])name:([^,>]+)")


def record_fields(
    section: str, body: dict[str, Any], series: Mapping[str, list[Item]] | None = None
) -> list[dict[str, Any]]:
    """Every field of a record as sent, for people: ``field`` (the key as sent),
    ``label`` (``display.record_field_label``), ``value`` (as sent: a list stays a
    list, an object an object) and ``unit`` where one is known, in the section's order
    (``display.record_field_rank``). The times and the source are the record's head
    (``HEAD_FIELDS``; an HRV reading's ``date`` is its start; a source sent as an object
    is a field as well); each series given (but
    an ECG's voltages, a chart, and a series without quantities, a route) is a field of
    its own: its quantities in order and ``items``, how many."""
    fields: dict[str, dict[str, Any]] = {}
    for key, value in body.items():
        if key == "source" and isinstance(value, dict):
            pass
        elif key in HEAD_FIELDS or (key == "date" and "start" not in body):
            continue
        field: dict[str, Any] = {
            "field": key,
            "label": display.record_field_label(section, key),
            "value": value,
        }
        unit = _field_unit(section, key, body)
        if unit:
            field["unit"] = unit
        fields[key] = field
    for name, items in (series or {}).items():
        if name in TRACES or all(i.qty is None for i in items):
            continue  # a trace, or a series of places (a route), not of quantities
        sent_unit = next((i.unit for i in items if i.unit), None)
        unit = display.unit_name(sent_unit) if sent_unit else _field_unit(section, name, body)
        field = {
            "field": name,
            "label": display.record_field_label(section, name),
            "value": [i.qty for i in items],
            "items": len(items),
        }
        if unit:
            field["unit"] = unit
        fields[name] = field
    return [fields[k] for k in sorted(fields, key=lambda k: display.record_field_rank(section, k))]


def record_columns(records: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The fields of a list of records (``record_dict``s of one section) as a table's
    columns: each ``field`` once, with its ``label``, in the section's order."""
    seen: dict[str, dict[str, str]] = {}
    section = ""
    for r in records:
        section = r["section"]
        for f in r["fields"]:
            seen.setdefault(f["field"], {"field": f["field"], "label": f["label"]})
    return [seen[k] for k in sorted(seen, key=lambda k: display.record_field_rank(section, k))]


def _field_unit(section: str, key: str, body: dict[str, Any]) -> str | None:
    if key == "threshold" and isinstance(body.get("thresholdUnits"), str):
        return display.unit_name(body["thresholdUnits"])
    return display.RECORD_FIELD_UNITS.get((section, key))


def source_name(stored: str | None, body: Mapping[str, Any]) -> str | None:
    """The name of a record's source: as sent when a name, an object's ``name`` (a
    heart-rate notification sends ``{"name": "Apple Watch", "bundleIdentifier": ...}``;
    the store keeps it as JSON text), else the device's name (the Health app's export's
    ``device``); None when none was sent or it is empty."""
    for sent in (body.get("source"), stored):
        name = _named(sent)
        if name:
            return name
    return _named(body.get("device"))


def _named(value: object) -> str | None:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError:
                return text
        else:
            if not text.startswith("<"):
                return text or None
            found = _DEVICE_NAME.search(text)
            return found.group(1).strip() if found else None
    if isinstance(value, dict):
        for key in _NAME_KEYS:
            name = _named(value.get(key))
            if name:
                return name
    return None


def stored_record(stored: StoredRecord) -> dict[str, Any]:
    """A record as stored, for ``healthlog export``: UTC text and the offset apart, its
    account and delivery, every item whole (``extra`` as JSON); and for people, as
    ``record_dict`` gives them, its ``source_name`` and the ``fields`` of its body (its
    series are the items)."""
    r = stored.record
    body = orjson.loads(r.body)
    return {
        "account_id": stored.account_id,
        "section": r.section,
        "identity": r.identity,
        "start": r.start,
        "end": r.end,
        "utc_offset": r.utc_offset,
        "name": r.name,
        "source": r.source,
        "source_name": source_name(r.source, body),
        "body": body,
        "fields": record_fields(r.section, body),
        "items": [_stored_item(i) for i in r.items],
        "delivery_id": stored.delivery_id,
    }


def _stored_item(item: Item) -> dict[str, Any]:
    row: dict[str, Any] = {k: v for k, v in item._asdict().items() if v is not None}
    if item.extra:
        row["extra"] = orjson.loads(item.extra)
    return row


def delivery_dict(d: Delivery, *, full: bool = False) -> dict[str, Any]:
    """A delivery as ``healthlog deliveries --json`` and the dashboard's ``/api/deliveries``
    give it: its outcome, what its fold wrote, and whether retention removed its body
    (``body_removed``, and when: ``body_removed_at``). ``full``: and its archive key, when
    it was folded, and its headers as stored (one delivery's page)."""
    out: dict[str, Any] = {
        "id": d.id,
        "account_id": d.account_id,
        "received_at": d.received_at.isoformat(),
        "status": d.status.value,
        "size": d.size,
        "content_type": d.content_type,
        "points": d.points,
        "records": d.records,
        "repeated": d.repeated,
        "uncovered": list(d.uncovered),
        "failure": d.failure,
        "attempts": d.attempts,
        "body_removed": d.body_removed_at is not None,
        "body_removed_at": d.body_removed_at.isoformat() if d.body_removed_at else None,
    }
    if full:
        out |= {
            "archive_key": d.archive_key,
            "folded_at": d.folded_at.isoformat() if d.folded_at else None,
            "headers": dict(d.headers),
        }
    return out


#: the cards that are no stored metric of their own: their names and units
OWN_CARDS = {"sleep_analysis": ("Sleep", "h"), "workouts": ("Workouts", "min")}


def card_names(card: Glance) -> tuple[str, str]:
    """A card's name and unit for people."""
    if card.metric in OWN_CARDS:
        return OWN_CARDS[card.metric]
    return display.metric_name(card.metric), display.unit_name(card.unit, card.metric)


def card_dict(card: Glance) -> dict[str, object]:
    """A card's JSON (``Glance.as_dict``) with its names for people."""
    name, unit = card_names(card)
    return card.as_dict() | {"display_name": name, "display_unit": unit}
