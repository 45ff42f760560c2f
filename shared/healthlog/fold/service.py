"""A process's fold: one pass at a time, and a wake-up during a pass is not lost.

Both the local fold function (woken by ingest, ticked every minute) and the Lambda
handler hold one ``FoldService``. A wake-up that arrives while a pass runs sets a flag;
the running pass then goes round once more, so the delivery that caused the wake-up is
folded without a second pass running beside the first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from healthlog.archive.port import Archive
from healthlog.config import Settings
from healthlog.fold.pass_ import FoldPass, PassReport
from healthlog.fold.player import Player, PlayOptions
from healthlog.journal.port import Journal


def make_player(journal: Journal, archive: Archive, settings: Settings) -> Player:
    options = PlayOptions(
        deadline_s=settings.fold_deadline_s, max_attempts=settings.max_fold_attempts
    )
    return Player(journal, archive, options)


class FoldService:
    def __init__(self, journal: Journal, archive: Archive, settings: Settings) -> None:
        self.player = make_player(journal, archive, settings)
        self.pass_ = FoldPass(journal, self.player, page_size=settings.page_size)
        self._lock = threading.Lock()
        self._again = threading.Event()

    def run(
        self,
        cancel: threading.Event | None = None,
        time_left: Callable[[], float] | None = None,
        margin_s: float = 0.0,
    ) -> PassReport | None:
        """Run passes until no wake-up came in meanwhile; None if another pass runs."""
        self._again.set()
        if not self._lock.acquire(blocking=False):
            return None  # the running pass sees the flag and goes round again
        try:
            report = PassReport()
            while self._again.is_set():
                self._again.clear()
                report = self.pass_.pass_once(cancel, time_left, margin_s)
                if report.stopped is not None:
                    break
            return report
        finally:
            self._lock.release()
