"""Time bounds as people type them (``--from``/``--to``), read into instants.

Accepted forms (docs/operations.md, "Dates and ranges"):

* a day ``2026-11-30``, a month ``2026-11`` or a year ``2026``: its first instant;
* an ISO date-time, ``T`` or a space between date and time, seconds and fractions
  optional: ``2026-11-30T08:00``, ``2026-11-30 08:00:00.5``; with an offset (``+01:00``,
  ``Z``) it is that instant;
* ``now``, ``today`` (its midnight), ``yesterday`` (its midnight);
* an amount of time ago: ``90m``, ``24h``, ``7d``, ``2w``.

Everything without an offset (a day, a date-time without one, ``today``) is read on the
account's clock, its time zone (``healthlog account set-tz``; UTC unless set). A range
is half open, ``[from, to)``, and compared as instants with the points' UTC starts.

``parse`` reads the text alone (so a typing error is caught before anything is
opened); ``Bound.instant`` places it once the account's zone is known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

#: what a bad bound is told it could have been
FORMS = "2026-11-30, 2026-11-30T08:00, 2026-11-30T08:00+01:00, today, yesterday, 7d, 24h"

_AGO = re.compile(r"^(\d{1,6})([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_YEAR = re.compile(r"^\d{4}$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# a date, T or one space, hh with optional :mm, :ss and fraction, an optional offset or Z
_DATETIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}(:\d{2}(:\d{2}(\.\d{1,6})?)?)?(Z|[+-]\d{2}(:?\d{2})?)?$"
)


class BadBound(ValueError):
    """Text that is none of the accepted forms; the message says which ones are."""


@dataclass(frozen=True, slots=True)
class Bound:
    """One end of a range, as typed: fixed, on the account's clock, or relative to now."""

    text: str
    #: an aware instant (the text had an offset), else None
    fixed: datetime | None = None
    #: a wall-clock time to read in the account's zone, else None
    local: datetime | None = None
    #: ``today`` is 0, ``yesterday`` 1 (midnight of that day, on the account's clock)
    days_back: int | None = None
    #: ``now`` is 0; ``7d`` is seven days
    ago: timedelta | None = None

    @property
    def needs_zone(self) -> bool:
        """Whether the account's zone decides the instant (no offset was given)."""
        return self.local is not None or self.days_back is not None

    def instant(self, zone: tzinfo = UTC, now: datetime | None = None) -> datetime:
        """The instant this bound names, read in ``zone`` where it has no offset."""
        if self.fixed is not None:
            return self.fixed
        if self.local is not None:
            return _on_clock(self.local, zone)
        now = datetime.now(UTC) if now is None else now
        if self.days_back is not None:
            day = now.astimezone(zone).date() - timedelta(days=self.days_back)
            return _on_clock(datetime.combine(day, datetime.min.time()), zone)
        assert self.ago is not None
        return now - self.ago


def parse(text: str) -> Bound:
    """Read ``text`` as a bound; BadBound naming the accepted forms if it is none."""
    raw = text.strip()
    word = raw.lower()
    if word == "now":
        return Bound(text, ago=timedelta(0))
    if word in ("today", "yesterday"):
        return Bound(text, days_back=0 if word == "today" else 1)
    ago = _AGO.match(word)
    if ago:
        return Bound(text, ago=timedelta(**{_UNITS[ago.group(2)]: int(ago.group(1))}))
    try:
        if _YEAR.match(raw):
            return Bound(text, local=datetime(int(raw), 1, 1))
        month = _MONTH.match(raw)
        if month:
            return Bound(text, local=datetime(int(month.group(1)), int(month.group(2)), 1))
        if _DAY.match(raw):
            day = date.fromisoformat(raw)
            return Bound(text, local=datetime(day.year, day.month, day.day))
        if _DATETIME.match(raw):
            at = datetime.fromisoformat(raw.replace(" ", "T", 1))
            if at.tzinfo is None:
                return Bound(text, local=at)
            return Bound(text, fixed=at.astimezone(UTC))
    except ValueError:  # the right shape, an impossible value: 2026-13-45, 25:00
        raise BadBound(f"{text!r} is not a real date or time") from None
    raise BadBound(f"{text!r} is not a date or time (forms: {FORMS})")


def zone_named(name: str) -> tzinfo:
    """The time zone of an account's ``time_zone`` (UTC when it cannot be read)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def _on_clock(wall: datetime, zone: tzinfo) -> datetime:
    """A wall-clock time in ``zone`` as a UTC instant (an ambiguous one: its first).

    BadBound when that instant is off the calendar (year 1's first hours east of UTC,
    year 9999's last west of it)."""
    try:
        return wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    except OverflowError:
        raise BadBound(
            f"{wall.isoformat()} on this clock is outside the calendar in UTC (years 1 to 9999)"
        ) from None


@dataclass(frozen=True, slots=True)
class Range:
    """``[start, end)`` as instants; either end may be open (None)."""

    start: datetime | None = None
    end: datetime | None = None

    @classmethod
    def of(
        cls,
        start: Bound | None,
        end: Bound | None,
        zone: tzinfo = UTC,
        now: datetime | None = None,
    ) -> Range:
        """The range between two bounds read in ``zone``; BadBound if it is empty."""
        now = datetime.now(UTC) if now is None else now
        found = cls(
            None if start is None else start.instant(zone, now),
            None if end is None else end.instant(zone, now),
        )
        if found.start is not None and found.end is not None and found.start >= found.end:
            assert start is not None and end is not None
            raise BadBound(
                f"--from {start.text} is not before --to {end.text}: the range [from, to) is empty"
            )
        return found

    def texts(self) -> tuple[str | None, str | None]:
        """Both ends as the journal's UTC text (which sorts as the instants do)."""
        from healthlog.journal.rows import to_text

        return (
            None if self.start is None else to_text(self.start),
            None if self.end is None else to_text(self.end),
        )

    def as_dict(self) -> dict[str, str | None]:
        start, end = self.texts()
        return {"from": start, "to": end}
