"""The journal's queue: deliveries in, the fold's claims and its outcomes, retention.

A part of ``SqlJournal`` (``journal/core.py``), the ``Queue`` and ``Retention``
protocols. An outcome's write (``_write_layer``) is one transaction: the delivery's row
under its guard, the showcase's rows through the driver's bulk write, the day tally and
day sums, the extents (``journal/showcase_writes.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson

from healthlog import errors, ids
from healthlog.clock import to_text
from healthlog.journal import rows
from healthlog.journal.base import SqlBase
from healthlog.journal.driver import Connection, Layer, Params
from healthlog.journal.port import (
    BodyRef,
    CountedDay,
)
from healthlog.journal.showcase_writes import (
    IMPORTS,
    DayTally,
    beside_own,
    bounded_keys,
    extents,
    starts_by_series,
    touched_days,
)
from healthlog.model import (
    Cursor,
    Delivery,
    NewDelivery,
    ParseStatus,
    Point,
    Record,
    Step,
)


class QueueSql(SqlBase):
    """Deliveries in, attempts, outcomes and steps, and retention's marks."""

    # --- ingest -----------------------------------------------------------------------------

    def insert_delivery(self, new: NewDelivery) -> bool:
        params = {
            "id": new.id,
            "account_id": new.account_id,
            "received_at": to_text(new.received_at),
            "archive_key": new.archive_key,
            "size": new.size,
            "content_type": new.content_type,
            "headers": orjson.dumps(new.headers).decode(),
        }
        sql = self._sql["insert_delivery"]
        # a missing account is the driver's NoSuchAccount (the foreign key)
        return self._write(lambda conn: conn.execute(sql, params).rowcount == 1)

    # --- the queue --------------------------------------------------------------------------

    def pending_page(self, after: Cursor, limit: int) -> list[Cursor]:
        if limit < 1:
            raise ValueError("limit must be positive")
        params = {"received_at": to_text(after.received_at), "id": after.id, "limit": limit}
        page = self._all("pending_page", params)
        return [Cursor(rows.from_text(at), delivery_id) for at, delivery_id in page]

    def count_pending(self) -> int:
        return int(self._one("count_pending", {})[0])

    def get_delivery(self, delivery_id: str) -> Delivery | None:
        row = self._one("get_delivery", {"id": delivery_id})
        return None if row is None else rows.delivery(row)

    def begin_attempt(self, delivery_id: str) -> int:
        sql = self._sql["begin_attempt"]

        def work(conn: Connection) -> int:
            # all: the statement must be finished before COMMIT
            counted = conn.execute(sql, {"id": delivery_id}).fetchall()
            if not counted:
                raise errors.Conflict("the delivery is not in the journal")
            return int(counted[0][0])

        return self._write(work)

    def keep_counted_days(self, account_id: str, priority: str, days: Sequence[CountedDay]) -> None:
        if not days:
            return
        sql = self._sql["keep_counted_day"]
        rows = [
            {"account_id": account_id, "priority": priority, "metric": d.metric,
             "field": d.field, "day": d.day, "points": d.points, "valued": d.valued,
             "total": d.total, "low": d.least, "high": d.most}
            for d in days
        ]  # fmt: skip

        def keep(conn: Connection) -> None:
            for row in rows:
                conn.execute(sql, row)

        self._write(keep)

    def release_attempt(self, delivery_id: str) -> None:
        sql = self._sql["release_attempt"]
        self._write(lambda conn: conn.execute(sql, {"id": delivery_id}))

    def write_outcome(
        self,
        delivery_id: str,
        *,
        expected: ParseStatus,
        status: ParseStatus,
        uncovered: tuple[str, ...],
        failure: str | None,
        points: Sequence[Point],
        records: Sequence[Record] = (),
        step: Step | None = None,
        repeated: int = 0,
    ) -> None:
        params: dict[str, Any] = {
            "id": delivery_id,
            "expected": expected.value,
            "status": status.value,
            "uncovered": orjson.dumps(bounded_keys(uncovered)).decode(),
            "failure": failure,
            "points": len(points),
            "records": len(records),
            "repeated": repeated,
            "folded_at": to_text(ids.now()),
        }
        statement = "write_outcome"
        if step is not None:
            statement = "write_last_step"
            params.update(
                points=step.points,
                records=step.records,
                repeated=step.repeated,
                after=step.after,
                state=step.state,
            )
        self._write_layer(statement, params, expected, step, points, records)

    def write_step(
        self,
        delivery_id: str,
        *,
        expected: ParseStatus,
        step: Step,
        points: Sequence[Point],
        records: Sequence[Record] = (),
    ) -> None:
        params = {
            "id": delivery_id,
            "expected": expected.value,
            "after": step.after,
            "position": step.position,
            "state": step.state,
            "points": step.points,
            "records": step.records,
            "repeated": step.repeated,
        }
        self._write_layer("write_step", params, expected, step, points, records)

    def beside_own(
        self, account_id: str, delivery_id: str, points: Sequence[Point]
    ) -> tuple[list[Point], list[Point]]:
        def work(conn: Connection) -> tuple[list[Point], list[Point]]:
            return beside_own(conn, self._sql, account_id, delivery_id, points)

        return self._transaction(work, write=False)

    def _write_layer(
        self,
        statement: str,
        params: Params,
        expected: ParseStatus,
        step: Step | None,
        points: Sequence[Point],
        records: Sequence[Record],
    ) -> None:
        """The delivery's row (``statement``, its guard), its points and records, the day
        counts and its extents, in one transaction; Conflict if the guard failed.

        A fold in one step (``step`` None) replaces the delivery's extents; a step adds to
        those of the fold's earlier steps, the first one (after 0) replacing any older.
        """
        sql = self._sql
        delivery_id = params["id"]

        def work(conn: Connection) -> None:
            # the guard and the delivery's row in one statement, which returns the layer
            won = conn.execute(sql[statement], params).fetchall()
            if not won:
                found = conn.execute(sql["delivery_status"], {"id": delivery_id}).fetchone()
                if found is None:
                    raise errors.Conflict("the delivery is not in the journal")
                if found[0] == expected.value:
                    raise errors.Conflict("another fold of this delivery went on meanwhile")
                raise errors.Conflict(
                    f"the delivery is {found[0]}, not {expected.value}; outcome not written"
                )
            account_id, received_at = won[0]
            layer = Layer(account_id, received_at, delivery_id)
            by_series = starts_by_series(points)
            tally = self._tally(conn, layer, points, by_series)
            self._driver.write_showcase(conn, layer, points, records)
            tally.count_after(conn)
            tally.keep_day_sums(conn)
            if step is None or step.after == 0:
                conn.execute(sql["delete_extents"], {"delivery_id": delivery_id})
            extent = sql["insert_extent" if step is None else "merge_extent"]
            found = extents(points, by_series).items()
            for (metric, field, unit, source), (first, last, count) in found:
                conn.execute(
                    extent,
                    {
                        "delivery_id": delivery_id,
                        "metric": metric,
                        "field": field,
                        "unit": unit,
                        "source": source,
                        "account_id": account_id,
                        "received_at": received_at,
                        "first_start": first,
                        "last_start": last,
                        "points": count,
                    },
                )

        self._write(work)

    def _tally(
        self,
        conn: Connection,
        layer: Layer,
        points: Sequence[Point],
        by_series: dict[tuple[str, str, str, str], list[str]] | None = None,
    ) -> DayTally:
        """Count, before the write, what the showcase holds where the points fall."""
        ranges = touched_days(points, by_series)
        params = {**layer._asdict(), **IMPORTS}
        found = conn.execute(self._sql["metric_bars"], params).fetchall() if points else []
        bars = {str(m): bar for m, bar in found}
        tally = DayTally(self._sql, layer, bars, ranges, counted=self._keeps_counted_days())
        tally.count_before(conn)
        return tally

    # --- retention ------------------------------------------------------------------------

    def retention_due(self, before: datetime, after: Cursor, limit: int) -> list[BodyRef]:
        if limit < 1:
            raise ValueError("limit must be positive")
        params = {
            "before": to_text(before),
            "received_at": to_text(after.received_at),
            "id": after.id,
            "limit": limit,
        }
        return [_body_ref(row) for row in self._all("retention_due", params)]

    def mark_bodies_removed(self, delivery_ids: Sequence[str], at: datetime) -> list[str]:
        sql = self._sql["mark_body_removed"]
        when = to_text(at)

        def work(conn: Connection) -> list[str]:
            marked = []
            for delivery_id in delivery_ids:
                if conn.execute(sql, {"id": delivery_id, "at": when}).rowcount == 1:
                    marked.append(delivery_id)
            return marked

        return self._write(work)

    def removed_bodies(
        self, after: Cursor, limit: int, account_id: str | None = None
    ) -> list[BodyRef]:
        if limit < 1:
            raise ValueError("limit must be positive")
        where, params = self._filters(account_id=account_id)
        params.update(received_at=to_text(after.received_at), id=after.id, limit=limit)
        sql = self._sql.render("removed_bodies", **{"and": where})
        return [_body_ref(row) for row in self._fetch(sql, params)]

    def unconfirmed_removals(self, after: Cursor, limit: int) -> list[BodyRef]:
        if limit < 1:
            raise ValueError("limit must be positive")
        params = {"received_at": to_text(after.received_at), "id": after.id, "limit": limit}
        return [_body_ref(row) for row in self._fetch(self._sql["unconfirmed_removals"], params)]

    def confirm_bodies_deleted(self, delivery_ids: Sequence[str], at: datetime) -> None:
        sql = self._sql["confirm_body_deleted"]
        when = to_text(at)

        def work(conn: Connection) -> None:
            for delivery_id in delivery_ids:
                conn.execute(sql, {"id": delivery_id, "at": when})

        self._write(work)

    def count_removed_bodies(self, account_id: str | None = None) -> int:
        where, params = self._filters(account_id=account_id)
        sql = self._sql.render("count_removed_bodies", **{"and": where})
        return int(self._fetch(sql, params)[0][0])


def _body_ref(row: Sequence[Any]) -> BodyRef:
    return BodyRef(row[0], row[1], rows.from_text(row[2]))
