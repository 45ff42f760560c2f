"""The Journal port: what healthlog asks of its database, a protocol per kind of caller.

One database holds the accounts, the deliveries (whose ``pending`` rows are the fold's
queue) and the showcase (the folded points, and the records of every other section
with their series). Adapters: SQLite (embedded default) and
PostgreSQL (scale-out). Every adapter passes ``tests/contract/test_journal_contract.py``.

Errors: ``JournalBusy`` when a transaction's retries are spent, ``JournalUnavailable``
when the database cannot be reached, ``Conflict`` when an outcome's expected status no
longer holds. Driver exceptions never cross this port.

The values its methods take and give (``StoredPoint``, ``BucketRow``, ``Summary``, ...) are
defined in ``journal.values`` and named here too: every caller imports the port's names
from this module.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from healthlog.clock import At
from healthlog.journal.guard import Daily, Guard
from healthlog.journal.values import (
    BUCKETS,
    ZERO_CURSOR,
    BodyRef,
    Bucket,
    BucketRow,
    CatalogEntry,
    CountedDay,
    DaySum,
    StaleToken,
    StoredPoint,
    StoredRecord,
    Summary,
    WatchNotice,
)
from healthlog.model import (
    Account,
    Cursor,
    Delivery,
    NewDelivery,
    ParseStatus,
    Point,
    Record,
    Step,
)


class AccountReads(Protocol):
    """The accounts, looked up: what a reader needs to know whose data it reads."""

    def account_by_token_hash(self, token_hash: str) -> Account | None: ...

    def get_account(self, account_id: str) -> Account | None: ...

    def accounts(self) -> list[Account]: ...

    def stale_tokens(self, account_id: str) -> list[StaleToken]:
        """The account's retired tokens that requests still came with, latest first."""


class Accounts(AccountReads, Protocol):
    """The accounts and their tokens, written: ``healthlog account``, ingest's token
    check, the watch's stale tokens."""

    def add_account(
        self,
        name: str,
        token_hash: str,
        *,
        account_id: str | None = None,
        created_at: datetime | None = None,
    ) -> Account:
        """Raises HealthlogError if the name, the token hash or the id is taken.

        A new account gets a fresh id and the current time; ``account_id`` and
        ``created_at`` (aware) keep those of an account moved from another journal.
        """

    def set_token_hash(self, account_id: str, token_hash: str) -> None:
        """Replace the account's token hash: the old token stops finding it at once,
        and is kept as a retired token of the account (``note_refused_token``), in the
        same transaction.

        Raises HealthlogError if there is no such account or another holds this hash.
        """

    def token_hash(self, account_id: str) -> str | None:
        """The account's stored token hash (None if there is no such account)."""

    def set_time_zone(self, account_id: str, time_zone: str) -> None:
        """Set the IANA zone for the account's offset-less times (CSV deliveries).

        Raises HealthlogError if there is no such account. The caller validates the name.
        """

    def set_unit_system(self, account_id: str, unit_system: str) -> None:
        """Set the units the account's figures are shown in (``metric``, ``imperial``).

        Raises HealthlogError if there is no such account. The caller validates the name
        (the database refuses any other).
        """

    def note_refused_token(self, token_hash: str, at: datetime) -> bool:
        """Count a request refused for ``token_hash`` if it is a retired token of an
        account (``set_token_hash`` keeps the one it replaces); False for any other,
        found by a read alone (a stranger's tries take no write lock)."""


class Queue(Protocol):
    """The deliveries as the fold's queue: in (ingest, reconcile), claimed, folded."""

    def keep_counted_days(self, account_id: str, priority: str, days: Sequence[CountedDay]) -> None:
        """Keep ``days`` as the overlap rule counted them for ``priority`` (the fold's
        ``Reads.count_days``), in one transaction; a later write to a day's points
        deletes its row (``counted_days`` gives it no more)."""

    def insert_delivery(self, new: NewDelivery) -> bool:
        """Journal a delivery as ``pending``, retrying on a busy database.

        Returns False (and changes nothing) if a row with this id exists already, so
        reconcile and a retried insert are harmless.
        """

    def fold_lock(self, wait_s: float = 0.0) -> AbstractContextManager[bool]:
        """The journal-wide fold lock: one pass (or replay) at a time, in any process.

        Yields True while it is held; yields False, holding nothing, when another holder
        keeps it for longer than ``wait_s`` seconds. Released when the block ends, and
        by the database or the OS if the holder dies.
        """

    def pending_page(self, after: Cursor, limit: int) -> list[Cursor]:
        """Pending deliveries strictly after ``after`` in (received_at, id) order."""

    def count_pending(self) -> int: ...

    def get_delivery(self, delivery_id: str) -> Delivery | None: ...

    def begin_attempt(self, delivery_id: str) -> int:
        """Count a fold attempt, committed before the fold starts; returns the new count.

        A fold that kills the process leaves the count raised; one that ends in any way
        (an outcome, or a circumstance via ``release_attempt``) lowers it again.
        """

    def release_attempt(self, delivery_id: str) -> None:
        """Undo ``begin_attempt`` for a fold that was stopped by circumstances."""

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
        """Write the points, the records and the outcome in one transaction.

        ``points`` are distinct (``model.distinct_points``: their keys, ``seq`` included,
        are unique); ``repeated`` is how many exact repeats the body held beyond them.
        Each point is upserted under its key with the delivery's (received_at, id) as
        its layer; it overwrites a stored point only if that layer is not newer. Records
        follow the same rule per (account, section, identity) for the record's row, and
        per series for its items: a series the record carries replaces the stored series
        wholly unless a newer layer carried it; a series it does not carry is left as
        stored (inherited). The
        uncovered keys replace the stored list wholly (even with an empty one); the
        attempt count goes back to zero. Raises Conflict, writing nothing, if the
        delivery's status is no longer ``expected``.

        With ``step``, the outcome of a fold in steps, written with its last step: as
        ``write_step`` (the position guard, the extents added to the earlier steps'),
        the delivery's points are ``step.points``, its ``fold_state`` is ``step.state``
        and its position goes back to 0.
        """

    def write_step(
        self,
        delivery_id: str,
        *,
        expected: ParseStatus,
        step: Step,
        points: Sequence[Point],
        records: Sequence[Record] = (),
    ) -> None:
        """Write one step of a fold in steps: its points, its records and its position.

        In one transaction, under the layer rules of ``write_outcome``: the delivery is
        (again) ``pending`` at ``step.position`` with ``step.state`` and ``step.points``,
        and its attempt count is 1 (this fold's, still running). What the step brought
        of each series is added to the delivery's extents (the first step, ``step.after``
        0, forgets those of an earlier fold); point_days counts what this step brings
        first. Raises Conflict, writing nothing, if the delivery's status is no longer
        ``expected`` or its position is no longer ``step.after``. A step's points are
        keyed beside the delivery's own rows first (``beside_own``).
        """

    def beside_own(
        self, account_id: str, delivery_id: str, points: Sequence[Point]
    ) -> tuple[list[Point], list[Point]]:
        """A step's points (distinct among themselves) keyed beside the rows the
        delivery's own layer already holds, so that no step overwrites another's sample.

        The samples of one shared key (metric, field, source, start) may fall into
        different steps of a fold in steps, and each step numbers its own ``seq`` from 0.
        A point that equals an own row of its key (the same end, value, text, unit and
        extra) takes that row's ``seq`` and comes back in the second list: the same
        sample, folded again by a refold, or sent twice in the export. Any other takes
        the first ``seq`` no own row of its key holds, in the first list.
        """


class Watch(Protocol):
    """The watch's notices (docs/operations.md, "The watch")."""

    def watch_notices(self) -> list[WatchNotice]:
        """Every notice told and not ended, by target and rule key."""

    def add_watch_notice(self, notice: WatchNotice) -> bool:
        """Record a notice; False (and nothing changed) if its target and rule have one:
        of two evaluators at once, only the one that added it tells it."""

    def move_watch_notice(self, notice: WatchNotice, *, state: str, at: datetime) -> bool:
        """Move ``notice`` on to ``state`` claimed at ``at``, if it still stands as it was
        read (its state and time); False, and nothing changed, if another evaluator moved
        or ended it first."""

    def delete_watch_notice(self, target: str, rule_key: str) -> bool:
        """End a notice; False if there was none (another evaluator ended it first)."""


class Retention(Protocol):
    """Retention's marks on the archived bodies (docs/operations.md, "Retention")."""

    def retention_due(self, before: datetime, after: Cursor, limit: int) -> list[BodyRef]:
        """Up to ``limit`` bodies retention may remove, strictly after ``after``, in
        (received_at, id) order: ``parsed`` deliveries received before ``before`` whose
        body is not marked removed. Never ``partial``, ``failed`` or ``pending`` ones."""

    def mark_bodies_removed(self, delivery_ids: Sequence[str], at: datetime) -> list[str]:
        """Mark these deliveries' bodies removed at ``at``, in one transaction; return the
        ids marked. A delivery no longer ``parsed`` (a replay changed it), or marked
        already, is left as it is and not returned."""

    def removed_bodies(
        self, after: Cursor, limit: int, account_id: str | None = None
    ) -> list[BodyRef]:
        """Up to ``limit`` deliveries whose body is marked removed, after ``after``."""

    def unconfirmed_removals(self, after: Cursor, limit: int) -> list[BodyRef]:
        """Up to ``limit`` deliveries whose body is marked removed and not confirmed
        deleted (``confirm_bodies_deleted``), after ``after``: what a crash between the
        mark and the delete left, for the next run to delete."""

    def confirm_bodies_deleted(self, delivery_ids: Sequence[str], at: datetime) -> None:
        """Record, in one transaction, that the archive deleted these marked bodies: later
        runs delete them no more. An unmarked or confirmed delivery is left as it is."""

    def count_removed_bodies(self, account_id: str | None = None) -> int:
        """How many deliveries' bodies are marked removed."""


class ShowcaseReads(AccountReads, Protocol):
    """What the read side may do: read the showcase, the deliveries and the accounts,
    and open the SQL tool's guarded session. No method of it writes, so a caller
    given this type (``healthlog.reads``, the MCP server) cannot reach a write."""

    def close(self) -> None: ...

    def schema_version(self) -> int:
        """The newest migration applied (0 for none), read without writing anything."""

    def guarded_session(self, account_id: str, daily: Daily | None = None) -> Guard:
        """The MCP SQL tool's session over the account's views, one of its own that
        cannot write (``healthlog.journal.guard`` says what it allows; the views are the
        dialect's ``guarded_*`` statements). The journal's schema must be this
        healthlog's: an older or newer one is a HealthlogError that says what to do."""

    def get_delivery(self, delivery_id: str) -> Delivery | None: ...

    def deliveries(
        self,
        *,
        status: ParseStatus | None = None,
        uncovered_key: str | None = None,
        account_id: str | None = None,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[Delivery]: ...

    def summary(self, account_id: str | None = None) -> Summary: ...

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
        """Showcase rows ordered by (account, metric, start, field, source).

        ``start_from`` is inclusive and ``start_to`` exclusive, each either compared with
        the UTC ``start`` text (a prefix such as ``2024-01-31`` works) or a
        ``clock.Wall``, compared with each point's start on the phone's clock (its start
        plus its ``utc_offset``; docs/time.md). ``unit``, when given,
        keeps the points stored in that unit (a field sent in two).
        """

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

        Items come ordered by (series, seq). ``start_from``/``start_to`` as for points.
        Without items (``with_items=False``) a listing reads the records' rows alone.
        """

    def catalog(self, account_id: str) -> list[CatalogEntry]:
        """Per (metric, field, unit, source) of the account: points, first and last start.

        ``points`` counts what the deliveries brought (a point sent again counts again):
        read from what each delivery brought, a row per delivery and series, it costs
        the deliveries, not the points.
        """

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
        """A metric's field summed up per bucket of the phone's local time, in order.

        A point's bucket is read on the phone's clock when it was taken: its ``start``
        plus its ``utc_offset`` (UTC when it has none). Bounds and ``unit`` as for
        ``export_points``. With ``spread`` (a cumulative metric), a point whose end is
        in another bucket counts in each bucket it spans its part of its value
        (``clock.spread``), those of the range's buckets only, points that start up to
        ``clock.SPREAD_SPAN`` before the range included.
        """

    def metric_days(
        self,
        *,
        account_id: str,
        metric: str | None = None,
        day_from: str | None = None,
        day_to: str | None = None,
    ) -> list[tuple[str, str, int]]:
        """(metric, local day ``YYYY-MM-DD``, points) for each day a metric has data.

        A point counts once, on the day of the phone's clock its start and offset give,
        from the moment its key enters the showcase. Days in ``[day_from, day_to)``.
        """

    def day_sums(
        self, *, account_id: str, metric: str, field: str, day_from: str, day_to: str
    ) -> list[DaySum]:
        """A metric field's days in [day_from, day_to) (``YYYY-MM-DD``), in day order.

        Kept by the fold as it writes: every day that has points has its row, equal to
        what the day's points sum up to now.
        """

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
        """A field's days in [day_from, day_to) as the fold counted them by the overlap
        rule for ``priority`` (``SourcePriority.key``), in day order: only the days it
        has counted since their sums last changed (``keep_counted_days``)."""

    def uncounted_days(
        self, *, account_id: str, priority: str, limit: int
    ) -> list[tuple[str, str, str]]:
        """(metric, field, day) of at most ``limit`` kept days the overlap rule may count
        otherwise than their sums (several sources, or an import beside other points)
        and that have no counted row for ``priority``."""

    def imported_deliveries(self, account_id: str) -> frozenset[str]:
        """The ids of the account's deliveries that are imports of the Health app's export."""

    def late_points(
        self,
        *,
        account_id: str,
        metric: str | None = None,
        day_from: str | None = None,
        day_to: str | None = None,
    ) -> list[tuple[str, str, int]]:
        """(metric, local day, points) of the points that arrived late.

        A point is late when its start is older than the newest start of its metric
        that the HAE deliveries received before the one that first brought it had
        brought: an export "since the last sync" would not have sent it. An import of
        the Health app's export is never late and raises no bar. A point sent again
        later (a re-sending window, a manual export) is judged by its first arrival only.
        """

    def last_data_day(self, account_id: str) -> str | None:
        """The account's last local day (``YYYY-MM-DD``) with points; None without any."""

    def fingerprint(self, account_id: str | None = None) -> str:
        """A hash of the whole showcase (every column of every row, in key order).

        Points, then records, their series' layers and their items; a showcase without
        records hashes as it did before records existed.
        """


class Journal(Accounts, Queue, Watch, Retention, ShowcaseReads, Protocol):
    """The whole port: every part above, and the schema's migrations."""

    def migrate(self) -> None:
        """Apply the numbered migrations not applied yet."""


#: the port's methods that write (or hold a lock), none of them on ``ShowcaseReads``
WRITES = (
    "migrate",
    "add_account",
    "set_token_hash",
    "set_time_zone",
    "set_unit_system",
    "note_refused_token",
    "insert_delivery",
    "fold_lock",
    "begin_attempt",
    "release_attempt",
    "write_outcome",
    "write_step",
    "add_watch_notice",
    "move_watch_notice",
    "delete_watch_notice",
    "mark_bodies_removed",
    "confirm_bodies_deleted",
    "keep_counted_days",
)

if TYPE_CHECKING:

    def _reads_cannot_write(reads: ShowcaseReads, journal: Journal) -> None:
        """mypy proves here that a caller given ``ShowcaseReads`` cannot reach a write
        (``WRITES``): each ``reads`` line is an error it is told to ignore, and strict
        mypy fails on an ignore that is not needed; the ``journal`` lines say the
        names are the port's."""
        _ = journal.migrate, reads.migrate  # type: ignore[attr-defined]
        _ = journal.add_account, reads.add_account  # type: ignore[attr-defined]
        _ = journal.set_token_hash, reads.set_token_hash  # type: ignore[attr-defined]
        _ = journal.set_time_zone, reads.set_time_zone  # type: ignore[attr-defined]
        _ = journal.set_unit_system, reads.set_unit_system  # type: ignore[attr-defined]
        _ = journal.note_refused_token, reads.note_refused_token  # type: ignore[attr-defined]
        _ = journal.insert_delivery, reads.insert_delivery  # type: ignore[attr-defined]
        _ = journal.fold_lock, reads.fold_lock  # type: ignore[attr-defined]
        _ = journal.begin_attempt, reads.begin_attempt  # type: ignore[attr-defined]
        _ = journal.release_attempt, reads.release_attempt  # type: ignore[attr-defined]
        _ = journal.write_outcome, reads.write_outcome  # type: ignore[attr-defined]
        _ = journal.write_step, reads.write_step  # type: ignore[attr-defined]
        _ = journal.add_watch_notice, reads.add_watch_notice  # type: ignore[attr-defined]
        _ = journal.move_watch_notice, reads.move_watch_notice  # type: ignore[attr-defined]
        _ = journal.delete_watch_notice, reads.delete_watch_notice  # type: ignore[attr-defined]
        _ = journal.mark_bodies_removed, reads.mark_bodies_removed  # type: ignore[attr-defined]
        _ = journal.confirm_bodies_deleted, reads.confirm_bodies_deleted  # type: ignore[attr-defined]
        _ = journal.keep_counted_days, reads.keep_counted_days  # type: ignore[attr-defined]
        # nor an account's token hash
        _ = journal.token_hash, reads.token_hash  # type: ignore[attr-defined]


__all__ = [
    "BUCKETS",
    "WRITES",
    "ZERO_CURSOR",
    "AccountReads",
    "Accounts",
    "BodyRef",
    "Bucket",
    "BucketRow",
    "CatalogEntry",
    "CountedDay",
    "DaySum",
    "Journal",
    "Queue",
    "Retention",
    "ShowcaseReads",
    "StaleToken",
    "StoredPoint",
    "StoredRecord",
    "Summary",
    "Watch",
    "WatchNotice",
]
