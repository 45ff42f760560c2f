"""The Journal port's values: the rows, sums and notices its methods take and give.

Frozen and plain, with no behaviour beyond a derived property: ``journal.port`` names
them with the protocols (``from healthlog.journal.port import StoredPoint`` is how the
rest of healthlog imports them), and every adapter returns exactly these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, NamedTuple

from healthlog.model import Cursor, ParseStatus, Point, Record

ZERO_CURSOR = Cursor(datetime.fromisoformat("0001-01-01T00:00:00+00:00"), "")


class StoredPoint(NamedTuple):
    """A showcase row: the point, whose account it is, and the layer that won it.

    A NamedTuple, as ``Point`` is: an export makes one a row, a tuple in one C call.
    """

    account_id: str
    point: Point
    delivery_id: str


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A record of the showcase with all its items, whose account it is, and its layer.

    ``delivery_id`` is the layer that won the record's row; each series may have been
    won by another (newer layers replace a series only when they carry it).
    """

    account_id: str
    record: Record
    delivery_id: str


#: the buckets the database sums points up in, on the phone's local clock
Bucket = Literal["minute", "hour", "day", "week", "month"]
BUCKETS: tuple[Bucket, ...] = ("minute", "hour", "day", "week", "month")


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """What the showcase holds of one (metric, field, unit, source) of an account."""

    metric: str
    field: str
    unit: str
    source: str
    points: int  # brought by the deliveries: a point sent twice counts twice
    first: str  # the earliest start, UTC text
    last: str  # the latest start


@dataclass(frozen=True, slots=True)
class BucketRow:
    """One bucket of a metric's field: its local start and its numbers (None: no value).

    ``start`` is local time without an offset: ``YYYY-MM-DDTHH:MM`` for minutes and
    hours, ``YYYY-MM-DD`` for days, weeks (their Monday) and months (their first day).
    """

    start: str
    count: int  # points in the bucket, valued or not
    min: float | None
    avg: float | None
    max: float | None
    sum: float | None


class DaySum(NamedTuple):
    """One day of a metric's field on the phone's clock, as ``point_day_sums`` keeps it.

    A NamedTuple: a read of five years by days makes one per day, and a tuple is built
    from its row in one C call (``tuple.__new__``, ``_make`` without its length check),
    a frozen dataclass field by field.

    ``first`` and ``last``: the day's first and last start (UTC text), so a read knows
    whether its range holds the whole day. ``sources`` and ``imported`` say whether the
    overlap rule could count the day otherwise (several sources; some points, not all,
    from an import of the Health app's export).
    """

    day: str
    points: int
    valued: int  # points with a value
    total: float | None
    low: float | None
    high: float | None
    first: str
    last: str
    sources: int  # 1: one source; 2: more
    imported: int  # points brought by an import of the Health app's export


class CountedDay(NamedTuple):
    """One day of a metric's field as the overlap rule counts it (``counted_days``)."""

    metric: str
    field: str
    day: str  # YYYY-MM-DD on the phone's clock
    points: int
    valued: int
    total: float | None
    least: float | None
    most: float | None


class BodyRef(NamedTuple):
    """A delivery's archived body, as retention pages through them."""

    delivery_id: str
    archive_key: str
    received_at: datetime

    @property
    def cursor(self) -> Cursor:
        return Cursor(self.received_at, self.delivery_id)


@dataclass(frozen=True, slots=True)
class Summary:
    counts: dict[str, int]  # per ParseStatus value, every status present (0 if none)
    oldest_pending: datetime | None
    last_delivery: datetime | None
    uncovered: dict[str, int]  # uncovered key -> number of deliveries carrying it
    points: int  # rows in the showcase
    records: dict[str, int] = field(default_factory=dict)  # section -> records stored
    failures: dict[str, int] = field(default_factory=dict)  # failure class -> failed

    @property
    def backlog(self) -> int:
        return self.counts.get(ParseStatus.PENDING.value, 0)


class StaleToken(NamedTuple):
    """A token an account had before a rotation that requests still come with (a phone
    whose automation keeps the old token): when it was retired, how many requests it
    was refused for, the first and the last of them."""

    retired_at: datetime
    refused: int
    first_refused_at: datetime
    last_refused_at: datetime


class WatchNotice(NamedTuple):
    """A notification target told that a rule holds (``healthlog.ops.watch``), until its
    "recovered" is told: the target's hash (never its URL), the rule's key, the notice's
    title, when it was told (or claimed), and where it stands: ``telling`` (claimed, the
    send not confirmed), ``told``, ``ending`` (its "recovered" claimed, not confirmed)."""

    target: str
    rule_key: str
    subject: str
    told_at: datetime
    state: str = "told"
