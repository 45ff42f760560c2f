"""The journal's values as the port has them, and the rows the statements return.

Every statement of either dialect returns times as fixed-width UTC text and lists as
JSON text, its columns in the order its SELECT names them (``journal/sql/*.sql``), so
one set of conversions here turns any dialect's rows into the port's values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from operator import attrgetter
from typing import Any

import orjson

from healthlog.clock import first_at_or_after, from_text, start_bound, to_text
from healthlog.journal.port import StoredPoint, StoredRecord
from healthlog.model import Account, Delivery, Item, ParseStatus, Point, Record

#: builds a NamedTuple from a tuple of its fields, as its ``_make`` does, in one C call
_tuple = tuple.__new__

# the stored UTC text's codec lives in healthlog.clock; re-exported for the adapters
__all__ = ["first_at_or_after", "from_text", "start_bound", "to_text"]

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
    """An account from (id, name, created_at, time_zone, unit_system)."""
    return Account(
        id=row[0], name=row[1], created_at=from_text(row[2]), time_zone=row[3], unit_system=row[4]
    )


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
