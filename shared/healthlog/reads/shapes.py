"""One place for the JSON of a metric field, a workout's head, a record, a night and a
delivery.

Every interface renders these as they are, so a key means one thing everywhere: the
dashboard's ``/api``, the MCP tools, ``healthlog deliveries --json`` and ``healthlog
export --section``. Where an interface adds to one (the dashboard's ``body_url``, a
workout's series), it adds keys of its own beside these.

Times given to ``show`` are ISO 8601 with the phone's offset (``local_text``); an
interface that shows them in another zone passes its own (the MCP tools' ``time_zone``),
the others leave them as they are (``as_is``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import orjson

from healthlog import display
from healthlog.journal.port import StoredRecord
from healthlog.model import Delivery, Item, Record
from healthlog.reads.bounds import local_text
from healthlog.reads.figures import Figures, UnitSplit, WeekTotal, WorkoutDetail, Zones
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


def record_dict(record: Record, show: Show = as_is) -> dict[str, Any]:
    """A record as plain values: times with their offset, the body as JSON, items by series."""
    out: dict[str, Any] = {
        "section": record.section,
        "identity": record.identity,
        "name": record.name,
        "start": show(local_text(record.start, record.utc_offset)),
        "end": show(local_text(record.end, record.utc_offset)),
        "source": record.source,
        "body": orjson.loads(record.body),
    }
    if record.items:
        grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for item in record.items:
            grouped[item.series].append(
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
            )
        out["series"] = dict(grouped)
    return out


def stored_record(stored: StoredRecord) -> dict[str, Any]:
    """A record as stored, for ``healthlog export``: UTC text and the offset apart, its
    account and delivery, every item whole (``extra`` as JSON)."""
    r = stored.record
    return {
        "account_id": stored.account_id,
        "section": r.section,
        "identity": r.identity,
        "start": r.start,
        "end": r.end,
        "utc_offset": r.utc_offset,
        "name": r.name,
        "source": r.source,
        "body": orjson.loads(r.body),
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
