"""Time, once: the stored UTC text, the phone's clock, a day, and a zone.

Every interface reads a time the user gives through here (docs/time.md):

* **A time with an offset** (``2026-03-02T08:00+01:00``, ``...Z``, an aware datetime) is
  that instant, compared with each sample's UTC start.
* **A time without an offset** (``2026-03-02``, ``2026-03-02T08:00``, a naive datetime)
  is a wall-clock time on the phone's clock of *each sample*: its start read on the UTC
  offset it was recorded with (UTC for a sample stored without one). So "2026-03-02" is
  that day as the phone lived it, in Berlin or in Tokyo, before and after a DST change;
  it is what Health Auto Export aggregates on and what the Health app shows. Such a
  bound is a ``Wall``; the journal compares it with each sample's local start.
* ``today``/``yesterday`` need the date of now: on the account's zone
  (``healthlog account set-tz``), then a wall-clock midnight like any day.

The journal stores times as fixed-width UTC text (``to_text``, ``from_text``), whose text
order is time order; the other helpers here convert between that text, the phone's clock
and bounds, and group days into runs (``runs_of_days``). The journal's adapters and the
read side both take them from here (``journal.rows`` re-exports the codec for the
adapters).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from typing import TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from healthlog.errors import HealthlogError

#: how far a phone's clock may be from UTC: the offsets in use run from -12 h to +14 h,
#: and HAE's parser takes any under a day, so a day reaches this far past its UTC day
REACH = timedelta(hours=24)


T = TypeVar("T")


class UnknownZone(HealthlogError):
    """A time zone name that is not an IANA zone this machine knows."""


def zone_named(name: str) -> tzinfo:
    """The zone ``name`` (an IANA name, or ``UTC``); UnknownZone, never a silent UTC."""
    if name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UnknownZone(
            f"no time zone named {name!r} (an IANA name, e.g. Europe/Berlin)"
        ) from None


# --- the stored UTC text ------------------------------------------------------------------


def to_text(at: datetime) -> str:
    """The port's fixed-width UTC text, so text order is time order (year 1 included)."""
    if at.tzinfo is None:
        raise ValueError("the journal stores aware datetimes only")
    u = at.astimezone(UTC)
    # by hand: strftime("%Y") gives "1", not "0001", for the zero cursor's year
    return (
        f"{u.year:04d}-{u.month:02d}-{u.day:02d}T"
        f"{u.hour:02d}:{u.minute:02d}:{u.second:02d}.{u.microsecond:06d}Z"
    )


def from_text(text: str) -> datetime:
    return datetime.fromisoformat(text)


_FIRST = datetime.min.replace(tzinfo=UTC)
_LAST = datetime.max.replace(tzinfo=UTC)
_SPAN_US = (_LAST - _FIRST) // timedelta(microseconds=1)


def first_at_or_after(prefix: str) -> datetime | None:
    """The first instant whose text sorts at or after ``prefix``; None if none does.

    ``to_text`` is monotonic, so ``start >= first_at_or_after(p)`` holds exactly when
    ``to_text(start) >= p``. A binary search over the microseconds of years 1-9999:
    about sixty formattings.
    """
    if to_text(_LAST) < prefix:
        return None
    low, high = 0, _SPAN_US  # the text at ``high`` is always >= prefix
    while low < high:
        middle = (low + high) // 2
        if to_text(_FIRST + timedelta(microseconds=middle)) >= prefix:
            high = middle
        else:
            low = middle + 1
    return _FIRST + timedelta(microseconds=low)


def start_bound(prefix: str) -> str | None:
    """An export's text bound (a prefix such as ``2024-01-31`` works) as a whole time text.

    ``start >= start_bound(p)`` holds exactly where ``start >= p`` does on the stored
    text, and the bound is a time either dialect can compare its ``start`` column with,
    so the primary key can range over it. None: no stored start sorts at or after it.
    """
    found = first_at_or_after(prefix)
    return None if found is None else to_text(found)


# --- the phone's clock --------------------------------------------------------------------


def offset_zone(offset_min: int | None) -> timezone:
    """The fixed zone of a sample's UTC offset (UTC for a sample stored without one)."""
    return UTC if offset_min is None else timezone(timedelta(minutes=offset_min))


def local_of(utc_text: str, offset_min: int | None) -> datetime:
    """A stored time on the phone's clock, as a naive wall-clock datetime."""
    at = from_text(utc_text)
    try:
        return at.astimezone(offset_zone(offset_min)).replace(tzinfo=None)
    except OverflowError:  # off the calendar's ends on the phone's clock: its UTC time
        return at.replace(tzinfo=None)


def local_text(utc_text: str | None, offset_min: int | None) -> str | None:
    """A stored UTC time as ISO 8601 on the phone's clock, with its offset."""
    if utc_text is None:
        return None
    at = from_text(utc_text)
    try:
        return at.astimezone(offset_zone(offset_min)).isoformat()
    except OverflowError:  # off the calendar's ends on the phone's clock: UTC
        return at.isoformat()


@dataclass(frozen=True, slots=True)
class Wall:
    """A wall-clock time on the phone's clock of each sample (a bound without an offset).

    A sample is at or after it when its start, read on its own offset, is.
    """

    at: datetime  # naive

    @property
    def text(self) -> str:
        """The time as the journal's statements compare a local start with it."""
        a = self.at
        return (
            f"{a.year:04d}-{a.month:02d}-{a.day:02d}T"
            f"{a.hour:02d}:{a.minute:02d}:{a.second:02d}.{a.microsecond:06d}"
        )

    def reach(self, later: bool) -> str | None:
        """The UTC text every sample on this wall time's side starts within: ``REACH``
        before it (``later`` False) or after it; None past the calendar's ends."""
        try:
            moved = self.at + (REACH if later else -REACH)
        except OverflowError:
            return None
        return to_text(moved.replace(tzinfo=UTC))

    def day(self) -> date:
        return self.at.date()

    def day_after(self) -> date:
        """The first day an exclusive end at this time leaves out."""
        return self.at.date() + timedelta(days=0 if self.at.time() == time() else 1)


#: a bound as the journal takes it: stored UTC text (or a prefix of it), or a ``Wall``
At = str | Wall
#: a bound as the read side takes it: ``At``, or a datetime (naive: on the phone's clock)
Moment = datetime | str | Wall


def bound(at: Moment | None) -> At | None:
    """A bound as the journal takes it: an aware datetime as UTC text, a naive one as a
    ``Wall`` on the phone's clock, text (the stored UTC text or a prefix) as it is."""
    if at is None or isinstance(at, (str, Wall)):
        return at
    if at.tzinfo is None:
        return Wall(at)
    return to_text(at)


def utc_side(at: At | None, later: bool) -> str | None:
    """The UTC text an index range can use for a bound: a ``Wall``'s reach on its side."""
    if isinstance(at, Wall):
        return at.reach(later)
    return at


def meets(start: str, offset_min: int | None, low: At | None, high: At | None) -> bool:
    """Whether a sample starting at ``start`` (UTC text, its offset) is in [low, high)."""
    for edge, after in ((low, True), (high, False)):
        if edge is None:
            continue
        if isinstance(edge, Wall):
            here = local_of(start, offset_min)
            inside = here >= edge.at if after else here < edge.at
        else:
            inside = start >= edge if after else start < edge
        if not inside:
            return False
    return True


def day_from(at: At | None) -> str | None:
    """The first day of the phone's clock a range starting at ``at`` touches: a wall
    time's own day; for an instant, the earliest day any offset puts it on."""
    if at is None:
        return None
    if isinstance(at, Wall):
        return at.day().isoformat()
    return _day_moved(at, -REACH, "9999-99-99")


def day_to(at: At | None) -> str | None:
    """The first day of the phone's clock a range ending (exclusive) at ``at`` leaves out."""
    if at is None:
        return None
    if isinstance(at, Wall):
        return at.day_after().isoformat()
    return _day_moved(at, REACH + timedelta(days=1), None)


def _day_moved(at: str, by: timedelta, past_last: str | None) -> str | None:
    """The UTC day of the instant text ``at`` names, moved ``by``; ``past_last`` when no
    stored time reaches it, None (no bound) past the calendar's ends."""
    found = first_at_or_after(at)
    if found is None:
        return past_last
    try:
        return (found + by).date().isoformat()
    except OverflowError:
        return None


# --- a sample over the buckets it spans ----------------------------------------------------

#: a cumulative sample is spread over the buckets of the phone's clock it overlaps when it
#: lasts at most this long; a longer one (rare: another app's week-long sample) is booked
#: whole at its start, so no read or fold spreads one sample over more than this
SPREAD_SPAN = timedelta(days=2)

_LABELS = {"minute": "%Y-%m-%dT%H:%M", "hour": "%Y-%m-%dT%H:00", "day": "%Y-%m-%d"}
_WIDTHS = {"minute": timedelta(minutes=1), "hour": timedelta(hours=1)}


def bucket_label(local: datetime, bucket: str) -> str:
    """The name of the bucket that holds ``local`` (the phone's clock), as the journal's
    SQL names it: ``2026-03-02T13:05``, ``2026-03-02T13:00``, ``2026-03-02``, the
    Monday of its week, the first of its month."""
    if bucket in _LABELS:
        return local.strftime(_LABELS[bucket])
    if bucket == "week":
        return (local.date() - timedelta(days=local.weekday())).isoformat()
    if bucket == "month":
        return local.strftime("%Y-%m-01")
    raise ValueError(f"no such bucket: {bucket}")


def spans(start: str, end: str | None) -> bool:
    """Whether a sample from ``start`` to ``end`` (UTC text) is one ``spread`` spreads:
    it has a duration, of at most ``SPREAD_SPAN``."""
    if end is None or end <= start:
        return False
    return from_text(end) - from_text(start) <= SPREAD_SPAN


def spread(
    start: str, end: str | None, offset_min: int | None, value: float | None, bucket: str
) -> list[tuple[str, float | None, datetime]]:
    """A cumulative sample's parts, per bucket of the phone's clock it overlaps: (bucket,
    its part of ``value`` in proportion to the time it spends there, where that part
    begins on the phone's clock), in time order, as the Health app's statistics split
    a sample over the days (and hours) it spans. A sample without a duration, without a
    value, or longer than ``SPREAD_SPAN`` is one part: its start's bucket, all of it.
    Parts of no time (a sample ending on a bucket's edge) are left out."""
    first = local_of(start, offset_min)
    if value is None or not spans(start, end):
        return [(bucket_label(first, bucket), value, first)]
    assert end is not None
    last = local_of(end, offset_min)
    whole = last - first
    parts: list[tuple[str, float | None, datetime]] = []
    at = first
    while at < last:
        if bucket in _WIDTHS:
            width = _WIDTHS[bucket]
            edge = datetime.min + ((at - datetime.min) // width + 1) * width
        else:  # day, week, month: a day at a time, named by the bucket that holds it
            edge = datetime.combine(at.date() + timedelta(days=1), datetime.min.time())
        upto = min(edge, last)
        share = value * ((upto - at) / whole)
        name = bucket_label(at, bucket)
        if parts and parts[-1][0] == name:
            held = parts[-1]
            parts[-1] = (name, (held[1] or 0.0) + share, held[2])
        else:
            parts.append((name, share, at))
        at = upto
    return parts


def utc_of(local: datetime, offset_min: int | None) -> str:
    """A time on the phone's clock of a sample (naive) back as stored UTC text."""
    try:
        return to_text((local - timedelta(minutes=offset_min or 0)).replace(tzinfo=UTC))
    except OverflowError:
        return to_text(local.replace(tzinfo=UTC))


def runs_of_days(items: Iterable[T], day_of: Callable[[T], date]) -> list[list[T]]:
    """``items`` in day order as runs of consecutive days (a run: the items of days that
    follow one another without a gap)."""
    runs: list[list[T]] = []
    previous: date | None = None
    for item in items:
        day = day_of(item)
        if runs and previous is not None and (day - previous).days == 1:
            runs[-1].append(item)
        else:
            runs.append([item])
        previous = day
    return runs
