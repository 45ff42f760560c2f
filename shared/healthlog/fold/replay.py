"""Replay: re-fold a chosen set of deliveries through the same Player as the pass."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from healthlog.fold.player import Player
from healthlog.journal.port import Journal
from healthlog.model import ParseStatus, Tally


@dataclass
class ReplayReport:
    tally: Tally = field(default_factory=Tally)
    #: deliveries whose status would change (dry run) or changed
    status_changes: int = 0
    showcase_changed: bool | None = None  # None on a dry run
    dry_run: bool = False
    #: chosen, but not re-folded: retention removed their bodies (their layers stay)
    body_removed: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            **self.tally.as_dict(),
            "selected": self.tally.total,
            "status_changes": self.status_changes,
            "showcase_changed": self.showcase_changed,
            "dry_run": self.dry_run,
            "skipped_body_removed": self.body_removed,
        }


def replay(
    journal: Journal,
    player: Player,
    *,
    status: ParseStatus | None = None,
    uncovered_key: str | None = None,
    account_id: str | None = None,
    failure: str | None = None,
    dry_run: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayReport:
    """Re-fold every matching delivery in (received_at, id) order.

    ``failure`` picks the failed deliveries of one class (``crashed``, ``deadline``...).
    A dry run reads and parses each body and reports what the outcomes would be,
    writing nothing. ``progress(done, total)`` is told after each delivery.

    The deliveries whose bodies retention removed are skipped and counted: there is
    nothing to fold again, their outcome and their layer in the showcase stay as they
    are (never ``missing_body``).
    """
    if failure is not None:
        status = ParseStatus.FAILED
    report = ReplayReport(dry_run=dry_run)
    before = None if dry_run else journal.fingerprint(account_id)
    chosen = journal.deliveries(status=status, uncovered_key=uncovered_key, account_id=account_id)
    if failure is not None:
        chosen = [d for d in chosen if d.failure == failure]
    # each delivery says whether retention removed its body: no lookup of its own
    kept = [d for d in chosen if d.body_removed_at is None]
    report.body_removed = len(chosen) - len(kept)
    chosen = kept
    for done, delivery in enumerate(chosen, start=1):
        outcome = player.play(delivery.id, dry_run=dry_run)
        report.tally.add(outcome)
        if outcome.klass.status is not delivery.status:
            report.status_changes += 1
        if progress is not None:
            progress(done, len(chosen))
    if before is not None:
        report.showcase_changed = journal.fingerprint(account_id) != before
    return report
