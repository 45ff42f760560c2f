"""How a read's bounds meet the stored times and the days of the phone's clock.

A bound (``start``, ``end``) is read once by ``healthlog.clock.bound`` (docs/time.md); the
helpers here turn it into a datetime (``_as_datetime``, ``_as_given``), into the days a
coverage counts (``_first_day``, ``_day_after``) or a kept-days read reaches
(``_day_span``, ``_day_in``, ``_tighter``), and widen it by a day each side for the
overlap rule (``widened``).
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from healthlog import clock
from healthlog.clock import At, Moment, Wall, first_at_or_after, from_text, to_text

_bound = clock.bound
local_text = clock.local_text


def _as_given(at: Moment | None) -> datetime | None:
    """A bound as a datetime: naive (on the phone's clock) or aware as given; text as
    the aware instant it names."""
    return at if at is None or isinstance(at, datetime) else _as_datetime(at)


def _as_datetime(at: Moment | None) -> datetime | None:
    """A bound as an aware datetime: the port's text, or a prefix of it (``2024-01``)."""
    if isinstance(at, Wall):
        at = at.at
    if at is None or isinstance(at, datetime):
        return at if at is None or at.tzinfo is not None else at.replace(tzinfo=UTC)
    try:
        parsed = from_text(at)
    except ValueError:
        return first_at_or_after(at)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _first_day(at: Moment | None) -> str | None:
    """The day a range's start falls on, on its own clock: coverage counts whole days."""
    found = _as_datetime(at)
    return None if found is None else found.date().isoformat()


def _day_after(at: Moment | None) -> str | None:
    """The first day a range's (exclusive) end leaves out: a day it reaches into is in."""
    found = _as_datetime(at)
    if found is None:
        return None
    day = found.date()
    if found.time() != time():
        day += timedelta(days=1)
    return day.isoformat()


def _day_span(low: At | None, high: At | None) -> tuple[str, str]:
    """The days of the phone's clock [low, high) can reach (``clock.day_from``/``day_to``),
    the calendar's ends where there is no bound or it leaves the calendar."""
    # text bounds past any day
    return clock.day_from(low) or "0000-01-01", clock.day_to(high) or "9999-99-99"


def _day_in(day: str, earliest: str, latest: str, low: At | None, high: At | None) -> bool | None:
    """How a kept day of the phone's clock meets [low, high): None when none of its
    points can be in it, True when all of them are, False when it is cut."""
    whole = True
    for edge, after in ((low, True), (high, False)):
        if edge is None:
            continue
        if isinstance(edge, Wall):
            midnight = datetime.fromisoformat(day)
            first, last = midnight, midnight + timedelta(days=1)
            if (last <= edge.at) if after else (first >= edge.at):
                return None
            whole = whole and ((first >= edge.at) if after else (last <= edge.at))
        else:
            if (latest < edge) if after else (earliest >= edge):
                return None
            whole = whole and ((earliest >= edge) if after else (latest < edge))
    return whole


def _tighter(edge: At | None, own: str | None, day: str, *, later: bool) -> At | None:
    """A run of cut days' bound: its own UTC end (``own``, from its points) or the range's
    ``edge``, whichever cuts more; a wall-clock edge where the run reaches its day."""
    if edge is None:
        return own
    if isinstance(edge, Wall):
        reaches = day >= edge.day().isoformat() if later else day <= edge.day().isoformat()
        return edge if reaches else own
    if own is None:
        return edge
    return min(edge, own) if later else max(edge, own)


def widened(low: At | None, high: At | None) -> tuple[At | None, At | None]:
    """Bounds a day wider on each side: the overlap rule decides each day whole.

    A day of the phone's clock reaches up to a day (``clock.REACH``) past its UTC day, so the
    points read from a day before ``low`` to a day after ``high`` hold every day that
    [low, high) touches; ``counted_stream(within=...)`` cuts them back once decided.
    """
    return _shifted(low, -timedelta(days=1)), _shifted(high, timedelta(days=1))


def _shifted(at: At | None, by: timedelta) -> At | None:
    if isinstance(at, Wall):
        try:
            return Wall(at.at + by)
        except OverflowError:
            return None
    return _moved(_as_datetime(at), by)


def _moved(at: datetime | None, by: timedelta) -> str | None:
    """``at`` moved ``by``, as stored text; None (no bound) past the calendar's ends."""
    if at is None:
        return None
    try:
        return to_text(at + by)
    except OverflowError:
        return None
