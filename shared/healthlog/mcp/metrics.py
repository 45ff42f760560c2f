"""The MCP tools over the metrics: the catalog, one metric's series, a day a row, coverage.

Each takes a ``ToolContext`` and its arguments and returns its answer's JSON, a thin
wrapper over ``healthlog.reads.Reads``; its docstring is its description for clients
(``healthlog.mcp.server`` registers it). A series is bounded in rows (a resolution
that gives more buckets than the limit is refused, naming a coarser one); a bucket is
labelled by its start on the phone's clock; every value comes with its unit.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field

from healthlog import reads
from healthlog.mcp.arguments import (
    BadArgument,
    End,
    ResolutionName,
    Start,
    TimeZone,
    ToolContext,
    cut_to,
    heavy_read,
    within,
)
from healthlog.reads import shapes
from healthlog.reads.coverage import resend_advice


def catalog(ctx: ToolContext, time_zone: TimeZone = None) -> dict[str, Any]:
    """The metrics (each field with its unit, kind, points received, first and last
    time, sources), the other sections with their record counts, and the sources."""
    clock = ctx.clock(time_zone)
    metrics: dict[str, dict[str, Any]] = {}
    sources: set[str] = set()
    for info in ctx.reads.catalog():
        entry = metrics.setdefault(
            info.metric, {"metric": info.metric, "kind": info.kind.value, "fields": []}
        )
        shaped = shapes.field_dict(info, clock.show_utc)
        del shaped["metric"], shaped["kind"]  # the entry's own
        entry["fields"].append(shaped)
        sources.update(info.sources)
    return {
        "account_time_zone": ctx.reads.account.time_zone,
        "metrics": list(metrics.values()),
        "sections": ctx.reads.sections(),
        "sources": sorted(sources),
        "kinds": {
            "cumulative": "summed per bucket (steps, energy, distance...)",
            "discrete": "a reading: min, average and max per bucket",
        },
    }


@heavy_read
def metric_series(
    ctx: ToolContext,
    metric: Annotated[str, Field(description="a metric name from catalog, e.g. heart_rate")],
    start: Start = None,
    end: End = None,
    resolution: Annotated[
        ResolutionName | None,
        Field(
            description="bucket size on the phone's clock, or raw points; default: the "
            "finest that fits the limit over the range"
        ),
    ] = None,
    field: Annotated[
        str | None, Field(description="one field (default: the one that stands for it)")
    ] = None,
    source: Annotated[str | None, Field(description="only this source's points")] = None,
    limit: Annotated[int, Field(description="most rows, 1 to 2000")] = 500,
    time_zone: TimeZone = None,
) -> dict[str, Any]:
    """One metric over a range, summarised in the database per bucket: a cumulative
    metric's sum per bucket, a discrete one's min/avg/max, with the count of points;
    or raw points (resolution raw). Bounded in rows: a resolution that gives more
    buckets than the limit is refused with a coarser one to use."""
    top = within("limit", limit, 2000)
    clock = ctx.clock(time_zone)
    first, last = clock.range(start, end)
    asked = ctx.reads.ask(
        reads.SeriesQuery(
            metric,
            field=field,
            source=source,
            start=first,
            end=last,
            resolution=reads.Resolution(resolution) if resolution else None,
            max_buckets=top,
            limit=top,
        )
    )
    series, known, chosen = asked.series, asked.catalog, asked.series.resolution
    out: dict[str, Any] = {
        "metric": metric,
        "field": series.field,
        "unit": series.unit,
        "kind": series.kind.value,
        "resolution": series.resolution.value,
        "value_is": "sum" if series.kind is reads.Kind.CUMULATIVE else "average",
        "start": first.isoformat() if first else None,
        "end": last.isoformat() if last else None,
        "fields": ctx.reads.field_names(metric, known),
    }
    if chosen is reads.Resolution.RAW:
        out["points"] = [
            {"t": clock.show(s.t), "value": s.value, "source": s.source} for s in series.samples
        ]
        out["truncated"] = series.truncated
        if series.truncated:
            next_t = series.samples[-1].t if series.samples else None
            out["note"] = (
                f"only the first {top} points are here: ask again with start after "
                f"{next_t}, a narrower range, or a resolution such as hour or day"
            )
        return out
    if series.truncated:
        coarser = [
            res.value
            for res in reads.Resolution
            if _order(res) > _order(chosen) and res is not reads.Resolution.RAW
        ]
        raise BadArgument(
            f"resolution {chosen.value} gives more than {top} buckets over this range: "
            f"use a coarser one ({', '.join(coarser) or 'month'}), narrow the range, "
            "or raise limit (at most 2000)"
        )
    out["buckets"] = [
        {"start": s.t, "value": s.value, "min": s.min, "max": s.max, "count": s.count}
        for s in series.samples
    ]
    out["truncated"] = False
    return out


@heavy_read
def daily_summary(
    ctx: ToolContext,
    metrics: Annotated[
        list[str],
        Field(description="metric names from catalog (1 to 12)", min_length=1, max_length=12),
    ],
    start: Start = None,
    end: End = None,
    limit: Annotated[int, Field(description="most days, 1 to 400")] = 93,
    time_zone: TimeZone = None,
) -> dict[str, Any]:
    """A day a row (the phone's local days) for several metrics at once: each day's sum
    for a cumulative metric, its average for a discrete one, with the units."""
    top = within("limit", limit, 400)
    clock = ctx.clock(time_zone)
    first, last = clock.range(start, end)
    known = ctx.reads.catalog()
    units = {}
    for name in metrics:
        info = ctx.reads.range_field(name, start=first, end=last, catalog=known)
        units[name] = {
            "field": info.field,
            "unit": info.unit,
            "value_is": "sum" if info.kind is reads.Kind.CUMULATIVE else "average",
        }
    days = ctx.reads.daily(metrics, start=first, end=last, catalog=known)
    shown, cut = cut_to(days, top, "narrow the range (start, end)")
    return {"metrics": units, "days": shown, **cut}


@heavy_read
def coverage(
    ctx: ToolContext,
    metric: Annotated[str | None, Field(description="one metric (default: all)")] = None,
    start: Start = None,
    end: End = None,
    limit: Annotated[int, Field(description="most metrics, 1 to 200")] = 50,
    time_zone: TimeZone = None,
) -> dict[str, Any]:
    """What is missing or late: per metric its first and last day with data, days with
    data, gaps (days without data inside a stretch of data with data on most days;
    a silence over 30 days is a break, not a gap) with how to send them again,
    points HAE brought late per day; and the deliveries' statuses, failures and
    uncovered keys."""
    top = within("limit", limit, 200)
    clock = ctx.clock(time_zone)
    first, last = clock.range(start, end)
    found = ctx.reads.coverage(metric=metric, start=first, end=last)
    rows = []
    for c in found:
        rows.append(
            {
                "metric": c.metric,
                "first_day": c.first_day,
                "last_day": c.last_day,
                "days_with_data": len(c.days),
                "daily": c.daily,
                "gaps": [{"first": g.first, "last": g.last, "days": g.days} for g in c.gaps[:50]],
                "gaps_total": len(c.gaps),
                "late_points": c.late_points,
                "late_days": dict(sorted(c.late.items())[-31:]),
            }
        )
    shown, cut = cut_to(rows, top, "name one metric")
    status = ctx.reads.status()
    return {
        "metrics": shown,
        **cut,
        "resend": resend_advice(),
        "deliveries": {
            "counts": status.counts,
            "backlog": status.backlog,
            "last_delivery": clock.show_utc(_utc(status.last_delivery)),
            "failures": status.failures,
            "uncovered_keys": status.uncovered,
        },
        "days_are": "the phone's local days",
    }


def _order(resolution: reads.Resolution) -> int:
    return list(reads.Resolution).index(resolution)


def _utc(at: datetime | None) -> str | None:
    return None if at is None else at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
