"""What an MCP tool is given and how it reads it: its context, its arguments' types, their checks.

Every tool takes a ``ToolContext`` (what it reads through) and its arguments; a heavy
one (``heavy_read``) takes one of the context's gate's slots for its whole read. Times in:
ISO 8601 dates or date-times; one without an offset is a wall-clock time on the phone's
clock of each sample, as in every interface (docs/time.md). Times out: ISO 8601 with the
offset the phone had (or in ``time_zone`` when given). A bad argument is a
``BadArgument`` whose message names it and what would do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Annotated, Any, Concatenate, Literal, ParamSpec, TypeVar

from pydantic import Field

from healthlog import reads
from healthlog.clock import UnknownZone, from_text, zone_named
from healthlog.errors import HealthlogError
from healthlog.journal import guard as sql_guard
from healthlog.reads import heavy, ranges

T = TypeVar("T")
P = ParamSpec("P")

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


@dataclass(frozen=True)
class ToolContext:
    """What every tool reads through: one account's reads (over the journal's
    ``ShowcaseReads``), the SQL tool's guarded session, and the gate its heavy reads
    take a slot of (``healthlog.reads.heavy``)."""

    reads: reads.Reads
    guard: sql_guard.Guard
    gate: heavy.Gate

    def clock(self, time_zone: str | None) -> Clock:
        """How a tool of this account reads its bounds and shows times (``time_zone``)."""
        return Clock(self.reads.account.time_zone, time_zone)


#: a tool: its context and arguments in, its answer's JSON out
Tool = Callable[Concatenate[ToolContext, P], dict[str, Any]]


def heavy_read(tool: Tool[P]) -> Tool[P]:
    """``tool`` as a heavy read: one whose cost grows with the data (a series, days,
    coverage, SQL), run in one of the context's gate's slots (``heavy.SLOTS`` at a time)."""

    @functools.wraps(tool)
    def gated(ctx: ToolContext, /, *args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        with ctx.gate.slot():
            return tool(ctx, *args, **kwargs)

    return gated


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


def within(name: str, value: int, top: int) -> int:
    """``value`` of the limit ``name`` if it is between 1 and ``top``, else BadArgument."""
    if not 1 <= value <= top:
        raise BadArgument(f"{name}: between 1 and {top} (got {value})")
    return value


def cut_to(rows: list[T], limit: int, narrow: str) -> tuple[list[T], dict[str, Any]]:
    """At most ``limit`` rows, and what the answer says about it."""
    if len(rows) <= limit:
        return rows, {"truncated": False}
    return rows[:limit], {
        "truncated": True,
        "note": f"only the first {limit} of {len(rows)} are here: {narrow}",
    }
