"""A process's fold: one pass at a time, and a wake-up during a pass is not lost.

Both the local fold function (woken by ingest, ticked every minute) and the Lambda
handler hold one ``FoldService``. A wake-up that arrives while a pass runs sets a flag;
the running pass then goes round once more, so the delivery that caused the wake-up is
folded without a second pass running beside the first. After a pass that folded
everything, it counts by the overlap rule the days that need it (``count_days``), so
that a read of a year of two sources' steps reads kept days, not every point.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from healthlog import log
from healthlog.archive.port import Archive
from healthlog.config import Settings
from healthlog.fold.pass_ import FoldPass, PassReport
from healthlog.fold.player import Player, PlayOptions
from healthlog.journal.port import Journal

logger = logging.getLogger("healthlog.fold")

#: the most days an account's count takes a pass (about 15 ms a day of two sources'
#: minutes): a year of them is counted over a few passes, each short
COUNT_DAYS = 120
#: the time an account's count may take at most (120 days of two sources' minutes)
COUNT_RESERVE_S = 5.0


def make_player(journal: Journal, archive: Archive, settings: Settings) -> Player:
    options = PlayOptions(
        deadline_s=settings.fold_deadline_s,
        max_attempts=settings.max_fold_attempts,
        step_points=settings.fold_step_points,
        max_expanded=settings.max_import_bytes,
        aside_bytes=settings.fold_reader_process_bytes,
    )
    return Player(journal, archive, options)


class FoldService:
    def __init__(self, journal: Journal, archive: Archive, settings: Settings) -> None:
        # the stores it folds from (also the scheduled reconcile's, in the same function)
        self.journal, self.archive = journal, archive
        self.player = make_player(journal, archive, settings)
        self.pass_ = FoldPass(journal, self.player, page_size=settings.page_size)
        self.priority = settings.priority()
        self._lock = threading.Lock()
        self._again = threading.Event()

    def count_days(
        self,
        limit: int = COUNT_DAYS,
        *,
        time_left: Callable[[], float] | None = None,
        margin_s: float = 0.0,
    ) -> int:
        """Count by the overlap rule the days that need it and keep them (``counted_days``,
        docs/database.md): at most ``limit`` an account a pass, under the fold's lock, so
        no write changes a day between its count and its row; no account begun with less
        than ``COUNT_RESERVE_S`` of ``time_left`` past ``margin_s`` (a Lambda's time: the
        next pass goes on). The number kept."""
        # the read model is imported here, not at the top: a fold's cold start (the
        # Lambda's) needs none of it until a pass has folded everything (76 ms)
        from healthlog.reads import Reads

        kept = 0
        for account in self.journal.accounts():
            if time_left is not None and time_left() - margin_s < COUNT_RESERVE_S:
                break
            found = Reads(self.journal, account, self.priority).count_days(limit)
            self.journal.keep_counted_days(account.id, self.priority.key, found)
            kept += len(found)
        if kept:
            log.event(logger, logging.INFO, "fold.counted_days", days=kept)
        return kept

    def run(
        self,
        cancel: threading.Event | None = None,
        time_left: Callable[[], float] | None = None,
        margin_s: float = 0.0,
        wait_s: float = 0.0,
        budget_s: float | None = None,
    ) -> PassReport | None:
        """Run passes until no wake-up came in meanwhile; None if another pass runs.

        ``budget_s`` stops claiming work that long after the passes start. With
        ``wait_s``, wait that long for a running pass to end and then run one:
        a caller that must see every delivery journalled so far folded (the operator's
        ``healthlog fold``, an end-to-end test) gets a pass that started after them.
        """
        self._again.set()
        if not self._lock.acquire(timeout=wait_s if wait_s > 0 else -1, blocking=wait_s > 0):
            return None  # the running pass sees the flag and goes round again
        try:
            # and one pass at a time across processes (a CLI fold, another server)
            with self.journal.fold_lock(wait_s) as held:
                if not held:
                    return None
                if budget_s is not None:
                    # the budget counts from when this caller's passes start, not its wait
                    deadline = time.monotonic() + budget_s
                    time_left = lambda: deadline - time.monotonic()  # noqa: E731
                report = PassReport()
                while self._again.is_set():
                    self._again.clear()
                    report = self.pass_.pass_once(cancel, time_left, margin_s)
                    if report.stopped is not None:
                        break
                if report.stopped is None:
                    self.count_days(time_left=time_left, margin_s=margin_s)
                return report
        finally:
            self._lock.release()
