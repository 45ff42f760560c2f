"""Retention: remove the archived bodies of old ``parsed`` deliveries.

Only ``parsed`` bodies go: a ``partial`` body waits for a parser that reads what this
one could not, a ``failed`` one for a fix and a replay, a ``pending`` one for its fold.
The journal row stays, with its outcome, and the delivery's layer stays in the showcase:
what the body brought is kept; only the bytes to fold it again are gone.

The order is **mark, delete, confirm**, page by page: the rows are marked in one
transaction (``deliveries.body_removed_at``), then their bodies are deleted, then the
deletes are confirmed in one more (``body_deleted_at``). So the journal never counts on a
body that may be gone: a crash after the mark and before the confirmation leaves marked
rows whose bodies may still be there, which the next run deletes first (``Archive.delete``
of a missing key is no error), and only those: a run's work follows what it removes, not
everything ever removed (on a versioned bucket, each delete of a gone body would add a
delete marker). The other order, delete then mark, would leave a crash's bodies gone
under rows that still say "replay me", and a replay would then fail them as
``missing_body``.

A run holds the fold lock, like ``replay``: no replay reads a body while it is deleted,
and a replay that made a delivery ``partial`` or ``failed`` meanwhile keeps its body
(the mark is guarded by ``status = 'parsed'``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from healthlog import ids, log
from healthlog.archive.port import Archive
from healthlog.clock import to_text
from healthlog.journal.port import ZERO_CURSOR, Journal

logger = logging.getLogger("healthlog.retention")

#: bodies marked (one transaction) and then deleted at a time; a crash leaves at most
#: this many marked with their bodies still present, for the next run to delete
PAGE = 200


@dataclass
class RetentionReport:
    #: bodies received before this instant (UTC) were due
    before: str
    dry_run: bool = False
    #: parsed bodies older than the age found not yet removed (a dry run: would be)
    due: int = 0
    #: of those, marked and deleted by this run
    removed: int = 0
    #: due but no longer parsed when marked (a replay changed them): kept
    kept: int = 0
    #: marked by an earlier run that did not confirm their deletes (a crash between the
    #: mark and the confirmation, or the newest run of a healthlog before migration
    #: 0013): deleted now, which costs nothing where a body is gone.
    #: A dry run counts every body marked removed before.
    removed_before: int = 0

    def as_dict(self) -> dict[str, object]:
        return dict(vars(self))


def retain(
    journal: Journal,
    archive: Archive,
    older_than: timedelta,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
    progress: Callable[[int, int | None], None] | None = None,
) -> RetentionReport:
    """Delete the bodies of ``parsed`` deliveries received more than ``older_than`` ago.

    The caller holds the fold lock. A dry run reads the journal only: it deletes and
    marks nothing. ``progress(done, None)`` is told after each body removed (or found,
    on a dry run).
    """
    now = ids.now() if now is None else now
    before = now - older_than
    report = RetentionReport(before=to_text(before), dry_run=dry_run)
    if dry_run:
        report.removed_before = journal.count_removed_bodies()
    else:
        # first what an interrupted run marked and may not have deleted, a page at a time,
        # each confirmed once deleted
        after = ZERO_CURSOR
        while page := journal.unconfirmed_removals(after, PAGE):
            after = page[-1].cursor
            for ref in page:
                archive.delete(ref.archive_key)
            journal.confirm_bodies_deleted([ref.delivery_id for ref in page], now)
            report.removed_before += len(page)
    after = ZERO_CURSOR
    while page := journal.retention_due(before, after, PAGE):
        after = page[-1].cursor
        report.due += len(page)
        if dry_run:
            if progress is not None:
                progress(report.due, None)
            continue
        marked = set(journal.mark_bodies_removed([ref.delivery_id for ref in page], now))
        report.kept += len(page) - len(marked)
        for ref in page:
            if ref.delivery_id in marked:
                archive.delete(ref.archive_key)
                report.removed += 1
                if progress is not None:
                    progress(report.removed, None)
        journal.confirm_bodies_deleted(
            [ref.delivery_id for ref in page if ref.delivery_id in marked], now
        )
    if report.removed:
        log.event(logger, logging.INFO, "retention.removed", bodies=report.removed)
    return report
