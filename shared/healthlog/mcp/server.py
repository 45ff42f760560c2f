"""``healthlog mcp``: an MCP server over one account's showcase (docs/mcp.md).

Read-only tools for an assistant, each a thin wrapper over ``healthlog.reads.Reads``
(and, for the SQL tool, the journal's guarded session under ``healthlog.journal.guard``'s
policy), on the official ``mcp`` SDK: stdio by default, streamable HTTP on 127.0.0.1
with ``--http``. The journal is a ``ShowcaseReads``: no tool can reach a write.

Answers are sized for a model: every tool has a row limit (and a ceiling it cannot be
raised above), says ``truncated`` with a ``note`` on how to narrow the question when it
cuts, and no answer is longer than ``MAX_CHARS`` characters. Times in: ISO 8601 dates or
date-times; one without an offset is a wall-clock time on the phone's clock of each
sample, as in every interface (docs/time.md). Times out: ISO 8601 with the offset the
phone had (or in ``time_zone`` when given); a bucket is labelled by its start on the
phone's clock. Every value comes with its unit.

A bad argument is an MCP error result (``isError``) that names the problem and the
nearest valid choice, never a traceback. Nothing of the data is logged: the SDK's own
log (and uvicorn's) is set to warnings, each line once as healthlog's JSON line, and an
unexpected failure is logged by its type only.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, tzinfo
from typing import Annotated, Any, Literal, TypeVar

import orjson

from healthlog import log, reads
from healthlog.clock import UnknownZone, from_text, zone_named
from healthlog.config import Settings
from healthlog.errors import HealthlogError, needs_extra
from healthlog.journal import guard as sql_guard
from healthlog.journal.port import ShowcaseReads
from healthlog.reads import heavy, ranges, shapes
from healthlog.reads.coverage import resend_advice

try:  # the extra's parts: pydantic and pydantic_core come with mcp
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
    from pydantic import Field, ValidationError
    from pydantic_core import ErrorDetails
except ImportError:  # the tools' annotations need them at import
    raise HealthlogError(needs_extra("healthlog mcp", "mcp")) from None

logger = logging.getLogger("healthlog.mcp")

#: no answer is longer than this, in characters of compact JSON
MAX_CHARS = 60_000
DEFAULT_PORT = 8765

T = TypeVar("T")

Start = Annotated[
    str | None,
    Field(
        description="ISO 8601 date or date-time, inclusive (e.g. 2026-03-01, "
        "2026-03-01T08:00, 2026-03-01T08:00+01:00); default: from the first data"
    ),
]
End = Annotated[
    str | None,
    Field(description="ISO 8601 date or date-time, exclusive; default: to the last data"),
]
TimeZone = Annotated[
    str | None,
    Field(
        description="IANA zone (e.g. Europe/Berlin) to show the times returned in; default: "
        "the phone's own offset. A start or end without an offset is on the phone's clock "
        "of each sample, whatever this says"
    ),
]
ResolutionName = Literal["raw", "minute", "hour", "day", "week", "month"]
UnitSystemName = Annotated[
    Literal["metric", "imperial"] | None,
    Field(
        description="the units of the workouts' figures: metric (km, m, km/h, s/km, kcal, "
        "degC) or imperial (mi, ft, mph, s/mi, kcal, degF); default: the account's"
    ),
]


class BadArgument(HealthlogError):
    """An argument a tool cannot use; the message names it and what would do."""


class Clock:
    """How a tool reads its bounds (``healthlog.clock``'s rule, docs/time.md: without an
    offset, on the phone's clock of each sample) and shows the times it returns."""

    def __init__(self, account_zone: str, asked: str | None) -> None:
        self.shown: tzinfo | None = _zone(asked) if asked else None
        self.read_in: tzinfo = self.shown or _zone(account_zone)

    def range(self, start: str | None, end: str | None) -> tuple[datetime | None, datetime | None]:
        """The tool's range as every interface reads one (``ranges.given``)."""
        try:
            found = ranges.given(start, end, lambda: self.read_in)
        except ranges.BadBound as exc:
            raise BadArgument(str(exc)) from None
        return found.start, found.end

    def show(self, local_iso: str | None) -> str | None:
        """A time with its offset (from reads) as it is, or in the zone asked for."""
        if local_iso is None or self.shown is None:
            return local_iso
        return datetime.fromisoformat(local_iso).astimezone(self.shown).isoformat()

    def show_utc(self, utc_text: str | None) -> str | None:
        """A stored UTC time in the zone asked for, else in the account's zone."""
        if utc_text is None:
            return None
        return from_text(utc_text).astimezone(self.shown or self.read_in).isoformat()


def _zone(name: str) -> tzinfo:
    try:
        return zone_named(name)
    except UnknownZone:
        raise BadArgument(
            f"time_zone: {name!r} is not an IANA zone name (e.g. Europe/Berlin, UTC)"
        ) from None


def _limit(name: str, value: int, top: int) -> int:
    if not 1 <= value <= top:
        raise BadArgument(f"{name}: between 1 and {top} (got {value})")
    return value


def _cut(rows: list[T], limit: int, narrow: str) -> tuple[list[T], dict[str, Any]]:
    """At most ``limit`` rows, and what the answer says about it."""
    if len(rows) <= limit:
        return rows, {"truncated": False}
    return rows[:limit], {
        "truncated": True,
        "note": f"only the first {limit} of {len(rows)} are here: {narrow}",
    }


# --- the server ---------------------------------------------------------------------------

#: what an argument takes, by the kind of pydantic's refusal (the rest: pydantic's words)
_TAKES = {
    "missing": "required",
    "int_parsing": "a whole number",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_parsing": "a number",
    "float_type": "a number",
    "bool_parsing": "true or false",
    "bool_type": "true or false",
    "string_type": "text",
    "list_type": "a list",
}


class _Server(MCPServer[Any]):
    """MCPServer whose refusal of an argument's kind is one plain sentence per argument
    (its name, what it takes, what came), like the tools' own: not pydantic's text.
    ``heavy`` is the gate its heavy tools run through (``healthlog.reads.heavy``)."""

    heavy: heavy.Gate

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            refused = exc.__cause__
            # a crash inside a tool (UnexpectedToolError) stays one, whatever raised it:
            # logged as an error, its values never sent to the client
            if isinstance(exc, UnexpectedToolError) or not isinstance(refused, ValidationError):
                raise
            schema = next((t.input_schema for t in await self.list_tools() if t.name == name), {})
            properties = schema.get("properties", {})
            errors = refused.errors()
            if not all(e["loc"] and str(e["loc"][0]) in properties for e in errors):
                raise  # not the arguments' own check
            said = "; ".join(_plain(e, properties) for e in errors)
            raise ToolError(f"Error executing tool {name}: {said}") from refused


def _plain(error: ErrorDetails, properties: dict[str, Any]) -> str:
    """One of pydantic's errors as ``argument: what it takes (got what came)``."""
    where = [str(part) for part in error["loc"]]
    argument = where[0] + "".join(f"[{part}]" for part in where[1:])
    described = properties.get(where[0], {})
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind in ("literal_error", "enum"):
        values = _allowed(described)
        listed = f"{', '.join(values[:-1])} or {values[-1]}" if len(values) > 1 else "".join(values)
        takes = f"one of {listed}" if values else error["msg"]
    elif kind in ("too_short", "too_long"):
        most = kind == "too_long"
        count = ctx["max_length" if most else "min_length"]
        takes = f"at {'most' if most else 'least'} {count} item{'s' if count != 1 else ''}"
    else:
        takes = _TAKES.get(kind, error["msg"][:1].lower() + error["msg"][1:])
    if len(where) == 1 and "description" in described and kind not in ("literal_error", "enum"):
        takes += f": {described['description']}"
    if kind == "missing":
        return f"{argument}: {takes}"
    got = ctx["actual_length"] if kind in ("too_short", "too_long") else error["input"]
    return f"{argument}: {takes} (got {log.truncate(repr(got), 60)})"


def _allowed(described: dict[str, Any]) -> list[str]:
    """The values an argument's JSON schema lists (its ``enum``, maybe inside ``anyOf``)."""
    found: list[str] = [str(v) for v in described.get("enum", ())]
    for option in described.get("anyOf", ()):
        found += _allowed(option)
    return found


class _WithoutHeaderValue(logging.Filter):
    """The SDK's refusal of a request's Host or Origin, without the header's value."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = record.getMessage().split(": ", 1)[0], None
        return True


_WITHOUT_HEADER_VALUE = _WithoutHeaderValue()
#: the loggers that have a JSON handler of their own (``_log_once``)
_OWN_HANDLERS = ("healthlog", "mcp", "uvicorn")


class _NotOurs(logging.Filter):
    """A record of another library's logger (the others print at their own handler),
    cut to its message's first line and without its arguments: a library's text may
    quote what it choked on (asyncio's "Task exception was never retrieved" goes on with
    the exception's repr), and the exception's type is all a line keeps of it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.partition(".")[0] in _OWN_HANDLERS:
            return False
        record.msg, record.args = str(record.msg).split("\n", 1)[0], None
        return True


_NOT_OURS = _NotOurs()


def _log_once() -> None:
    """Each log line once, as healthlog's JSON line.

    MCPServer calls ``logging.basicConfig``, which gives the root logger a plain handler
    when it has none, and healthlog's lines propagate there: each would be printed a
    second time. A root handler of healthlog's own makes that call do nothing: it prints
    what other libraries (asyncio, anyio, psycopg) warn of as JSON lines, as Python's
    last-resort handler would have printed it, and leaves the lines of the loggers that
    have their handler below to that handler. The SDK's own lines and uvicorn's are
    healthlog's JSON lines too, at WARNING and up (their INFO and DEBUG lines may quote
    requests), or at healthlog's level if higher; the SDK's refusal of a Host or Origin
    header says which, not the value.
    """
    level = max(logging.WARNING, logging.getLogger("healthlog").getEffectiveLevel())
    root = logging.getLogger()
    if not root.handlers:
        others = log.json_handler()
        others.setLevel(level)
        others.addFilter(_NOT_OURS)
        root.addHandler(others)
    for name in _OWN_HANDLERS[1:]:
        log.setup(logging.getLevelName(level), name=name)
    logging.getLogger("mcp.server.transport_security").addFilter(_WITHOUT_HEADER_VALUE)


def build(r: reads.Reads, guard: sql_guard.Guard) -> _Server:
    """The MCPServer with every tool, over ``r``'s account and ``guard``'s views."""
    _log_once()
    server = _Server(
        "healthlog",
        instructions=(
            "Apple Health data of one person, as received from the Health Auto Export app "
            "and kept by healthlog. Start with `catalog` to see the metrics, their units and "
            "extent; prefer summarised reads (metric_series at day/week/month, "
            "daily_summary) to raw points. Times are ISO 8601 with offsets."
        ),
        log_level="WARNING",
    )
    account = r.account
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)

    gate = server.heavy = heavy.Gate()

    def answer(work: Callable[[], dict[str, Any]], *, weighty: bool = False) -> CallToolResult:
        """``work``'s answer as the tool's result; ``weighty``: a read whose cost grows
        with the data (a series, days, coverage, SQL), one of ``heavy.SLOTS`` at a time."""
        try:
            with gate.slot() if weighty else contextlib.nullcontext():
                data = work()
        except HealthlogError as exc:  # the messages of these name no value of the data
            raise ToolError(str(exc)) from None
        except Exception as exc:
            log.event(logger, logging.ERROR, "mcp.tool_failed", error=type(exc).__name__)
            raise ToolError(f"the read failed ({type(exc).__name__}); try again") from None
        text = orjson.dumps(data).decode()
        if len(text) > MAX_CHARS:
            raise ToolError(
                f"the answer would be {len(text)} characters, more than {MAX_CHARS}: lower "
                "limit, narrow the range, or ask for a coarser resolution"
            )
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=data
        )

    @server.tool(annotations=read_only)
    def catalog(time_zone: TimeZone = None) -> CallToolResult:
        """The metrics (each field with its unit, kind, points received, first and last
        time, sources), the other sections with their record counts, and the sources."""

        def work() -> dict[str, Any]:
            clock = Clock(account.time_zone, time_zone)
            metrics: dict[str, dict[str, Any]] = {}
            sources: set[str] = set()
            for info in r.catalog():
                entry = metrics.setdefault(
                    info.metric, {"metric": info.metric, "kind": info.kind.value, "fields": []}
                )
                shaped = shapes.field_dict(info, clock.show_utc)
                del shaped["metric"], shaped["kind"]  # the entry's own
                entry["fields"].append(shaped)
                sources.update(info.sources)
            return {
                "account_time_zone": account.time_zone,
                "metrics": list(metrics.values()),
                "sections": r.sections(),
                "sources": sorted(sources),
                "kinds": {
                    "cumulative": "summed per bucket (steps, energy, distance...)",
                    "discrete": "a reading: min, average and max per bucket",
                },
            }

        return answer(work)

    @server.tool(annotations=read_only)
    def metric_series(
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
    ) -> CallToolResult:
        """One metric over a range, summarised in the database per bucket: a cumulative
        metric's sum per bucket, a discrete one's min/avg/max, with the count of points;
        or raw points (resolution raw). Bounded in rows: a resolution that gives more
        buckets than the limit is refused with a coarser one to use."""

        def work() -> dict[str, Any]:
            top = _limit("limit", limit, 2000)
            clock = Clock(account.time_zone, time_zone)
            first, last = clock.range(start, end)
            asked = r.ask(
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
                "fields": r.field_names(metric, known),
            }
            if chosen is reads.Resolution.RAW:
                out["points"] = [
                    {"t": clock.show(s.t), "value": s.value, "source": s.source}
                    for s in series.samples
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

        return answer(work, weighty=True)

    @server.tool(annotations=read_only)
    def daily_summary(
        metrics: Annotated[
            list[str],
            Field(description="metric names from catalog (1 to 12)", min_length=1, max_length=12),
        ],
        start: Start = None,
        end: End = None,
        limit: Annotated[int, Field(description="most days, 1 to 400")] = 93,
        time_zone: TimeZone = None,
    ) -> CallToolResult:
        """A day a row (the phone's local days) for several metrics at once: each day's sum
        for a cumulative metric, its average for a discrete one, with the units."""

        def work() -> dict[str, Any]:
            top = _limit("limit", limit, 400)
            clock = Clock(account.time_zone, time_zone)
            first, last = clock.range(start, end)
            known = r.catalog()
            units = {}
            for name in metrics:
                info = r.range_field(name, start=first, end=last, catalog=known)
                units[name] = {
                    "field": info.field,
                    "unit": info.unit,
                    "value_is": "sum" if info.kind is reads.Kind.CUMULATIVE else "average",
                }
            days = r.daily(metrics, start=first, end=last, catalog=known)
            shown, cut = _cut(days, top, "narrow the range (start, end)")
            return {"metrics": units, "days": shown, **cut}

        return answer(work, weighty=True)

    @server.tool(annotations=read_only)
    def sleep_nights(
        start: Start = None,
        end: End = None,
        limit: Annotated[int, Field(description="most nights, 1 to 400")] = 60,
        time_zone: TimeZone = None,
    ) -> CallToolResult:
        """Sleep per night (labelled by the date it ends on): hours per stage (deep, core,
        rem, asleep unstaged, awake, in_bed), hours asleep and in bed, first and last
        segment, bedtime and wake time (HH:MM, the phone's clock), the 7-day average of
        hours asleep, the source kept (the one with the most sleep that night); and
        windows: the 7 and 30 days ending on the last night, with average hours, bedtime
        and wake time and their spread (standard deviation, minutes)."""

        def work() -> dict[str, Any]:
            top = _limit("limit", limit, 400)
            clock = Clock(account.time_zone, time_zone)
            first, last = clock.range(start, end)
            found = shapes.sleep_dict(r.sleep_figures(start=first, end=last), clock.show)
            shown, cut = _cut(found["nights"], top, "narrow the range (start, end)")
            return {"unit": "hr", "nights": shown, "windows": found["windows"], **cut}

        return answer(work)

    @server.tool(annotations=read_only)
    def workouts(
        start: Start = None,
        end: End = None,
        limit: Annotated[int, Field(description="most workouts, 1 to 500")] = 50,
        time_zone: TimeZone = None,
        unit_system: UnitSystemName = None,
    ) -> CallToolResult:
        """The workouts in a range: identity (for the workout tool), name, start, end,
        source, duration (s), distance and energy as sent, with their units; figures
        (duration, distance, energy, pace or speed, heart rate... each with its unit and
        basis) in one unit system, and totals per ISO week (all of the range's workouts)."""

        def work() -> dict[str, Any]:
            top = _limit("limit", limit, 500)
            clock = Clock(account.time_zone, time_zone)
            first, last = clock.range(start, end)
            found = r.workout_list(start=first, end=last, unit_system=unit_system)
            rows = [
                shapes.workout_head(w, clock.show) | {"figures": shapes.figures_dict(f)}
                for w, f in found.workouts
            ]
            shown, cut = _cut(rows, top, "narrow the range (start, end)")
            return {
                "unit_system": found.unit_system,
                "workouts": shown,
                **cut,
                "weeks": [shapes.week_dict(t) for t in found.weeks],
            }

        return answer(work)

    @server.tool(annotations=read_only)
    def workout(
        identity: Annotated[str, Field(description="a workout's identity from workouts")],
        include_route: Annotated[
            bool, Field(description="add the route's fixes (lat, lon, alt, t)")
        ] = False,
        route_limit: Annotated[int, Field(description="most route fixes, 1 to 2000")] = 500,
        time_zone: TimeZone = None,
        unit_system: UnitSystemName = None,
    ) -> CallToolResult:
        """One workout: its fields as sent, its figures (duration, energy, distance,
        average and maximum heart rate, pace or speed, elevation gain...) in one unit
        system, splits per km or mi from its route, heart-rate zones, heart-rate stats
        (min/avg/max, bpm) and recovery, and a route summary (distance, elevation gain,
        bounding box); the route's fixes only with include_route."""

        def work() -> dict[str, Any]:
            top = _limit("route_limit", route_limit, 2000)
            clock = Clock(account.time_zone, time_zone)
            detail = r.workout_detail(identity, unit_system=unit_system)
            w = detail.workout
            summary = w.route_summary()
            out = (
                shapes.workout_head(w, clock.show)
                | shapes.workout_detail_dict(detail)
                | {
                    "unit_system": detail.figures.unit_system,
                    "body": w.body,
                    "series": sorted(w.series),
                    "heart_rate": _stats(w.heart_rate_stats()),
                    "heart_rate_recovery": _stats(w.heart_rate_stats("heartRateRecovery")),
                    "route_summary": summary.as_dict()
                    | {"bbox_is": "min lon, min lat, max lon, max lat (degrees)"},
                }
            )
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
                out["route"], cut = _cut(fixes, top, "raise route_limit (at most 2000)")
                out["route_truncated"] = cut["truncated"]
                if "note" in cut:
                    out["route_note"] = cut["note"]
            return out

        return answer(work)

    @server.tool(annotations=read_only)
    def records(
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
    ) -> CallToolResult:
        """The records of a section other than metrics and workouts: each with its body as
        sent, its source by name (source_name) and its fields for people (field, label,
        value as sent, unit): a state of mind's labels and associations, a medication's
        status and dose, a symptom's severity, an ECG's classification and average heart
        rate; with include_series a notification's heart rates and an HRV reading's beats
        too."""

        def work() -> dict[str, Any]:
            top = _limit("limit", limit, 500)
            clock = Clock(account.time_zone, time_zone)
            first, last = clock.range(start, end)
            r.require_section(section)
            rows = r.records(
                section, start=first, end=last, with_items=include_series, show=clock.show
            )
            shown, cut = _cut(rows, top, "narrow the range (start, end)")
            return {"section": section, "records": shown, **cut}

        return answer(work)

    @server.tool(annotations=read_only)
    def coverage(
        metric: Annotated[str | None, Field(description="one metric (default: all)")] = None,
        start: Start = None,
        end: End = None,
        limit: Annotated[int, Field(description="most metrics, 1 to 200")] = 50,
        time_zone: TimeZone = None,
    ) -> CallToolResult:
        """What is missing or late: per metric its first and last day with data, days with
        data, gaps (days without data inside a stretch of data with data on most days;
        a silence over 30 days is a break, not a gap) with how to send them again,
        points HAE brought late per day; and the deliveries' statuses, failures and
        uncovered keys."""

        def work() -> dict[str, Any]:
            top = _limit("limit", limit, 200)
            clock = Clock(account.time_zone, time_zone)
            first, last = clock.range(start, end)
            found = r.coverage(metric=metric, start=first, end=last)
            rows = []
            for c in found:
                rows.append(
                    {
                        "metric": c.metric,
                        "first_day": c.first_day,
                        "last_day": c.last_day,
                        "days_with_data": len(c.days),
                        "daily": c.daily,
                        "gaps": [
                            {"first": g.first, "last": g.last, "days": g.days} for g in c.gaps[:50]
                        ],
                        "gaps_total": len(c.gaps),
                        "late_points": c.late_points,
                        "late_days": dict(sorted(c.late.items())[-31:]),
                    }
                )
            shown, cut = _cut(rows, top, "name one metric")
            status = r.status()
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

        return answer(work, weighty=True)

    sql_description = (
        f"Guarded read-only SQL ({guard.dialect}) for what the other tools cannot answer: "
        "one SELECT (WITH allowed), over these views of this account's data only, with a "
        "row and a time limit; writes, a second statement, ATTACH, PRAGMA and any other "
        "table are refused. Units are in the unit column; times in start/end are UTC; "
        "my_points.local_start is the phone's local time.\n" + sql_guard.describe()
    )

    @server.tool(annotations=read_only, description=sql_description)
    def sql(
        query: Annotated[str, Field(description="one SELECT over the views below")],
        limit: Annotated[int, Field(description="most rows, 1 to 1000")] = 200,
        timeout_s: Annotated[float, Field(description="time limit, 0.1 to 30 seconds")] = 5.0,
    ) -> CallToolResult:
        def work() -> dict[str, Any]:
            top = _limit("limit", limit, 1000)
            if not 0.1 <= timeout_s <= 30:
                raise BadArgument(f"timeout_s: between 0.1 and 30 (got {timeout_s})")
            found = guard.run(query, limit=top, timeout_s=timeout_s)
            out: dict[str, Any] = {
                "dialect": guard.dialect,
                "columns": found.columns,
                "rows": found.rows,
                "truncated": found.truncated,
            }
            if found.truncated:
                out["note"] = (
                    f"only the first {top} rows are here: aggregate (GROUP BY), add a WHERE "
                    "on start, or raise limit (at most 1000)"
                )
            if found.cut_cells:
                out["cells_cut"] = (
                    f"{found.cut_cells} values longer than {sql_guard.CELL_CHARS} characters "
                    "were cut; select a part of them (substr, json_extract / ->>)"
                )
            return out

        return answer(work, weighty=True)

    return server


def _order(resolution: reads.Resolution) -> int:
    return list(reads.Resolution).index(resolution)


def _utc(at: datetime | None) -> str | None:
    return None if at is None else at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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


# --- opening and running ------------------------------------------------------------------------


def open_readonly(settings: Settings) -> ShowcaseReads:
    """The journal for reading: not migrated (that would write), not created if missing."""
    import os

    from healthlog import urls
    from healthlog.ops import wiring

    location = urls.journal_location(settings.journal_url)
    if isinstance(location, urls.SqliteLocation) and not os.path.isfile(location.path):
        raise HealthlogError(
            "no journal file at the journal URL's path (HEALTHLOG_JOURNAL_URL): nothing to read"
        )
    return wiring.open_journal(settings)


def open_guard(r: reads.Reads) -> sql_guard.Guard:
    """The SQL tool's session over ``r``'s account, its ``my_daily`` from ``r``: the
    journal opens it (``ShowcaseReads.guarded_session``)."""
    return r.journal.guarded_session(r.account.id, sql_guard.Daily(r.day_totals, r.status))


def refuse_off_loopback(http: bool, host: str) -> None:
    """HealthlogError unless the server would listen on this machine only."""
    from healthlog.local.launcher import is_loopback

    if http and not is_loopback(host):
        raise HealthlogError(
            f"--host {host}: the MCP server listens on loopback only (127.0.0.1, ::1); to "
            "reach it from another machine, forward the port over SSH"
        )


@contextlib.contextmanager
def _listening(host: str, port: int) -> Iterator[socket.socket]:
    """A socket listening on ``host``:``port``; PortTaken (exit 1) if another has it."""
    from healthlog.local import launcher, stack

    try:
        sock = launcher.listening_socket(host, port)
    except launcher.PortTaken as taken:
        raise stack.port_taken_at(taken.host, taken.port, "--port") from None
    with sock:
        yield sock


async def _serve_http(server: MCPServer[Any], sock: socket.socket, host: str, port: int) -> None:
    """Streamable HTTP on ``sock`` until stopped, checking each request's Host and Origin."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    app = server.streamable_http_app(transport_security=security, host=host)
    # uvicorn's loggers as they are (_log_once), not its plain handlers of their own
    config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level=None)
    await uvicorn.Server(config).serve(sockets=[sock])


def serve(
    r: reads.Reads,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    on_ready: Callable[[str], None] | None = None,
) -> int:
    """Serve the tools over stdio, or streamable HTTP on a loopback address, until stopped."""
    refuse_off_loopback(http, host)
    guard = open_guard(r)
    try:
        server = build(r, guard)
        log.event(logger, logging.INFO, "mcp.started", transport="http" if http else "stdio")
        if not http:
            server.run("stdio")
            return 0
        with _listening(host, port) as sock:  # bound before the URL is announced
            if on_ready is not None:
                on_ready(f"http://{'[::1]' if ':' in host else host}:{port}/mcp")
            import anyio

            anyio.run(_serve_http, server, sock, host, port)
        return 0
    finally:
        guard.close()
        log.event(logger, logging.INFO, "mcp.stopped")
