"""The journal's reads: deliveries, the status summary, exports, and the showcase's
summaries computed in the database (catalog, buckets, days, day sums, fingerprint).

A part of ``SqlJournal`` (``journal/core.py``), the ``ShowcaseReads`` protocol. Exports
stream in one snapshot (``Driver.streaming``); every other read is one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from datetime import timedelta
from itertools import repeat
from typing import Any, TypeVar

from healthlog import clock
from healthlog.clock import At
from healthlog.journal import rows
from healthlog.journal.base import SqlBase
from healthlog.journal.driver import Connection, Params, Rows
from healthlog.journal.port import (
    BUCKETS,
    Bucket,
    BucketRow,
    CatalogEntry,
    CountedDay,
    DaySum,
    StoredPoint,
    StoredRecord,
    Summary,
)
from healthlog.journal.showcase_writes import IMPORTS, staying
from healthlog.model import (
    Delivery,
    ParseStatus,
)

T = TypeVar("T")


class ShowcaseReadsSql(SqlBase):
    """The showcase's reads and the deliveries' listings, for the read side."""

    # --- reading ----------------------------------------------------------------------------

    def deliveries(
        self,
        *,
        status: ParseStatus | None = None,
        uncovered_key: str | None = None,
        account_id: str | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[Delivery]:
        where, params = self._filters(
            status=None if status is None else status.value, account_id=account_id
        )
        if uncovered_key is not None:
            where += " AND " + self._sql["has_uncovered"]
            params["uncovered_key"] = uncovered_key
        fragments = {"and": where, "order": "DESC" if newest_first else "ASC"}
        if limit is not None:
            if limit < 0:
                raise ValueError("limit must not be negative")
            fragments["limit"] = "LIMIT " + self._sql.param("limit")
            params["limit"] = limit
        sql = self._sql.render("deliveries", **fragments)
        found = self._fetch(sql, params)
        return [rows.delivery(row) for row in found]

    def summary(self, account_id: str | None = None) -> Summary:
        where, params = self._filters(account_id=account_id)
        sql = {
            name: self._sql.render(name, **{"and": where})
            for name in (
                "summary_pending",
                "summary_settled",
                "summary_failures",
                "summary_last",
                "summary_uncovered",
                "summary_points",
                "summary_records",
            )
        }

        def work(conn: Connection) -> Summary:
            pending, oldest = conn.execute(sql["summary_pending"], params).fetchone()
            counts = {s.value: 0 for s in ParseStatus}
            counts.update(conn.execute(sql["summary_settled"], params).fetchall())
            counts[ParseStatus.PENDING.value] = pending
            last = conn.execute(sql["summary_last"], params).fetchone()[0]
            return Summary(
                counts=counts,
                oldest_pending=None if oldest is None else rows.from_text(oldest),
                last_delivery=None if last is None else rows.from_text(last),
                uncovered=dict(conn.execute(sql["summary_uncovered"], params).fetchall()),
                points=conn.execute(sql["summary_points"], params).fetchone()[0],
                records=dict(conn.execute(sql["summary_records"], params).fetchall()),
                failures=dict(conn.execute(sql["summary_failures"], params).fetchall()),
            )

        # one snapshot for every count of the report
        return self._transaction(work, write=False, consistent=True)

    def _export(
        self,
        names: tuple[str, ...],
        alias: str,
        equal: dict[str, str | None],
        start_from: At | None,
        start_to: At | None,
        combine: Callable[..., Iterator[T]],
    ) -> Iterator[T]:
        """Stream the statements ``names`` under an export's filters, in one snapshot.

        ``combine`` turns their row streams (one per statement, in order) into the
        port's values. ``start_from`` is inclusive, ``start_to`` exclusive, both holding
        as they would against the stored UTC ``start`` text.
        """
        filters = self._range_filters(alias, equal, start_from, start_to)
        if filters is None:
            return iter(())
        where, params = filters
        statements = [self._sql.render(name, **{"and": where}) for name in names]
        return self._streamed(statements, params, combine)

    def _range_filters(
        self,
        alias: str,
        equal: dict[str, str | None],
        start_from: At | None,
        start_to: At | None,
    ) -> tuple[str, dict[str, Any]] | None:
        """Equality filters and a half-open start range; None when no start can pass.

        A bound of stored UTC text is compared with ``start``; a ``Wall`` (a time on the
        phone's clock) with each row's local start (the ``local_start`` fragment), inside
        the UTC range it can reach, so the key still ranges over it.
        """
        where, params = self._filters(alias, **equal)
        param = self._sql.param
        low, high = clock.utc_side(start_from, False), clock.utc_side(start_to, True)
        if low is not None:
            lowest = rows.start_bound(low)
            if lowest is None:
                return None  # no stored start sorts at or after it
            where += f" AND {alias}start >= {param('start_from')}"
            params["start_from"] = lowest
        if high is not None:
            highest = rows.start_bound(high)
            if highest is not None:  # else every stored start sorts before it
                where += f" AND {alias}start < {param('start_to')}"
                params["start_to"] = highest
        local = self._sql.render("local_start", a=alias) if alias else self._sql["local_start"]
        if isinstance(start_from, clock.Wall):
            where += f" AND {local} >= {param('local_from')}"
            params["local_from"] = start_from.text
        if isinstance(start_to, clock.Wall):
            where += f" AND {local} < {param('local_to')}"
            params["local_to"] = start_to.text
        return where, params

    def _streamed(
        self, statements: list[str], params: Params, combine: Callable[..., Iterator[T]]
    ) -> Iterator[T]:
        with self._driver.streaming() as stream:
            yield from combine(*(stream(sql, params) for sql in statements))

    def export_points(
        self,
        *,
        account_id: str | None = None,
        metric: str | None = None,
        start_from: At | None = None,
        start_to: At | None = None,
        field: str | None = None,
        source: str | None = None,
        unit: str | None = None,
    ) -> Iterator[StoredPoint]:
        """Showcase rows ordered by (account, metric, start, field, source)."""
        equal = {
            "account_id": account_id,
            "metric": metric,
            "field": field,
            "source": source,
            "unit": unit,
        }
        if metric is not None:
            return self._export(("export_points",), "", equal, start_from, start_to, _stored_points)
        return self._every_metric(equal, start_from, start_to)

    def _every_metric(
        self, equal: dict[str, str | None], start_from: At | None, start_to: At | None
    ) -> Iterator[StoredPoint]:
        with self._driver.streaming() as stream:
            found = self._points_by_metric(stream, "export_points", equal, start_from, start_to)
            try:
                yield from map(rows.stored_point, found)
            finally:
                # an export given up (a closed pipe) ends its cursor here, while its
                # connection is still this stream's, not when the garbage is collected
                found.close()

    def _points_by_metric(
        self,
        stream: Rows,
        name: str,
        equal: dict[str, str | None],
        start_from: At | None = None,
        start_to: At | None = None,
    ) -> Generator[tuple[Any, ...], None, None]:
        """The rows of ``name``, a statement of points in export order, one metric at a
        time: the same rows in the same order as the statement alone gives them.

        One metric's points are one range of ``point_rows``' key, read in its order; a
        whole account's come through the ``points`` view, whose order PostgreSQL can
        only get by sorting them all (a million points: 3.6 s against 2.5 s metric by
        metric). The metrics come from ``series`` (``point_metrics``), in the order of
        the view's own (account_id, metric).
        """
        where, params = self._filters(
            account_id=equal.get("account_id"),
            field=equal.get("field"),
            source=equal.get("source"),
            unit=equal.get("unit"),
        )
        listing = self._sql.render("point_metrics", **{"and": where})
        for account_id, metric in list(stream(listing, params)):
            only = {**equal, "account_id": account_id, "metric": metric}
            filters = self._range_filters("", only, start_from, start_to)
            if filters is None:
                return  # no start can pass: nothing of any metric
            where, params = filters
            yield from stream(self._sql.render(name, **{"and": where}), params)

    def export_records(
        self,
        *,
        account_id: str | None = None,
        section: str | None = None,
        start_from: At | None = None,
        start_to: At | None = None,
        identity: str | None = None,
        with_items: bool = True,
    ) -> Iterator[StoredRecord]:
        """Records with their items, ordered by (account, section, start, identity).

        The records and their items are two statements read side by side in one
        snapshot, both in this order, and merged: memory stays flat however many.
        """
        equal = {"account_id": account_id, "section": section, "identity": identity}
        if not with_items:
            names: tuple[str, ...] = ("export_records_alone",)
            return self._export(names, "r.", equal, start_from, start_to, _bare_records)
        names = ("export_records", "export_record_items")
        return self._export(names, "r.", equal, start_from, start_to, rows.with_items)

    # --- the read side: summaries computed in the database ----------------------------

    def catalog(self, account_id: str) -> list[CatalogEntry]:
        found = self._all("catalog", {"account_id": account_id})
        return [CatalogEntry(*row) for row in found]

    def point_buckets(
        self,
        *,
        account_id: str,
        metric: str,
        field: str,
        bucket: Bucket,
        start_from: At | None = None,
        start_to: At | None = None,
        source: str | None = None,
        unit: str | None = None,
        spread: bool = False,
    ) -> list[BucketRow]:
        if bucket not in BUCKETS:
            raise ValueError(f"no bucket {bucket!r}")
        filters = self._range_filters("", {"source": source, "unit": unit}, start_from, start_to)
        if filters is None:
            return []
        where, params = filters
        params.update(account_id=account_id, metric=metric, field=field)
        fragment = self._sql["bucket_" + bucket]
        if not spread:
            sql = self._sql.render("point_buckets", **{"and": where, "bucket": fragment})
            return [BucketRow(*row) for row in self._fetch(sql, params)]
        # a cumulative field: what stays in one bucket summed here, what spans buckets
        # spread over them (clock.spread), its parts in the range only
        stays = staying(fragment)
        sql = self._sql.render(
            "point_buckets", **{"and": f"{where} AND {stays}", "bucket": fragment}
        )
        found = {str(row[0]): list(row) for row in self._fetch(sql, params)}
        earlier = _earlier(start_from, clock.SPREAD_SPAN)
        wide = self._range_filters("", {"source": source, "unit": unit}, earlier, start_to)
        assert wide is not None  # a wider range than one that holds starts
        span_where, span_params = wide
        span_params.update(account_id=account_id, metric=metric, field=field)
        spanning = self._sql.render(
            "spanning_points", **{"and": span_where, "span": f"NOT {stays}"}
        )
        for start, end, offset, qty in self._fetch(spanning, span_params):
            start_text, end_text = str(start), None if end is None else str(end)
            for name, part, local in clock.spread(start_text, end_text, offset, qty, bucket):
                if not clock.meets(clock.utc_of(local, offset), offset, start_from, start_to):
                    continue  # a part outside the range: the range's neighbour's
                row = found.setdefault(name, [name, 0, None, None, None, None])
                row[1] += 1
                if part is not None:
                    row[5] = part if row[5] is None else row[5] + part
                    row[2] = part if row[2] is None else min(row[2], part)
                    row[4] = part if row[4] is None else max(row[4], part)
                    row[3] = row[5] / row[1]
        return [BucketRow(*found[name]) for name in sorted(found)]

    def metric_days(
        self,
        *,
        account_id: str,
        metric: str | None = None,
        day_from: str | None = None,
        day_to: str | None = None,
    ) -> list[tuple[str, str, int]]:
        return self._days("metric_days", account_id, metric, day_from, day_to)

    def day_sums(
        self, *, account_id: str, metric: str, field: str, day_from: str, day_to: str
    ) -> list[DaySum]:
        params = {
            "account_id": account_id,
            "metric": metric,
            "field": field,
            "day_from": day_from,
            "day_to": day_to,
        }
        found = self._fetch(self._sql["day_sums"], params)
        # both drivers give the columns in DaySum's types already, a row a day, as many as
        # it has fields: each row becomes one as it comes (``_make`` without its length
        # check, a Python frame a row)
        return list(map(tuple.__new__, repeat(DaySum), found))

    def counted_days(
        self,
        *,
        account_id: str,
        metric: str,
        field: str,
        priority: str,
        day_from: str,
        day_to: str,
    ) -> list[CountedDay]:
        params = {
            "account_id": account_id,
            "metric": metric,
            "field": field,
            "priority": priority,
            "day_from": day_from,
            "day_to": day_to,
        }
        found = self._fetch(self._sql["counted_days"], params)
        return [CountedDay(metric, field, *row) for row in found]

    def uncounted_days(
        self, *, account_id: str, priority: str, limit: int
    ) -> list[tuple[str, str, str]]:
        params = {"account_id": account_id, "priority": priority, "limit": limit}
        return [
            (str(m), str(f), str(d)) for m, f, d in self._fetch(self._sql["uncounted_days"], params)
        ]

    def imported_deliveries(self, account_id: str) -> frozenset[str]:
        found = self._fetch(self._sql["imported_deliveries"], {"account_id": account_id, **IMPORTS})
        return frozenset(str(row[0]) for row in found)

    def late_points(
        self,
        *,
        account_id: str,
        metric: str | None = None,
        day_from: str | None = None,
        day_to: str | None = None,
    ) -> list[tuple[str, str, int]]:
        return self._days("late_days", account_id, metric, day_from, day_to)

    def last_data_day(self, account_id: str) -> str | None:
        found = self._fetch(self._sql["last_data_day"], {"account_id": account_id})
        return None if not found or found[0][0] is None else str(found[0][0])

    def _days(
        self,
        statement: str,
        account_id: str,
        metric: str | None,
        day_from: str | None,
        day_to: str | None,
    ) -> list[tuple[str, str, int]]:
        """Rows of point_days, which the fold keeps as it writes: a read of a day a row."""
        where, params = self._filters(metric=metric)
        params["account_id"] = account_id
        if day_from is not None:
            where += f" AND day >= {self._sql.param('day_from')}"
            params["day_from"] = day_from
        if day_to is not None:
            where += f" AND day < {self._sql.param('day_to')}"
            params["day_to"] = day_to
        found = self._fetch(self._sql.render(statement, **{"and": where}), params)
        return [(str(metric_), str(day), int(count)) for metric_, day, count in found]

    def fingerprint(self, account_id: str | None = None) -> str:
        """A hash of the whole showcase (every column of every row, in key order)."""
        where, params = self._filters(account_id=account_id)
        points, *others = rows.FINGERPRINT_STATEMENTS
        queries = [self._sql.render(name, **{"and": where}) for name in others]
        with self._driver.streaming() as stream:
            by_metric = self._points_by_metric(stream, points, {"account_id": account_id})
            try:
                return rows.fingerprint([by_metric, *(stream(sql, params) for sql in queries)])
            finally:
                by_metric.close()


def _stored_points(found: Iterator[tuple[Any, ...]]) -> Iterator[StoredPoint]:
    return map(rows.stored_point, found)


def _bare_records(found: Iterator[tuple[Any, ...]]) -> Iterator[StoredRecord]:
    return (rows.stored_record(row, ()) for row in found)


def _earlier(at: At | None, by: timedelta) -> At | None:
    """A range's low bound moved ``by`` earlier (a ``Wall`` on the phone's clock, or
    stored UTC text); None stays None, and text off the calendar stays as it is."""
    if at is None:
        return None
    if isinstance(at, clock.Wall):
        try:
            return clock.Wall(at.at - by)
        except OverflowError:
            return None
    found = clock.first_at_or_after(at)
    if found is None:
        return at
    try:
        return clock.to_text(found - by)
    except OverflowError:
        return None
