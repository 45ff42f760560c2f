"""HAE timestamps to UTC instants: fixed-width text plus the offset the phone sent.

``instant(value)`` returns ``("2021-12-23T16:04:00.000000Z", 480)`` for
``"2021-12-24 00:04:00 +0800"``: the UTC instant as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``
(always six fraction digits, so text order is time order) and the original offset in
minutes. Accepted forms (docs/hae-format.md, "Timestamp forms"):

* ``yyyy-MM-dd HH:mm:ss Z``, the app's canonical form (``2023-06-06 20:38:38 -0500``);
* the 12-hour locale variant ``2024-09-21 7:57:00 am +1000``, with ``am/pm/AM/PM``
  after a plain space or U+202F NARROW NO-BREAK SPACE;
* a date alone, ``2021-12-18`` (aggregated sleep): midnight, offset None;
* RFC 3339 / ISO 8601 (``2024-01-02T03:04:05Z``, ``...+01:00``);
* epoch seconds as a JSON number (int or float): offset None.

A local time without an offset (date-only, ISO without a zone) is read as if it were
UTC and its offset is None: the value alone does not say where it was. Two readers know
more and say so: CSV times are read in the account's zone (``in_zone``), and an
aggregated sleep night sent as a day alone starts at that day's midnight on the night's
own clock (``day_start``, ``hae.metrics``). Anything else raises ``ValueError``; the
message never quotes the value.

The canonical form is the hot path (a 10 MB metrics body holds ~150k of them): it is
read by slicing, and every piece is validated by a lookup in a table that fills itself
on first use, so no ``strptime`` and no ``datetime`` object per point.

``Instants`` memoises ``instant`` for the texts of one body: the metrics of one delivery
share their timestamps (step count, energy and distance of the same minute), so most
texts are read once per body, not once per metric.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, timedelta
from typing import TypeGuard
from zoneinfo import ZoneInfo

_MINUTES_PER_DAY = 1440
# "HH:MM" for every minute of a day, indexed by minute
_CLOCK = [f"{m // 60:02d}:{m % 60:02d}" for m in range(_MINUTES_PER_DAY)]
# "HH:MM" as sent -> minute of the day (24-hour form only)
_HOUR_MINUTE = {text: m for m, text in enumerate(_CLOCK)}
_SECONDS = frozenset(f"{s:02d}" for s in range(60))
_ASCII_DAY = re.compile(r"\d{4}-\d\d-\d\d", re.ASCII)
_ASCII_OFFSET = re.compile(r"[+-]\d\d[0-5]\d", re.ASCII)

# the fill-on-use tables; both are bounded (days seen in bodies, offsets on Earth)
_days: dict[str, tuple[str | None, str | None]] = {}
_offsets: dict[str, int] = {}

# the slower forms: 24- or 12-hour clock with an offset, HAE's spacing
_HAE_CLOCK = re.compile(
    r"(\d{4}-\d\d-\d\d) (\d{1,2}):(\d\d):(\d\d)(?:[ \u202f]([aApP][mM]))? ([+-]\d\d[0-5]\d)",
    re.ASCII,
)


def instant(value: object) -> tuple[str, int | None]:
    """The UTC instant of a HAE time value and its offset in minutes (None if none).

    Raises ``ValueError`` for anything that is not one of the forms in the module doc.
    """
    try:
        if type(value) is str:
            if len(value) == 25:
                fast = _canonical(value)
                if fast is not None:
                    return fast
            return _slow(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return _epoch(value)
    except ValueError:
        # datetime's own messages quote the text they choked on
        raise ValueError("not a time value") from None
    raise ValueError("not a time value")


class Instants(dict[str, tuple[str, int | None]]):
    """``instant`` for the texts of one body, each read once: one per parse call.

    ``instants.get(text)`` is the look-up the hot paths inline; ``read(value)`` is
    ``instant(value)``, exactly, only cheaper:

    * a text read before is looked up (a delivery's metrics share their minutes: step
      count, energy and distance of the same minute);
    * a canonical text in the same minute as the last canonical text this memo read
      (second-level heart rate: sixty texts a minute, each new) takes that minute's
      instant and its own seconds: the offset is whole minutes, so the seconds carry
      into nothing. Those texts are not remembered, so the memo holds about one text a
      minute of such a body.

    Only texts are remembered: ``1 == 1.0 == True`` as dict keys, and ``instant`` does
    not read them alike. What ``instant`` refuses is not remembered: it raises again. At
    ``LIMIT`` texts the memo starts over, so one parse of a body of millions of distinct
    times holds a bounded memo.

    ``zone`` is the account's IANA zone, where a day the body sends alone starts when
    nothing in the body says which clock it is on (``day_start``).
    """

    __slots__ = ("_head", "_offset", "_prefix", "_tail", "zone")
    LIMIT = 1 << 16

    def __init__(self, zone: str = "UTC") -> None:
        super().__init__()
        self.zone = zone
        # the last canonical text's "yyyy-MM-dd HH:mm:" and " ±hhmm", and its instant's
        # "yyyy-MM-ddTHH:mm:" and offset; longer than any canonical text until then
        self._head = self._tail = " " * 26
        self._prefix = ""
        self._offset = 0

    def read(self, value: object) -> tuple[str, int | None]:
        if type(value) is not str:
            return instant(value)
        found = self.get(value)
        if found is not None:
            return found
        if len(value) == 25:
            second = value[17:19]
            if value.startswith(self._head) and value.endswith(self._tail) and second in _SECONDS:
                return f"{self._prefix}{second}.000000Z", self._offset
            try:
                fast = _canonical(value)
            except ValueError:
                raise ValueError("not a time value") from None  # as instant says it
            if fast is not None:
                self._head, self._tail = value[:17], value[19:]
                self._prefix, self._offset = fast[0][:17], fast[1]
                found = fast
        if found is None:
            found = instant(value)
        if len(self) >= self.LIMIT:
            self.clear()
        self[value] = found
        return found


def is_day(value: object) -> TypeGuard[str]:
    """True for a day alone, ``yyyy-MM-dd``, that ``instant`` reads (as UTC midnight)."""
    return type(value) is str and len(value) == 10 and _ASCII_DAY.fullmatch(value) is not None


def day_start(day: str, offset: int | None, zone: str) -> tuple[str, int]:
    """The UTC instant of the midnight that starts ``day`` (``yyyy-MM-dd``) and its offset.

    On the clock ``offset`` minutes east of UTC; with no offset, in the IANA ``zone``,
    as CSV's offset-less times are read (``in_zone``). Raises ``ValueError`` for a day
    that is not one, or a midnight out of range.
    """
    if not is_day(day):
        raise ValueError("not a day")
    midnight = datetime.fromisoformat(day)
    if offset is None:
        try:
            clock = ZoneInfo(zone)
        except (ValueError, KeyError) as exc:  # ZoneInfoNotFoundError is a KeyError
            raise ValueError("not a time zone") from exc
        return in_zone(midnight, clock)
    try:
        return _utc_text(midnight - timedelta(minutes=offset)), offset
    except OverflowError as exc:
        raise ValueError("time out of range") from exc


def in_zone(local: datetime, zone: ZoneInfo) -> tuple[str, int]:
    """UTC text and offset (minutes) of a naive local time on the clock of ``zone``.

    A time a change of clocks skips or repeats takes the offset from before it (``fold``
    0). Raises ``ValueError`` for a time out of range.
    """
    aware = local.replace(tzinfo=zone)
    delta = aware.utcoffset()
    offset = 0 if delta is None else int(delta.total_seconds() // 60)
    try:
        utc = aware.astimezone(UTC).replace(tzinfo=None)
    except OverflowError as exc:
        raise ValueError("time out of range") from exc
    return _utc_text(utc), offset


# sample: 2021-12-24 00:04:00 +0800
def _canonical(s: str) -> tuple[str, int] | None:
    """``yyyy-MM-dd HH:mm:ss ±hhmm`` by slicing, or None to let the slow path decide."""
    if s[10] != " " or s[19] != " " or s[16] != ":" or s[17:19] not in _SECONDS:
        return None
    minute = _HOUR_MINUTE.get(s[11:16])
    if minute is None:
        return None
    today = s[:10]
    neighbours = _days.get(today) or _learn_day(today)
    day: str | None = today
    offset = _offsets.get(s[20:])
    if offset is None:
        offset = _learn_offset(s[20:])
    minute -= offset
    if minute < 0:
        minute += _MINUTES_PER_DAY
        day = neighbours[0]
    elif minute >= _MINUTES_PER_DAY:
        minute -= _MINUTES_PER_DAY
        day = neighbours[1]
    if day is None:
        raise ValueError("time out of range")
    return f"{day}T{_CLOCK[minute]}:{s[17:19]}.000000Z", offset


def _learn_day(day: str) -> tuple[str | None, str | None]:
    """Validate ``yyyy-MM-dd`` and remember the day before and after it."""
    if not _ASCII_DAY.fullmatch(day):
        raise ValueError("not a date")
    d = date.fromisoformat(day)
    # the first and last representable days have no neighbour (None): a time that
    # would need one is out of range
    before = (d - timedelta(days=1)).isoformat() if d > date.min else None
    after = (d + timedelta(days=1)).isoformat() if d < date.max else None
    if len(_days) > 10_000:  # a body of odd dates must not grow this forever
        _days.clear()
    _days[day] = (before, after)
    return before, after


def _learn_offset(text: str) -> int:
    """``±hhmm`` to minutes, remembered."""
    if not _ASCII_OFFSET.fullmatch(text):
        raise ValueError("not a UTC offset")
    minutes = int(text[1:3]) * 60 + int(text[3:5])
    if minutes >= _MINUTES_PER_DAY:
        raise ValueError("UTC offset out of range")
    minutes = -minutes if text[0] == "-" else minutes
    _offsets[text] = minutes
    return minutes


# sample: 2024-09-21 7:57:00 am +1000 / 2024-09-21 7:57:00\u202fPM +1000 / 2021-12-18
def _slow(s: str) -> tuple[str, int | None]:
    """Every string form other than the canonical one (or a canonical edge case)."""
    m = _HAE_CLOCK.fullmatch(s)
    if m is not None:
        day, hour_text, minute_text, second_text, meridiem, offset_text = m.groups()
        hour, minute, second = int(hour_text), int(minute_text), int(second_text)
        if meridiem is not None:
            if not 1 <= hour <= 12:
                raise ValueError("not a 12-hour time")
            hour = hour % 12 + (12 if meridiem.lower() == "pm" else 0)
        offset = _offsets.get(offset_text)
        if offset is None:
            offset = _learn_offset(offset_text)
        try:
            local = datetime.fromisoformat(day).replace(hour=hour, minute=minute, second=second)
            return _utc_text(local - timedelta(minutes=offset)), offset
        except OverflowError as exc:
            raise ValueError("time out of range") from exc
    if len(s) == 10 and _ASCII_DAY.fullmatch(s):
        date.fromisoformat(s)  # validates the calendar date
        return f"{s}T00:00:00.000000Z", None
    return _iso(s)


# sample: 2024-01-02T03:04:05Z / 2024-01-02T03:04:05.250+01:00
def _iso(s: str) -> tuple[str, int | None]:
    if not s.isascii() or not _ASCII_DAY.match(s):
        raise ValueError("not a time value")
    parsed = datetime.fromisoformat(s)
    delta = parsed.utcoffset()
    if delta is None:
        return _utc_text(parsed), None
    try:
        utc = parsed.astimezone(UTC).replace(tzinfo=None)
    except OverflowError as exc:
        raise ValueError("time out of range") from exc
    return _utc_text(utc), int(delta.total_seconds() // 60)


# sample: 1718000000.123 (HRV heartbeatSeries, ECG voltages)
def _epoch(seconds: float) -> tuple[str, None]:
    if not math.isfinite(seconds):
        raise ValueError("not a finite epoch")
    try:
        moment = datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)
    except (OverflowError, OSError) as exc:
        raise ValueError("epoch out of range") from exc
    return _utc_text(moment), None


def _utc_text(naive_utc: datetime) -> str:
    # isoformat, not strftime: strftime's %Y does not zero-pad years before 1000
    return naive_utc.isoformat(timespec="microseconds") + "Z"
