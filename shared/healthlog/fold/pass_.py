"""One fold pass: page the pending deliveries by cursor and play each one.

The queue is the journal table: a pass selects ``pending`` rows strictly after a
``(received_at, id)`` cursor, through the partial index, a page at a time. The cursor
only grows, so a delivery left ``pending`` by a circumstance is not picked again in the
same pass, and a pass always ends. Picking up the backlog at start is an ordinary pass.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from healthlog import ids, log
from healthlog.fold.classify import SUSPECT
from healthlog.fold.player import Player
from healthlog.journal.port import ZERO_CURSOR, Journal
from healthlog.model import Tally

logger = logging.getLogger("healthlog.fold")

LAG_THRESHOLD_S = 300.0


@dataclass
class PassReport:
    tally: Tally = field(default_factory=Tally)
    selected: int = 0
    lagging: int = 0
    worst_wait_s: float = 0.0
    #: why the pass ended early: "cancelled", "budget" or "selection_failed"; None if
    #: it reached the end of the queue
    stopped: str | None = None
    duration_s: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            **self.tally.as_dict(),
            "selected": self.selected,
            "lagging": self.lagging,
            "worst_wait_s": round(self.worst_wait_s, 3),
            "stopped": self.stopped,
            "duration_s": round(self.duration_s, 3),
        }


class FoldPass:
    def __init__(
        self,
        journal: Journal,
        player: Player,
        *,
        page_size: int = 100,
        lag_threshold_s: float = LAG_THRESHOLD_S,
        now: Callable[[], datetime] = ids.now,
    ) -> None:
        self._journal = journal
        self._player = player
        self._page_size = page_size
        self._lag_threshold_s = lag_threshold_s
        self._now = now
        self._announced = False
        # the lag WARN is armed only once a pass has seen the queue empty: the backlog
        # found at start is expected to be old, and a pass that failed to select proved
        # nothing (docs/architecture.md, "Observability")
        self._lag_armed = False

    def pass_once(
        self,
        cancel: threading.Event | None = None,
        time_left: Callable[[], float] | None = None,
        margin_s: float = 0.0,
    ) -> PassReport:
        """Run one pass synchronously and return what it did.

        ``cancel`` is checked between deliveries, never during one: a fold in hand
        finishes (or fails) under its own deadline. ``time_left`` (seconds) lets a Lambda
        invocation stop claiming work ``margin_s`` before it would be killed, and bounds
        the writes of every delivery but the pass's first: one that has not written when
        ``time_left()`` reaches 0 is interrupted and stays pending (``WriteInterrupted``:
        the others used the pass's time). The first has the pass's time to itself and
        is bounded by its own deadline only, so a delivery is never deferred for ever.
        """
        started = time.monotonic()
        report = PassReport()
        armed = self._lag_armed
        if not self._announce():
            report.stopped = "selection_failed"
            return report
        cursor = ZERO_CURSOR
        reached_empty = False
        suspects: list[str] = []
        played = 0

        def until() -> float | None:
            """The end of the pass's time, for a delivery the others left some of."""
            if not played or time_left is None:
                return None
            return time.monotonic() + time_left()

        def short_of_time() -> bool:
            """Less of the pass's time left than one delivery's fold needs (its margin)."""
            return time_left is not None and time_left() < margin_s

        def stop() -> bool:
            """Between two steps of a fold in steps (an import): pause it for the budget."""
            if cancel is not None and cancel.is_set():
                return True
            return short_of_time()

        while report.stopped is None and not reached_empty:
            try:
                page = self._journal.pending_page(cursor, self._page_size)
            except Exception as exc:
                log.event(logger, logging.ERROR, "fold.selection_failed", error=type(exc).__name__)
                report.stopped = "selection_failed"
                break
            if not page:
                reached_empty = True
                break
            now = self._now()
            for ref in page:
                report.selected += 1
                wait = (now - ref.received_at).total_seconds()
                if wait > self._lag_threshold_s:
                    report.lagging += 1
                    report.worst_wait_s = max(report.worst_wait_s, wait)
            for ref in page:
                if cancel is not None and cancel.is_set():
                    report.stopped = "cancelled"
                    break
                if short_of_time():
                    report.stopped = "budget"
                    break
                outcome = self._player.play(
                    ref.id, pending_only=True, last_try=False, stop=stop, until=until()
                )
                played += 1
                if outcome.reason == SUSPECT:
                    suspects.append(ref.id)  # counted when its last try ends
                else:
                    report.tally.add(outcome)
                cursor = ref
        # the crash suspects get their last try each on its own, after the backlog: a
        # body that kills the process then takes nothing else down with it
        for delivery_id in suspects:
            if report.stopped is not None or (cancel is not None and cancel.is_set()):
                break
            if short_of_time():
                # the last try is a whole fold: begun without the time for it, the
                # invocation's end could kill it and count one more crash against an
                # innocent body; it stays pending and goes last in the next pass
                report.stopped = "budget"
                break
            log.event(logger, logging.WARNING, "fold.crash_retry", delivery_id=delivery_id)
            report.tally.add(
                self._player.play(delivery_id, pending_only=True, stop=stop, until=until())
            )
            played += 1
        if reached_empty:
            self._lag_armed = True
        if armed and report.lagging:
            log.event(
                logger,
                logging.WARNING,
                "fold.lagging",
                detail="deliveries waited more than five minutes",
                count=report.lagging,
                worst_wait_s=round(report.worst_wait_s, 1),
            )
        report.duration_s = time.monotonic() - started
        level = logging.WARNING if report.stopped == "budget" else logging.INFO
        log.event(logger, level, "fold.pass", **report.as_dict())
        return report

    def _announce(self) -> bool:
        """Before the first pass: the backlog size, once."""
        if self._announced:
            return True
        try:
            backlog = self._journal.count_pending()
        except Exception as exc:
            log.event(logger, logging.ERROR, "fold.selection_failed", error=type(exc).__name__)
            return False
        self._announced = True
        log.event(logger, logging.INFO, "fold.backlog", pending=backlog)
        return True
