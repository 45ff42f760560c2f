"""The MCP tools over sleep, workouts and the other sections' records.

Each takes a ``ToolContext`` and its arguments and returns its answer's JSON, the same
read as the dashboard's (``healthlog.reads.shapes``); its docstring is its description
for clients (``healthlog.mcp.server`` registers it). Times are shown with the phone's
offset, or in ``time_zone``; a workout's figures in one unit system, with their units.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from healthlog import reads
from healthlog.mcp.arguments import (
    End,
    Start,
    TimeZone,
    ToolContext,
    UnitSystemName,
    cut_to,
    within,
)
from healthlog.reads import shapes


def sleep_nights(
    ctx: ToolContext,
    start: Start = None,
    end: End = None,
    limit: Annotated[int, Field(description="most nights, 1 to 400")] = 60,
    time_zone: TimeZone = None,
) -> dict[str, Any]:
    """Sleep per night (labelled by the date it ends on): hours per stage (deep, core,
    rem, asleep unstaged, awake, in_bed), hours asleep and in bed, first and last
    segment, bedtime and wake time (HH:MM, the phone's clock), the 7-day average of
    hours asleep, the source kept (the one with the most sleep that night); and
    windows: the 7 and 30 days ending on the last night, with average hours, bedtime
    and wake time and their spread (standard deviation, minutes)."""
    top = within("limit", limit, 400)
    clock = ctx.clock(time_zone)
    first, last = clock.range(start, end)
    found = shapes.sleep_dict(ctx.reads.sleep_figures(start=first, end=last), clock.show)
    shown, cut = cut_to(found["nights"], top, "narrow the range (start, end)")
    return {"unit": "hr", "nights": shown, "windows": found["windows"], **cut}


def workouts(
    ctx: ToolContext,
    start: Start = None,
    end: End = None,
    limit: Annotated[int, Field(description="most workouts, 1 to 500")] = 50,
    time_zone: TimeZone = None,
    unit_system: UnitSystemName = None,
) -> dict[str, Any]:
    """The workouts in a range: identity (for the workout tool), name, start, end,
    source, duration (s), distance and energy as sent, with their units; figures
    (duration, distance, energy, pace or speed, heart rate... each with its unit and
    basis) in one unit system, and totals per ISO week (all of the range's workouts)."""
    top = within("limit", limit, 500)
    clock = ctx.clock(time_zone)
    first, last = clock.range(start, end)
    found = ctx.reads.workout_list(start=first, end=last, unit_system=unit_system)
    rows = [
        shapes.workout_head(w, clock.show) | {"figures": shapes.figures_dict(f)}
        for w, f in found.workouts
    ]
    shown, cut = cut_to(rows, top, "narrow the range (start, end)")
    return {
        "unit_system": found.unit_system,
        "workouts": shown,
        **cut,
        "weeks": [shapes.week_dict(t) for t in found.weeks],
    }


def workout(
    ctx: ToolContext,
    identity: Annotated[str, Field(description="a workout's identity from workouts")],
    include_route: Annotated[
        bool, Field(description="add the route's fixes (lat, lon, alt, t)")
    ] = False,
    route_limit: Annotated[int, Field(description="most route fixes, 1 to 2000")] = 500,
    time_zone: TimeZone = None,
    unit_system: UnitSystemName = None,
) -> dict[str, Any]:
    """One workout: its fields as sent, its figures (duration, energy, distance,
    average and maximum heart rate, pace or speed, elevation gain...) in one unit
    system, splits per km or mi from its route, heart-rate zones, heart-rate stats
    (min/avg/max, bpm) and recovery, and a route summary (distance, elevation gain,
    bounding box); the route's fixes only with include_route."""
    top = within("route_limit", route_limit, 2000)
    clock = ctx.clock(time_zone)
    detail = ctx.reads.workout_detail(identity, unit_system=unit_system)
    w = detail.workout
    summary = w.route_summary()
    out = shapes.workout_dict(detail, clock.show) | {
        "heart_rate": _stats(w.heart_rate_stats()),
        "heart_rate_recovery": _stats(w.heart_rate_stats("heartRateRecovery")),
        "route_summary": summary.as_dict()
        | {"bbox_is": "min lon, min lat, max lon, max lat (degrees)"},
    }
    if include_route:
        fixes = [
            {
                "t": clock.show(reads.local_text(i.t, w.utc_offset)),
                "lat": i.lat,
                "lon": i.lon,
                "alt_m": i.alt,
            }
            for i in w.route()
        ]
        out["route"], cut = cut_to(fixes, top, "raise route_limit (at most 2000)")
        out["route_truncated"] = cut["truncated"]
        if "note" in cut:
            out["route_note"] = cut["note"]
    return out


def records(
    ctx: ToolContext,
    section: Annotated[
        str,
        Field(
            description="stateOfMind, medications, symptoms, cycleTracking, ecg, "
            "heartRateNotifications, heartbeatSeries (catalog lists those present)"
        ),
    ],
    start: Start = None,
    end: End = None,
    limit: Annotated[int, Field(description="most records, 1 to 500")] = 50,
    include_series: Annotated[
        bool, Field(description="add each record's series (an ECG's voltages): large")
    ] = False,
    time_zone: TimeZone = None,
) -> dict[str, Any]:
    """The records of a section other than metrics and workouts: each with its body as
    sent, its source by name (source_name) and its fields for people (field, label,
    value as sent, unit): a state of mind's labels and associations, a medication's
    status and dose, a symptom's severity, an ECG's classification and average heart
    rate; with include_series a notification's heart rates and an HRV reading's beats
    too."""
    top = within("limit", limit, 500)
    clock = ctx.clock(time_zone)
    first, last = clock.range(start, end)
    ctx.reads.require_section(section)
    rows = ctx.reads.records(
        section, start=first, end=last, with_items=include_series, show=clock.show
    )
    shown, cut = cut_to(rows, top, "narrow the range (start, end)")
    return {"section": section, "records": shown, **cut}


def _stats(stats: reads.HeartRateStats | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    return {
        "samples": stats.samples,
        "min": stats.min,
        "avg": stats.avg,
        "max": stats.max,
        "unit": stats.unit,
    }
