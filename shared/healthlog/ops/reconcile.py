"""Reconcile: journal every archived body that has no journal row.

Ingest archives the body, then inserts the row; a crash (or a busy journal) between the
two leaves a body without a row. Ingest may not delete from the archive (least
privilege), so the body is kept and journalled here as ``pending``: even a phone that
never retries loses nothing. Everything the row needs is in the key (see
``archive.keys``): the account, the id, and through the UUIDv7 id the exact
``received_at``, so the delivery takes its original place in the journal's order.

It also sweeps what killed writers left in the archive (temporary files, open multipart
uploads) once they are older than ``SWEEP_AGE_S``: no writer alive takes that long
(ingest's slowest real upload is minutes), so nothing in flight is removed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from healthlog import log
from healthlog.archive.keys import KINDS, parse_body_key
from healthlog.archive.port import Archive
from healthlog.journal.port import Journal
from healthlog.model import NewDelivery

logger = logging.getLogger("healthlog.reconcile")

CONTENT_TYPES = {kind: content_type for content_type, kind in KINDS.items()}

#: leftovers of interrupted writes older than this are removed
SWEEP_AGE_S = 6 * 3600


@dataclass
class ReconcileReport:
    seen: int = 0
    journalled: int = 0
    present: int = 0
    skipped: int = 0  # not a body key, or an account this journal does not know
    swept: int = 0  # leftovers of interrupted writes removed from the archive

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


def reconcile(
    journal: Journal,
    archive: Archive,
    *,
    sweep_age_s: float | None = SWEEP_AGE_S,
    recent_days: int | None = None,
    today: date | None = None,
    progress: Callable[[int, int | None], None] | None = None,
) -> ReconcileReport:
    """Journal the archived bodies without a row; sweep leftovers older than the age.

    ``sweep_age_s`` None sweeps nothing (in AWS the bucket's lifecycle rule aborts
    incomplete uploads, and the function's role keeps no right to). ``recent_days``
    looks only at the bodies received on the last that many days (UTC, today included),
    by the day in their keys: what a crash leaves is recent, and a daily run then costs
    a day's keys, not the whole archive's. ``progress(seen, None)`` is told after each
    body looked at.
    """
    report = ReconcileReport()
    if sweep_age_s is not None:
        report.swept = archive.sweep(sweep_age_s)
        if report.swept:
            log.event(logger, logging.INFO, "reconcile.swept", leftovers=report.swept)
    known = {account.id for account in journal.accounts()}
    for key in _keys(archive, known, recent_days, today):
        report.seen += 1
        if progress is not None:
            progress(report.seen, None)
        parts = parse_body_key(key)
        if parts is None or parts.account_id not in known:
            report.skipped += 1
            continue
        if journal.get_delivery(parts.delivery_id) is not None:
            report.present += 1
            continue
        inserted = journal.insert_delivery(
            NewDelivery(
                id=parts.delivery_id,
                account_id=parts.account_id,
                received_at=parts.received_at,
                archive_key=key,
                size=archive.size(key),
                content_type=CONTENT_TYPES[parts.kind],
            )
        )
        if inserted:
            report.journalled += 1
            log.event(logger, logging.INFO, "reconcile.journalled", delivery_id=parts.delivery_id)
        else:
            report.present += 1
    return report


def _keys(
    archive: Archive, accounts: set[str], recent_days: int | None, today: date | None
) -> Iterator[str]:
    if recent_days is None:
        yield from archive.keys()
        return
    last = today or datetime.now(UTC).date()
    days = [last - timedelta(days=n) for n in range(recent_days)]
    for account_id in sorted(accounts):
        for day in sorted(days):
            yield from archive.keys(f"{account_id}/{day.isoformat()}/")
