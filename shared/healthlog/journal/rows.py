"""The journal's values as the port has them, and the rows the statements return.

Every statement of either dialect returns times as fixed-width UTC text and lists as
JSON text, its columns in the order its SELECT names them (``journal/sql/*.sql``), so
one set of conversions here turns any dialect's rows into the port's values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from operator import attrgetter
from typing import Any, TypeVar

import orjson

from healthlog.journal.port import StoredPoint, StoredRecord
from healthlog.model import Account, Delivery, Item, ParseStatus, Point, Record

#: builds a NamedTuple from a tuple of its fields, as its ``_make`` does, in one C call
_tuple = tuple.__new__

# --- times as the port has them ------------------------------------------------------------


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


T = TypeVar("T")


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


# --- the port's values as statement parameters, in the order the bulk statements take ----

# a Point's fields, in the order the positional getters of core (a series' identity, a
# point row's values) count on: one C call per point beats an attribute read per field
_POINT_FIELDS = "metric field source start utc_offset end qty text unit extra seq"
assert Point._fields == tuple(_POINT_FIELDS.split())
RECORD_VALUES = attrgetter(
    "section", "identity", "start", "end", "utc_offset", "name", "source", "body"
)
ITEM_VALUES = attrgetter("series", "seq", "t", "qty", "lat", "lon", "alt", "unit", "extra")


# --- rows to the port's values -------------------------------------------------------------


def account(row: Sequence[Any]) -> Account:
    """An account from (id, name, created_at, time_zone)."""
    return Account(id=row[0], name=row[1], created_at=from_text(row[2]), time_zone=row[3])


def delivery(row: Sequence[Any]) -> Delivery:
    """A delivery from the columns of the ``get_delivery`` statement."""
    (id_, account_id, received_at, archive_key, size, content_type, status, uncovered) = row[:8]
    points, attempts, failure, folded_at, headers, fold_position, fold_state, records = row[8:16]
    body_removed_at, repeated = row[16:18]
    return Delivery(
        id=id_,
        account_id=account_id,
        received_at=from_text(received_at),
        archive_key=archive_key,
        size=size,
        content_type=content_type,
        status=ParseStatus(status),
        uncovered=tuple(orjson.loads(uncovered)),
        points=points,
        attempts=attempts,
        failure=failure,
        folded_at=None if folded_at is None else from_text(folded_at),
        headers=tuple((name, value) for name, value in orjson.loads(headers)),
        fold_position=int(fold_position),
        fold_state=fold_state,
        records=int(records),
        body_removed_at=None if body_removed_at is None else from_text(body_removed_at),
        repeated=int(repeated),
    )


def stored_point(row: Sequence[Any]) -> StoredPoint:
    """A showcase point from the columns of ``export_points``."""
    # tuples built whole from the row's slices, as NamedTuple's own ``_make`` builds
    # them less its checks: no unpacking into arguments, no Python frame, for every row
    return _tuple(StoredPoint, (row[0], _tuple(Point, row[1:12]), row[13]))


def stored_record(row: Sequence[Any], items: tuple[Item, ...]) -> StoredRecord:
    """A record from the columns of ``export_records``, with its items."""
    section, identity, start, end, utc_offset, name, source, body = row[1:9]
    record = Record(section, identity, start, end, utc_offset, name, source, body, items)
    return StoredRecord(row[0], record, row[10])


def with_items(
    records: Iterable[tuple[Any, ...]], items: Iterable[tuple[Any, ...]]
) -> Iterator[StoredRecord]:
    """Records joined with their items: two streams in one order, merged in one pass.

    Both streams come in export order, keyed by their first three columns (account,
    section, identity); each item row follows with its item's columns.
    """
    pending = iter(items)
    item = next(pending, None)
    for row in records:
        key = row[:3]
        found: list[Item] = []
        while item is not None and item[:3] == key:
            found.append(Item._make(item[3:]))
            item = next(pending, None)
        yield stored_record(row, tuple(found))


# --- the fingerprint -----------------------------------------------------------------------

#: the showcase's tables in the order they are hashed (records after points, so a
#: showcase of points alone keeps the fingerprint it had before records existed)
FINGERPRINT_STATEMENTS = (
    "fingerprint_points",
    "fingerprint_records",
    "fingerprint_series",
    "fingerprint_items",
)


def fingerprint(tables: Iterable[Iterable[tuple[Any, ...]]]) -> str:
    """The hash of the fingerprint statements' rows, in their order."""
    digest = hashlib.sha256()
    for number, table in enumerate(tables):
        # rows of the later tables carry their table's number: no row of one
        # table can read as a row of another, and empty tables add nothing
        tag = f"{number}:".encode() if number else b""
        for row in table:
            digest.update(tag)
            # repr of a tuple of str/int/float/None is canonical and unambiguous
            # (strings quoted and escaped, floats shortest round-trip)
            digest.update(repr(tuple(row)).encode())
            digest.update(b"\n")
    return digest.hexdigest()
