"""The SQLite adapter's showcase (points and records under their layers), and its reads.

``write`` upserts a delivery's points and records in the transaction of its outcome.
``SqliteReads``, mixed into ``SqliteJournal``, holds the port's reads: the deliveries
listing, the summary, the exports and the fingerprint. Both run in the adapter's
transactions (``sqlite.py``), with its retries and its error translation: nothing here
catches a sqlite3 error.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar

import orjson

from healthlog.journal import rows
from healthlog.journal.port import StoredPoint, StoredRecord, Summary
from healthlog.model import Delivery, Item, ParseStatus, Point, Record

T = TypeVar("T")

_FETCH = 1000

Layer = tuple[str, str, str]  # account, then the layer's version: (received_at text, id)

DIALECT = rows.Dialect(
    mark="?",
    uncovered_has="EXISTS (SELECT 1 FROM json_each(deliveries.uncovered) WHERE value = ?)",
    # the start column is the port's text: a bound is compared as it is
    start_bound=lambda text: text,
    instant=rows.from_text,
    listed=orjson.loads,  # uncovered and headers are JSON arrays
    nulls_first="",  # SQLite's default
)

# --- SQL (named, fixed fragments; every value is a bound parameter) ----------------------

# The layer guard: a stored point is overwritten only by a layer that is not older, so
# the newest layer wins whatever order deliveries are folded in, and refolding the same
# delivery rewrites the same values. The point's own columns come first so one tuple
# concatenation per point builds the parameters.
_UPSERT_POINT = """
INSERT INTO points (metric, field, source, start, utc_offset, "end", qty, text, unit, extra,
                    account_id, layer_received_at, layer_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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

# Records: the same layer guard on the record row (its body); its series are guarded
# one by one through record_series (see 0004_records.sql).
_UPSERT_RECORD = """
INSERT INTO records (section, identity, start, "end", utc_offset, name, source, body,
                     account_id, layer_received_at, layer_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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

_SERIES_KEY = "account_id = ? AND section = ? AND identity = ? AND series = ?"

_SERIES_LAYER = f"SELECT layer_received_at, layer_id FROM record_series WHERE {_SERIES_KEY}"

_DELETE_SERIES_ITEMS = f"DELETE FROM record_items WHERE {_SERIES_KEY}"

_INSERT_ITEM = """
INSERT INTO record_items (account_id, section, identity, series, seq, t, qty, lat, lon, alt,
                          unit, extra)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""

_UPSERT_SERIES = """
INSERT INTO record_series (account_id, section, identity, series, layer_received_at, layer_id)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (account_id, section, identity, series) DO UPDATE SET
    layer_received_at = excluded.layer_received_at,
    layer_id = excluded.layer_id"""

_ITEMS_OF = (
    f"SELECT {rows.ITEM_COLUMNS} FROM record_items"
    " WHERE account_id = ? AND section = ? AND identity = ? ORDER BY series, seq"
)


# --- writing -------------------------------------------------------------------------------


def write(
    conn: sqlite3.Connection, layer: Layer, points: Sequence[Point], records: Sequence[Record]
) -> None:
    """Upsert a delivery's points and records under its layer, in the caller's transaction."""
    if points:
        point_values = rows.POINT_VALUES
        conn.executemany(_UPSERT_POINT, (point_values(p) + layer for p in points))
    if records:
        _write_records(conn, layer, records)


def _write_records(conn: sqlite3.Connection, layer: Layer, records: Sequence[Record]) -> None:
    """Upsert each record under the layer guard; replace each series it carries if newer.

    A series the record does not carry (absent, null or empty) is left as it is: it is
    inherited from the older layer that carried it (SPEC §5).
    """
    account_id, version = layer[0], layer[1:]
    record_values, item_values = rows.RECORD_VALUES, rows.ITEM_VALUES
    conn.executemany(_UPSERT_RECORD, (record_values(r) + layer for r in records))
    for record in records:
        by_series: dict[str, list[Item]] = {}
        for item in record.items:
            by_series.setdefault(item.series, []).append(item)
        owner = (account_id, record.section, record.identity)
        for series, items in by_series.items():
            key = (*owner, series)
            stored = conn.execute(_SERIES_LAYER, key).fetchone()
            if stored is not None and version < tuple(stored):
                continue  # a newer layer carried this series: an older one changes nothing
            conn.execute(_DELETE_SERIES_ITEMS, key)
            conn.executemany(_INSERT_ITEM, (owner + item_values(i) for i in items))
            conn.execute(_UPSERT_SERIES, key + version)


# --- reading -------------------------------------------------------------------------------


class _Connected(Protocol):
    """What the reads need of the adapter they are mixed into (``SqliteJournal``)."""

    def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in one read transaction, with the adapter's retries."""

    def _stream(self, read: Callable[[sqlite3.Connection], Iterator[T]]) -> Iterator[T]:
        """Yield what ``read`` yields from one pooled connection."""


class SqliteReads:
    """The port's reads on SQLite (mixed into SqliteJournal).

    The exports stream outside a transaction, each statement its own read snapshot, and
    ask for a record's items record by record: in process, a statement costs no round trip.
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
        found = self._read(lambda conn: conn.execute(sql, params).fetchall())
        return [rows.delivery(row, DIALECT) for row in found]

    def summary(self: _Connected, account_id: str | None = None) -> Summary:
        where, also, params = rows.account_filter(DIALECT, account_id)

        def work(conn: sqlite3.Connection) -> Summary:
            counts = {s.value: 0 for s in ParseStatus}
            counts.update(
                conn.execute(
                    f"SELECT status, count(*) FROM deliveries{where} GROUP BY status", params
                ).fetchall()
            )
            oldest = conn.execute(
                f"SELECT min(received_at) FROM deliveries WHERE status = 'pending'{also}", params
            ).fetchone()[0]
            last = conn.execute(
                f"SELECT max(received_at) FROM deliveries{where}", params
            ).fetchone()[0]
            uncovered = conn.execute(
                # DISTINCT: a list that names a key twice still counts one delivery
                "SELECT item.value, count(DISTINCT deliveries.id)"
                " FROM deliveries, json_each(deliveries.uncovered) AS item"
                f" WHERE deliveries.uncovered <> '[]'{also} GROUP BY item.value",
                params,
            ).fetchall()
            points = conn.execute(f"SELECT count(*) FROM points{where}", params).fetchone()[0]
            by_section = conn.execute(
                f"SELECT section, count(*) FROM records{where} GROUP BY section", params
            ).fetchall()
            return Summary(
                counts=counts,
                oldest_pending=None if oldest is None else rows.from_text(oldest),
                last_delivery=None if last is None else rows.from_text(last),
                uncovered=dict(uncovered),
                points=points,
                records=dict(by_section),
            )

        return self._read(work)

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

        def read(conn: sqlite3.Connection) -> Iterator[StoredPoint]:
            cursor = conn.execute(sql, params)
            try:
                while page := cursor.fetchmany(_FETCH):
                    yield from map(rows.stored_point, page)
            finally:
                cursor.close()

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

        def read(conn: sqlite3.Connection) -> Iterator[StoredRecord]:
            cursor = conn.execute(sql, params)
            try:
                while page := cursor.fetchmany(_FETCH):
                    for row in page:
                        found = conn.execute(_ITEMS_OF, row[:3]).fetchall()
                        yield rows.stored_record(row, tuple(Item(*item) for item in found))
            finally:
                cursor.close()

        return self._stream(read)

    def fingerprint(self: _Connected, account_id: str | None = None) -> str:
        where, _, params = rows.account_filter(DIALECT, account_id)
        queries = rows.fingerprint_queries(where)
        return self._read(
            lambda conn: rows.fingerprint(conn.execute(sql, params) for sql in queries)
        )
