"""Ranges as the Health app offers them: D, W, M, 6M, Y and All, each a window of days.

A chart opens on a *span* (``Span``) ending on an *anchor* day (by default the last day
the field has data, so a chart opens on data, not on an empty month); ``window`` gives
its days and the resolution it is drawn at (docs/dashboard.md, "Ranges"): a cumulative
metric's totals, a discrete one's average with its min-max band, per

====  =====================================================  ==========================
span  days                                                   per
====  =====================================================  ==========================
D     the anchor day                                         hour (discrete: the finest)
W     the 7 days ending on the anchor                        day
M     one month ending on the anchor (Nov 3 to Dec 2)        day
6M    the weeks (Monday first) of six months to the anchor   week
Y     the twelve calendar months ending with the anchor's    month
All   every day with data                                    month
====  =====================================================  ==========================

On D a discrete metric (heart rate) takes the finest resolution under ``MAX_BUCKETS``,
as a zoom does: a day of minutes. ``Window.earlier`` and ``later`` are the
anchors of the same span before and after (the day before it starts, and the anchor a
span later), for the page's arrows; None where the field has no data that way. Days are the
phone's (docs/time.md): the window's bounds are naive dates, read on each sample's clock.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum

from healthlog import clock, ids
from healthlog.reads.values import Kind, Resolution


class Span(StrEnum):
    DAY = "D"
    WEEK = "W"
    MONTH = "M"
    HALF_YEAR = "6M"
    YEAR = "Y"
    ALL = "All"


#: what a span is opened on when none is named
DEFAULT_SPAN = Span.MONTH

#: the resolution each span is read at (a discrete metric's D: the finest, ``Window``)
RESOLUTION = {
    Span.DAY: Resolution.HOUR,
    Span.WEEK: Resolution.DAY,
    Span.MONTH: Resolution.DAY,
    Span.HALF_YEAR: Resolution.WEEK,
    Span.YEAR: Resolution.MONTH,
    Span.ALL: Resolution.MONTH,
}


class BadSpan(ValueError):
    """A span that is none of D, W, M, 6M, Y, All; the message says which are."""


def span_named(text: str) -> Span:
    """The span ``text`` names (``D``, ``W``, ``M``, ``6M``, ``Y``, ``All``; any case)."""
    for span in Span:
        if span.value.lower() == text.strip().lower():
            return span
    raise BadSpan(f"range: one of {', '.join(s.value for s in Span)} (not {text!r})")


@dataclass(frozen=True, slots=True)
class Window:
    """The days a span shows: ``[start, end)`` (None for All), its resolution, and the
    anchors of the windows before and after (None: no data that way)."""

    span: Span
    anchor: date
    start: date | None
    end: date | None
    per: Resolution
    earlier: date | None
    later: date | None

    def resolution(self, kind: Kind) -> Resolution | None:
        """The resolution ``kind`` is read at here: None for a discrete metric's day,
        whose resolution follows the window as a zoom's does (minutes)."""
        if self.span is Span.DAY and kind is not Kind.CUMULATIVE:
            return None
        return self.per


def _months_back(day: date, months: int) -> date:
    """The day ``months`` calendar months before ``day`` (after it when negative), the
    month's last day where that month is shorter: 31 March less one month is 28 or 29
    February."""
    year, month = divmod(day.year * 12 + day.month - 1 - months, 12)
    month += 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _first_of_month(day: date) -> date:
    return day.replace(day=1)


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def window(span: Span, anchor: date, first: date | None = None, last: date | None = None) -> Window:
    """The window of ``span`` ending on ``anchor``; ``first`` and ``last`` (the field's
    days with data, when known) bound the arrows: no window before the first day's, none
    after the last day's."""
    after = anchor + timedelta(days=1)
    if span is Span.DAY:
        start, end = anchor, after
    elif span is Span.WEEK:
        start, end = anchor - timedelta(days=6), after
    elif span is Span.MONTH:
        start, end = _months_back(anchor, 1) + timedelta(days=1), after
    elif span is Span.HALF_YEAR:
        end = _monday(anchor) + timedelta(days=7)
        start = _monday(_months_back(anchor, 6) + timedelta(days=1))
    elif span is Span.YEAR:
        end = _months_back(_first_of_month(anchor), -1)
        start = _months_back(end, 12)
    else:
        return Window(span, anchor, None, None, RESOLUTION[span], None, None)
    # the window before ends the day before this one starts; the one after is the
    # anchor a span later
    earlier, later = start - timedelta(days=1), _moved(span, anchor, 1)
    return Window(
        span,
        anchor,
        start,
        end,
        RESOLUTION[span],
        None if first is not None and first >= start else earlier,
        None if last is not None and last < end else later,
    )


def _moved(span: Span, anchor: date, by: int) -> date:
    """The anchor ``by`` spans after ``anchor``."""
    if span is Span.DAY:
        return anchor + timedelta(days=by)
    if span is Span.WEEK:
        return anchor + timedelta(days=7 * by)
    months = {Span.MONTH: 1, Span.HALF_YEAR: 6, Span.YEAR: 12}[span]
    return _months_back(anchor, -months * by)


def midnight(day: date | None) -> datetime | None:
    """A day's first instant on the phone's clock (a naive bound, docs/time.md)."""
    return None if day is None else datetime(day.year, day.month, day.day)


def today(time_zone: str) -> date:
    """Today's date on the account's zone (``healthlog account set-tz``; UTC unless set)."""
    try:
        zone = clock.zone_named(time_zone)
    except clock.UnknownZone:
        zone = clock.zone_named("UTC")
    return ids.now().astimezone(zone).date()


def day_of(utc_text: str, time_zone: str) -> date:
    """The day on the account's zone of a stored UTC time (a field's first or last
    start: the catalog keeps no offset, so the account's zone stands for the phone's)."""
    try:
        zone = clock.zone_named(time_zone)
    except clock.UnknownZone:
        zone = clock.zone_named("UTC")
    return clock.from_text(utc_text).astimezone(zone).date()
