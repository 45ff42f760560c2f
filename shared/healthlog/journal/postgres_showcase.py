"""The PostgreSQL adapter's showcase (points and records under their layers), and its reads.

``write`` upserts a delivery's points and records in the transaction of its outcome.
``PostgresReads``, mixed into ``PostgresJournal``, holds the port's reads: the
deliveries listing, the summary, the exports and the fingerprint. Both run in the
adapter's transactions (``postgres.py``), with its retries and its error translation:
nothing here catches a psycopg error.

Times are ``timestamptz``. The port's times that are fixed-width UTC text (a point's
``start`` and ``end``, a record's, an item's ``t``) go in as text, which the server
parses, and come out through ``to_text``: a showcase row reads back exactly as it was
written, and ``fingerprint`` hashes the very rows the SQLite adapter hashes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar

import psycopg
from psycopg.rows import TupleRow

from healthlog.journal import rows
from healthlog.journal.port import StoredPoint, StoredRecord, Summary
from healthlog.journal.rows import to_text
from healthlog.model import Delivery, Item, ParseStatus, Point, Record

T = TypeVar("T")
Conn = psycopg.Connection[TupleRow]

_FETCH = 1000

Layer = tuple[str, datetime, str]  # account, then the layer's version: (received_at, id)

# --- times at the edge ---------------------------------------------------------------------

_FIRST = datetime.min.replace(tzinfo=UTC)
_LAST = datetime.max.replace(tzinfo=UTC)
_SPAN_US = (_LAST - _FIRST) // timedelta(microseconds=1)


def first_at_or_after(prefix: str) -> datetime | None:
    """The first instant whose text sorts at or after ``prefix``; None if none does.

    ``to_text`` is monotonic, so ``start >= first_at_or_after(p)`` holds exactly when
    ``to_text(start) >= p``: the export's text bounds (a prefix such as ``2024-01-31``
    works) become instants the primary key can range over. A binary search over the
    microseconds of years 1-9999: about sixty formattings.
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


def _optional_text(at: datetime | None) -> str | None:
    return None if at is None else to_text(at)


DIALECT = rows.Dialect(
    mark="%s",
    uncovered_has="%s = ANY (uncovered)",
    # the start column is a time: a text bound becomes the instant it stands for
    start_bound=first_at_or_after,
    # psycopg returns timestamptz as aware datetimes, text[] and jsonb as Python lists
    instant=lambda value: value,
    listed=lambda value: value,
    nulls_first=" NULLS FIRST",  # PostgreSQL puts them last by default
)

# --- SQL (named, fixed fragments; every value is a bound parameter) ----------------------

# Points, records and items go in by COPY into the session's temporary tables, then one
# upsert each from there: for 100k points it took 0.7-1.4 s against 2-4 s for
# executemany (pipelined) and 1.3-2 s for an INSERT from unnest(arrays); for 100 points
# all three take ~5 ms. ``n`` is the position in the delivery, so the last of two
# entries with one key wins, as row-by-row upserts would have it.
_INCOMING = """
CREATE TEMPORARY TABLE IF NOT EXISTS incoming_points (
    n integer NOT NULL,
    metric text COLLATE "C" NOT NULL,
    field text COLLATE "C" NOT NULL,
    source text COLLATE "C" NOT NULL,
    start timestamptz NOT NULL,
    utc_offset integer,
    "end" timestamptz,
    qty double precision,
    text text,
    unit text NOT NULL,
    extra text
) ON COMMIT DELETE ROWS;
CREATE TEMPORARY TABLE IF NOT EXISTS incoming_records (
    n integer NOT NULL,
    section text COLLATE "C" NOT NULL,
    identity text COLLATE "C" NOT NULL,
    start timestamptz,
    "end" timestamptz,
    utc_offset integer,
    name text,
    source text,
    body text NOT NULL
) ON COMMIT DELETE ROWS;
CREATE TEMPORARY TABLE IF NOT EXISTS incoming_items (
    n integer NOT NULL,
    section text COLLATE "C" NOT NULL,
    identity text COLLATE "C" NOT NULL,
    series text COLLATE "C" NOT NULL,
    seq integer NOT NULL,
    t timestamptz,
    qty double precision,
    lat double precision,
    lon double precision,
    alt double precision,
    unit text,
    extra text
) ON COMMIT DELETE ROWS"""

_COPY_POINTS = (
    'COPY incoming_points (n, metric, field, source, start, utc_offset, "end", qty, text,'
    " unit, extra) FROM STDIN"
)

# The layer guard: a stored point is overwritten only by a layer that is not older, so
# the newest layer wins whatever order deliveries are folded in, and refolding the same
# delivery rewrites the same values. One statement may not update a row twice, so a key
# the delivery carries twice keeps its last point (as row-by-row upserts would); the
# sort also takes the rows' locks in key order, so two folds of overlapping deliveries
# queue behind each other instead of deadlocking.
_UPSERT_POINTS = """
INSERT INTO points (account_id, metric, field, source, start, utc_offset, "end", qty, text,
                    unit, extra, layer_received_at, layer_id)
SELECT DISTINCT ON (i.metric, i.start, i.field, i.source)
       %s, i.metric, i.field, i.source, i.start, i.utc_offset, i."end", i.qty, i.text,
       i.unit, i.extra, %s, %s
FROM incoming_points AS i
ORDER BY i.metric, i.start, i.field, i.source, i.n DESC
ON CONFLICT (account_id, metric, start, field, source) DO UPDATE SET
    utc_offset = excluded.utc_offset,
    "end" = excluded."end",
    qty = excluded.qty,
    text = excluded.text,
    unit = excluded.unit,
    extra = excluded.extra,
    layer_received_at = excluded.layer_received_at,
    layer_id = excluded.layer_id
WHERE (excluded.layer_received_at, excluded.layer_id)
      >= (points.layer_received_at, points.layer_id)"""

# Records: the same layer guard on the record row (its body); its series are guarded one
# by one through record_series (see 0004_records.sql).
_COPY_RECORDS = (
    'COPY incoming_records (n, section, identity, start, "end", utc_offset, name, source,'
    " body) FROM STDIN"
)

_UPSERT_RECORDS = """
INSERT INTO records (account_id, section, identity, start, "end", utc_offset, name, source,
                     body, layer_received_at, layer_id)
SELECT DISTINCT ON (i.section, i.identity)
       %s, i.section, i.identity, i.start, i."end", i.utc_offset, i.name, i.source, i.body,
       %s, %s
FROM incoming_records AS i
ORDER BY i.section, i.identity, i.n DESC
ON CONFLICT (account_id, section, identity) DO UPDATE SET
    start = excluded.start,
    "end" = excluded."end",
    utc_offset = excluded.utc_offset,
    name = excluded.name,
    source = excluded.source,
    body = excluded.body,
    layer_received_at = excluded.layer_received_at,
    layer_id = excluded.layer_id
WHERE (excluded.layer_received_at, excluded.layer_id)
      >= (records.layer_received_at, records.layer_id)"""

_COPY_ITEMS = (
    "COPY incoming_items (n, section, identity, series, seq, t, qty, lat, lon, alt, unit,"
    " extra) FROM STDIN"
)

# A series the delivery carries passes to its layer unless a newer layer holds it; the
# series this layer won lose their stored items. (The upsert locks each series row, also
# where the guard refuses it, so two writers of one series take turns.)
_CLAIM_SERIES = """
WITH won AS (
    INSERT INTO record_series (account_id, section, identity, series, layer_received_at,
                               layer_id)
    SELECT DISTINCT ON (i.section, i.identity, i.series)
           %(account)s, i.section, i.identity, i.series, %(at)s, %(id)s
    FROM incoming_items AS i
    ORDER BY i.section, i.identity, i.series
    ON CONFLICT (account_id, section, identity, series) DO UPDATE SET
        layer_received_at = excluded.layer_received_at,
        layer_id = excluded.layer_id
    WHERE (excluded.layer_received_at, excluded.layer_id)
          >= (record_series.layer_received_at, record_series.layer_id)
    RETURNING section, identity, series
)
DELETE FROM record_items AS r
USING won
WHERE r.account_id = %(account)s
  AND (r.section, r.identity, r.series) = (won.section, won.identity, won.series)"""

# ... and get this delivery's items for them: those of the last record that carries
# the series (a record twice in one delivery), into the series this layer now holds.
_INSERT_ITEMS = """
INSERT INTO record_items (account_id, section, identity, series, seq, t, qty, lat, lon, alt,
                          unit, extra)
SELECT s.account_id, i.section, i.identity, i.series, i.seq, i.t, i.qty, i.lat, i.lon,
       i.alt, i.unit, i.extra
FROM incoming_items AS i
JOIN (SELECT section, identity, series, max(n) AS n
      FROM incoming_items GROUP BY section, identity, series) AS last
  USING (section, identity, series, n)
JOIN record_series AS s
  ON s.account_id = %(account)s
 AND (s.section, s.identity, s.series) = (i.section, i.identity, i.series)
 AND (s.layer_received_at, s.layer_id) = (%(at)s, %(id)s)
ORDER BY i.section, i.identity, i.series, i.seq"""

# the items of a page of records, in one statement
_ITEMS_OF = f"""
SELECT account_id, section, identity, {rows.ITEM_COLUMNS}
FROM record_items
JOIN unnest(%s::text[], %s::text[], %s::text[]) AS k (account_id, section, identity)
  USING (account_id, section, identity)
ORDER BY account_id, section, identity, series, seq"""


# --- writing -------------------------------------------------------------------------------


def write(conn: Conn, layer: Layer, points: Sequence[Point], records: Sequence[Record]) -> None:
    """Upsert a delivery's points and records under its layer, in the caller's transaction."""
    if not (points or records):
        return
    conn.execute(_INCOMING)
    if points:
        _upsert_points(conn, points, layer)
    if records:
        _upsert_records(conn, records, layer)


def _upsert_points(conn: Conn, points: Sequence[Point], layer: Layer) -> None:
    values = rows.POINT_VALUES
    with conn.cursor() as cursor, cursor.copy(_COPY_POINTS) as copy:
        for n, point in enumerate(points):
            copy.write_row((n, *values(point)))
    conn.execute(_UPSERT_POINTS, layer)


def _upsert_records(conn: Conn, records: Sequence[Record], layer: Layer) -> None:
    """Upsert each record under the layer guard; replace each series it carries if newer.

    A series the record does not carry (absent, null or empty) is left as it is: it is
    inherited from the older layer that carried it (SPEC §5).
    """
    record_values, item_values = rows.RECORD_VALUES, rows.ITEM_VALUES
    with conn.cursor() as cursor:
        with cursor.copy(_COPY_RECORDS) as copy:
            for n, record in enumerate(records):
                copy.write_row((n, *record_values(record)))
        with cursor.copy(_COPY_ITEMS) as copy:
            for n, record in enumerate(records):
                head = (n, record.section, record.identity)
                for item in record.items:
                    copy.write_row((*head, *item_values(item)))
    conn.execute(_UPSERT_RECORDS, layer)
    if any(record.items for record in records):
        named = {"account": layer[0], "at": layer[1], "id": layer[2]}
        conn.execute(_CLAIM_SERIES, named)
        conn.execute(_INSERT_ITEMS, named)


# --- reading -------------------------------------------------------------------------------


class _Connected(Protocol):
    """What the reads need of the adapter they are mixed into (``PostgresJournal``)."""

    def _transaction(self, work: Callable[[Conn], T], *, snapshot: bool = False) -> T:
        """Run ``work`` in one transaction, with the adapter's retries."""

    def _stream(self, read: Callable[[Conn], Iterator[T]]) -> Iterator[T]:
        """Yield what ``read`` yields, in one transaction on one pooled connection."""


class PostgresReads:
    """The port's reads on PostgreSQL (mixed into PostgresJournal).

    The exports and the fingerprint read through server-side cursors in one transaction,
    and ask for the items of a page of records at once: each statement is a round trip.
    """

    def deliveries(
        self: _Connected,
        *,
        status: ParseStatus | None = None,
        uncovered_key: str | None = None,
        account_id: str | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[Delivery]:
        sql, params = rows.deliveries_query(
            DIALECT,
            status=status,
            uncovered_key=uncovered_key,
            account_id=account_id,
            limit=limit,
            newest_first=newest_first,
        )
        found = self._transaction(lambda conn: conn.execute(sql, params).fetchall())
        return [rows.delivery(row, DIALECT) for row in found]

    def summary(self: _Connected, account_id: str | None = None) -> Summary:
        where, also, params = rows.account_filter(DIALECT, account_id)

        def one(conn: Conn, sql: str) -> tuple[Any, ...]:
            row = conn.execute(sql, params).fetchone()
            assert row is not None  # an aggregate without GROUP BY always has a row
            return row

        def work(conn: Conn) -> Summary:
            # the queue from its partial index, the settled rows from theirs (0001)
            pending, oldest = one(
                conn,
                f"SELECT count(*), min(received_at) FROM deliveries WHERE status = 'pending'{also}",
            )
            counts = {s.value: 0 for s in ParseStatus}
            counts.update(
                conn.execute(
                    "SELECT status, count(*) FROM deliveries"
                    f" WHERE status <> 'pending'{also} GROUP BY status",
                    params,
                ).fetchall()
            )
            counts[ParseStatus.PENDING.value] = pending
            uncovered = conn.execute(
                # DISTINCT: a list that names a key twice still counts one delivery
                "SELECT key, count(DISTINCT deliveries.id)"
                " FROM deliveries, unnest(deliveries.uncovered) AS key"
                f" WHERE deliveries.uncovered <> '{{}}'{also} GROUP BY key",
                params,
            ).fetchall()
            by_section = conn.execute(
                f"SELECT section, count(*) FROM records{where} GROUP BY section", params
            ).fetchall()
            return Summary(
                counts=counts,
                oldest_pending=oldest,
                last_delivery=one(conn, f"SELECT max(received_at) FROM deliveries{where}")[0],
                uncovered=dict(uncovered),
                points=one(conn, f"SELECT count(*) FROM points{where}")[0],
                records=dict(by_section),
            )

        return self._transaction(work, snapshot=True)

    def export_points(
        self: _Connected,
        *,
        account_id: str | None = None,
        metric: str | None = None,
        start_from: str | None = None,
        start_to: str | None = None,
    ) -> Iterator[StoredPoint]:
        equal = {"account_id": account_id, "metric": metric}
        sql, params = rows.export_query(DIALECT, "points", equal, start_from, start_to)

        def read(conn: Conn) -> Iterator[StoredPoint]:
            found = _server_side(conn, "healthlog_export", sql, params, _point_row)
            yield from map(rows.stored_point, found)

        return self._stream(read)

    def export_records(
        self: _Connected,
        *,
        account_id: str | None = None,
        section: str | None = None,
        start_from: str | None = None,
        start_to: str | None = None,
    ) -> Iterator[StoredRecord]:
        equal = {"account_id": account_id, "section": section}
        sql, params = rows.export_query(DIALECT, "records", equal, start_from, start_to)

        def read(conn: Conn) -> Iterator[StoredRecord]:
            # a page of records, then the items of the whole page in one statement
            with conn.cursor(name="healthlog_records") as cursor:
                cursor.execute(sql, params)
                while page := cursor.fetchmany(_FETCH):
                    keys = [list(column) for column in zip(*(row[:3] for row in page), strict=True)]
                    items: dict[tuple[str, str, str], list[Item]] = {}
                    for item in conn.execute(_ITEMS_OF, keys):
                        items.setdefault(item[:3], []).append(_item(item[3:]))
                    for row in page:
                        found = tuple(items.get(row[:3], ()))
                        yield rows.stored_record(_record_row(row), found)

        return self._stream(read)

    def fingerprint(self: _Connected, account_id: str | None = None) -> str:
        where, _, params = rows.account_filter(DIALECT, account_id)
        # the very rows the SQLite adapter hashes, in its order, with times as the
        # port's text: one showcase has one fingerprint on either backend
        tables = list(enumerate(zip(rows.fingerprint_queries(where), _CANONICAL, strict=True)))
        return self._transaction(
            lambda conn: rows.fingerprint(
                _server_side(conn, f"healthlog_fingerprint_{number}", sql, params, canonical)
                for number, (sql, canonical) in tables
            )
        )


def _server_side(
    conn: Conn,
    name: str,
    sql: str,
    params: Sequence[object],
    canonical: Callable[[tuple[Any, ...]], tuple[Any, ...]],
) -> Iterator[tuple[Any, ...]]:
    """The rows of ``sql`` through a server-side cursor, as the port has them.

    Memory stays flat however many rows there are; the cursor closes once they are read.
    """
    with conn.cursor(name=name) as cursor:
        cursor.execute(sql, params)
        while page := cursor.fetchmany(_FETCH):
            yield from map(canonical, page)


# Rows as the port has them: times as its fixed-width text (in rows.*_COLUMNS order).


def _point_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*row[:4], to_text(row[4]), row[5], _optional_text(row[6]), *row[7:11],
            to_text(row[11]), row[12])  # fmt: skip


def _record_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*row[:3], _optional_text(row[3]), _optional_text(row[4]), *row[5:9],
            to_text(row[9]), row[10])  # fmt: skip


def _series_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*row[:4], to_text(row[4]), row[5])


def _item_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return (*row[:5], _optional_text(row[5]), *row[6:])


_CANONICAL = (_point_row, _record_row, _series_row, _item_row)  # fingerprint_queries' order


def _item(row: tuple[Any, ...]) -> Item:
    """An item from its rows.ITEM_COLUMNS."""
    return Item(row[0], row[1], _optional_text(row[2]), *row[3:])
