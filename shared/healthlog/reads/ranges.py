"""Time bounds as people type them (``--from``/``--to``), read into instants.

Accepted forms (docs/operations.md, "Dates and ranges"):

* a day ``2026-11-30``, a month ``2026-11`` or a year ``2026``: its first instant;
* an ISO date-time, ``T`` or a space between date and time, seconds and fractions
  optional: ``2026-11-30T08:00``, ``2026-11-30 08:00:00.5``; with an offset (``+01:00``,
  ``Z``) it is that instant;
* ``now``, ``today`` (its midnight), ``yesterday`` (its midnight);
* an amount of time ago: ``90m``, ``24h``, ``7d``, ``2w``.

What a bound means is ``healthlog.clock``'s rule, the same in every interface
(docs/time.md): with an offset it is that instant; without one (a day, a date-time
without an offset) it is a wall-clock time on the phone's clock of each sample, so
``2026-11-30`` is that day as the phone lived it. ``today`` and ``yesterday`` take the
date of now on the account's time zone (``healthlog account set-tz``; UTC unless set),
then are that day's midnight on the phone's clock. ``7d`` and ``now`` are instants. A
range is half open, ``[from, to)``.

``parse`` reads the text alone (so a typing error is caught before anything is
opened); ``Bound.at`` places it once the account's zone is known.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo

from healthlog import clock

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
    """One end of a range, as typed: fixed, on the phone's clock, or relative to now."""

    text: str
    #: an aware instant (the text had an offset), else None
    fixed: datetime | None = None
    #: a wall-clock time on the phone's clock of each sample, else None
    local: datetime | None = None
    #: ``today`` is 0, ``yesterday`` 1 (midnight of that day, its date on the account's zone)
    days_back: int | None = None
    #: ``now`` is 0; ``7d`` is seven days
    ago: timedelta | None = None

    @property
    def needs_zone(self) -> bool:
        """Whether the account's zone decides the bound (``today``'s date)."""
        return self.days_back is not None

    def at(self, zone: tzinfo = UTC, now: datetime | None = None) -> datetime:
        """The bound: an aware instant, or a naive wall-clock time on the phone's clock;
        ``zone`` gives ``today``'s date."""
        if self.fixed is not None:
            return self.fixed
        if self.local is not None:
            return self.local
        now = datetime.now(UTC) if now is None else now
        if self.days_back is not None:
            day = now.astimezone(zone).date() - timedelta(days=self.days_back)
            return datetime.combine(day, datetime.min.time())
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
            at.astimezone(UTC)  # on the calendar in UTC, or OverflowError
            return Bound(text, fixed=at)  # its own offset kept: coverage's days are on it
    except OverflowError:
        raise BadBound(f"{text!r} is outside the calendar in UTC (years 1 to 9999)") from None
    except ValueError:  # the right shape, an impossible value: 2026-13-45, 25:00
        raise BadBound(f"{text!r} is not a real date or time") from None
    raise BadBound(f"{text!r} is not an ISO 8601 date or time (forms: {FORMS})")


zone_named = clock.zone_named


@dataclass(frozen=True, slots=True)
class Range:
    """``[start, end)``; either end may be open (None). Each end an aware instant, or a
    naive wall-clock time on the phone's clock (``clock.bound``)."""

    start: datetime | None = None
    end: datetime | None = None

    @classmethod
    def of(
        cls,
        start: Bound | None,
        end: Bound | None,
        zone: tzinfo = UTC,
        now: datetime | None = None,
        names: tuple[str, str] = ("--from", "--to"),
    ) -> Range:
        """The range between two bounds (``zone``: today's date); BadBound if it is empty.

        A range of a wall-clock time and an instant is empty only as the phone's clock
        of each sample says, so it is not judged here."""
        now = datetime.now(UTC) if now is None else now
        found = cls(
            None if start is None else start.at(zone, now),
            None if end is None else end.at(zone, now),
        )
        low, high = found.start, found.end
        same = low is not None and high is not None
        same = same and (low.tzinfo is None) == (high.tzinfo is None)  # type: ignore[union-attr]
        if same and low >= high:  # type: ignore[operator]
            assert start is not None and end is not None
            first, last = names
            raise BadBound(
                f"{first} {start.text} is not before {last} {end.text}: the range "
                f"[{first.lstrip('-')}, {last.lstrip('-')}) is empty"
            )
        return found

    def bounds(self) -> tuple[clock.At | None, clock.At | None]:
        """Both ends as the journal takes them (``clock.bound``)."""
        return clock.bound(self.start), clock.bound(self.end)

    def as_dict(self) -> dict[str, str | None]:
        return {
            "from": None if self.start is None else self.start.isoformat(),
            "to": None if self.end is None else self.end.isoformat(),
        }


def given(
    start: str | None,
    end: str | None,
    zone: Callable[[], tzinfo],
    *,
    names: tuple[str, str] = ("start", "end"),
    now: datetime | None = None,
) -> Range:
    """A range given as two texts (the dashboard's and the MCP tools' arguments), read
    as ``parse`` reads the command line's: BadBound naming the argument. ``zone`` gives
    the account's zone, asked only for ``today`` and ``yesterday``."""
    bounds: list[Bound | None] = []
    for name, text in zip(names, (start, end), strict=True):
        if text is None or not text.strip():
            bounds.append(None)
            continue
        try:
            bounds.append(parse(text))
        except BadBound as exc:
            raise BadBound(f"{name}: {exc}") from None
    needs = any(b is not None and b.needs_zone for b in bounds)
    return Range.of(bounds[0], bounds[1], zone() if needs else UTC, now, names)
