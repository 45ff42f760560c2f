"""What both Journal adapters share, with no driver: their columns, filters and rows.

The adapters differ in their drivers, their transactions and much of their SQL: SQLite
upserts row by row, PostgreSQL copies into temporary tables and upserts from there. What
they share is here: the column lists both schemas have in one order; the queries of the
reads with optional filters (the deliveries listing, the exports) and of the
fingerprint; the conversion of a fetched row to the port's values; and the
fingerprint's hash. A ``Dialect`` names what these differ by.

Showcase rows (points, records, series, items) reach this module as the port has them,
times as fixed-width UTC text: SQLite stores that text, and the PostgreSQL adapter turns
its ``timestamptz`` values back into it first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any, Literal

from healthlog.journal.port import StoredPoint, StoredRecord
from healthlog.model import Account, Delivery, Item, ParseStatus, Point, Record

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


def from_text(text: str) -> datetime:
    return datetime.fromisoformat(text)


# --- columns: both schemas have these, in this order ---------------------------------------

ACCOUNT_COLUMNS = "id, name, created_at, time_zone"

DELIVERY_COLUMNS = (
    "id, account_id, received_at, archive_key, size, content_type, status, uncovered,"
    " points, attempts, failure, folded_at, headers"
)

POINT_COLUMNS = (
    'account_id, metric, field, source, start, utc_offset, "end", qty, text, unit, extra,'
    " layer_received_at, layer_id"
)

RECORD_COLUMNS = (
    'account_id, section, identity, start, "end", utc_offset, name, source, body,'
    " layer_received_at, layer_id"
)

SERIES_COLUMNS = "account_id, section, identity, series, layer_received_at, layer_id"

ITEM_COLUMNS = "series, seq, t, qty, lat, lon, alt, unit, extra"

# a port value's own columns, in the order above, as the parameters of its row
POINT_VALUES = attrgetter(
    "metric", "field", "source", "start", "utc_offset", "end", "qty", "text", "unit", "extra"
)
RECORD_VALUES = attrgetter(
    "section", "identity", "start", "end", "utc_offset", "name", "source", "body"
)
ITEM_VALUES = attrgetter("series", "seq", "t", "qty", "lat", "lon", "alt", "unit", "extra")


# --- what the backends differ by -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one backend binds values, tests an uncovered list, sorts NULLs and stores times."""

    mark: str  # the driver's placeholder: ? (sqlite3) or %s (psycopg)
    # a condition that holds when the delivery's uncovered list names the key bound to it
    uncovered_has: str
    # an export's start bound (port text; a prefix works) as the value to compare the
    # ``start`` column with, or None when no stored start sorts at or after it
    start_bound: Callable[[str], object | None]
    # a stored instant (received_at, created_at, folded_at) as the driver returns it,
    # as an aware datetime
    instant: Callable[[Any], datetime]
    # a stored list (uncovered keys, headers) as the driver returns it, as Python values
    listed: Callable[[Any], Iterable[Any]]
    # what makes an ascending ORDER BY key put NULLs first: an export lists the records
    # without a start first on either backend
    nulls_first: str


# --- filters -------------------------------------------------------------------------------


def where(clauses: Sequence[str]) -> str:
    return " WHERE " + " AND ".join(clauses) if clauses else ""


def deliveries_query(
    dialect: Dialect,
    *,
    status: ParseStatus | None,
    uncovered_key: str | None,
    account_id: str | None,
    limit: int | None,
    newest_first: bool,
) -> tuple[str, list[object]]:
    """The SQL and parameters of ``Journal.deliveries``."""
    mark = dialect.mark
    clauses: list[str] = []
    params: list[object] = []
    if status is not None:
        clauses.append(f"status = {mark}")
        params.append(status.value)
    if account_id is not None:
        clauses.append(f"account_id = {mark}")
        params.append(account_id)
    if uncovered_key is not None:
        clauses.append(dialect.uncovered_has)
        params.append(uncovered_key)
    order = "DESC" if newest_first else "ASC"
    sql = (
        f"SELECT {DELIVERY_COLUMNS} FROM deliveries{where(clauses)}"
        f" ORDER BY received_at {order}, id {order}"
    )
    if limit is not None:
        if limit < 0:
            raise ValueError("limit must not be negative")
        sql += f" LIMIT {mark}"
        params.append(limit)
    return sql, params


def export_query(
    dialect: Dialect,
    table: Literal["points", "records"],
    equal: dict[str, str | None],
    start_from: str | None,
    start_to: str | None,
) -> tuple[str, list[object]]:
    """The SQL and parameters of an export of points or records, in export order.

    ``equal`` maps columns to the values they must equal (None: any). ``start_from`` is
    inclusive, ``start_to`` exclusive, both holding as they would against the UTC
    ``start`` text.
    """
    if table == "points":
        columns, order = POINT_COLUMNS, "account_id, metric, start, field, source"
    else:  # records without a start first, on either backend
        columns = RECORD_COLUMNS
        order = f"account_id, section, start{dialect.nulls_first}, identity"
    clauses = [f"{column} = {dialect.mark}" for column, value in equal.items() if value is not None]
    params: list[object] = [value for value in equal.values() if value is not None]
    if start_from is not None:
        lowest = dialect.start_bound(start_from)
        if lowest is None:
            clauses.append("false")  # no stored start sorts at or after it
        else:
            clauses.append(f"start >= {dialect.mark}")
            params.append(lowest)
    if start_to is not None:
        highest = dialect.start_bound(start_to)
        if highest is not None:  # else every stored start sorts before it
            clauses.append(f"start < {dialect.mark}")
            params.append(highest)
    return f"SELECT {columns} FROM {table}{where(clauses)} ORDER BY {order}", params


def account_filter(dialect: Dialect, account_id: str | None) -> tuple[str, str, tuple[str, ...]]:
    """A report's account filter, as a whole WHERE and as one more condition, and its value.

    All empty without an account: the report covers the whole journal.
    """
    if account_id is None:
        return "", "", ()
    mark = dialect.mark
    return f" WHERE account_id = {mark}", f" AND account_id = {mark}", (account_id,)


# --- rows to the port's values -------------------------------------------------------------


def account(row: Sequence[Any], dialect: Dialect) -> Account:
    """An account from its ACCOUNT_COLUMNS."""
    return Account(id=row[0], name=row[1], created_at=dialect.instant(row[2]), time_zone=row[3])


def delivery(row: Sequence[Any], dialect: Dialect) -> Delivery:
    """A delivery from its DELIVERY_COLUMNS."""
    (id_, account_id, received_at, archive_key, size, content_type, status, uncovered) = row[:8]
    points, attempts, failure, folded_at, headers = row[8:]
    return Delivery(
        id=id_,
        account_id=account_id,
        received_at=dialect.instant(received_at),
        archive_key=archive_key,
        size=size,
        content_type=content_type,
        status=ParseStatus(status),
        uncovered=tuple(dialect.listed(uncovered)),
        points=points,
        attempts=attempts,
        failure=failure,
        folded_at=None if folded_at is None else dialect.instant(folded_at),
        headers=tuple((name, value) for name, value in dialect.listed(headers)),
    )


def stored_point(row: Sequence[Any]) -> StoredPoint:
    """A showcase point from its POINT_COLUMNS."""
    # _make takes the slice as it is: no unpacking into arguments, for every exported row
    return StoredPoint(row[0], Point._make(row[1:11]), row[12])


def stored_record(row: Sequence[Any], items: tuple[Item, ...]) -> StoredRecord:
    """A record from its RECORD_COLUMNS, with its items."""
    section, identity, start, end, utc_offset, name, source, body = row[1:9]
    record = Record(section, identity, start, end, utc_offset, name, source, body, items)
    return StoredRecord(row[0], record, row[10])


# --- the fingerprint -----------------------------------------------------------------------


def fingerprint_queries(where: str) -> tuple[str, ...]:
    """The showcase's tables in the order they are hashed, each in key order.

    ``where`` is an ``account_filter``'s WHERE (or empty).
    """
    # records after points, so a showcase of points alone keeps its old fingerprint
    return (
        f"SELECT {POINT_COLUMNS} FROM points{where}"
        " ORDER BY account_id, metric, start, field, source",
        f"SELECT {RECORD_COLUMNS} FROM records{where} ORDER BY account_id, section, identity",
        f"SELECT {SERIES_COLUMNS} FROM record_series{where}"
        " ORDER BY account_id, section, identity, series",
        f"SELECT account_id, section, identity, {ITEM_COLUMNS} FROM record_items{where}"
        " ORDER BY account_id, section, identity, series, seq",
    )


def fingerprint(tables: Iterable[Iterable[tuple[Any, ...]]]) -> str:
    """The hash of ``fingerprint_queries``' tables, given as their rows as the port has them."""
    digest = hashlib.sha256()
    for number, table in enumerate(tables):
        # rows of the later tables carry their table's number: no row of one
        # table can read as a row of another, and empty tables add nothing
        tag = f"{number}:".encode() if number else b""
        for row in table:
            digest.update(tag)
            # repr of a tuple of str/int/float/None is canonical and unambiguous
            # (strings quoted and escaped, floats shortest round-trip)
            digest.update(repr(row).encode())
            digest.update(b"\n")
    return digest.hexdigest()
