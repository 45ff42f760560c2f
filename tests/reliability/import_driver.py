"""A fold process for the import crash harness: passes until nothing is pending, exit 0.

    python -m tests.reliability.import_driver READY_FILE [POISON_AFTER]

Settings come from the environment (``HEALTHLOG_JOURNAL_URL``, ``..._ARCHIVE_URL``,
``..._FOLD_STEP_POINTS``, ``..._MAX_FOLD_ATTEMPTS``), as for the fold function. The
driver holds the journal's fold lock like a served pass, writes READY_FILE once it
holds it, and runs passes until nothing is pending: the import the harness journalled
folds in steps, and the harness kills this process while it does.

The poison (``POISON_AFTER``, a position): the journal is the real one wrapped by a test
double that kills the process (``os._exit``, no cleanup) the moment the fold is about
to write the step that resumes from that position: a fold that dies at the same step
every time, without progress. The double lives here, in the test's own driver, never
in the product: what is under test is the Player's counting of folds that never ended.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from healthlog.fold.pass_ import FoldPass
from healthlog.fold.service import make_player
from healthlog.journal.port import Journal
from healthlog.model import Step
from healthlog.ops import wiring

from tests.reliability.fold_driver import drain, migrated_journal

POISON_EXIT = 9


class PoisonedJournal:
    """The real journal, but a step resuming from ``at`` kills the process instead."""

    def __init__(self, inner: Journal, at: int) -> None:
        self._inner = inner
        self._at = at

    def write_step(self, delivery_id: str, *, step: Step, **kw: Any) -> None:
        if step.after == self._at:
            os._exit(POISON_EXIT)
        self._inner.write_step(delivery_id, step=step, **kw)

    def write_outcome(self, delivery_id: str, *, step: Step | None = None, **kw: Any) -> None:
        if step is not None and step.after == self._at and kw.get("failure") is None:
            os._exit(POISON_EXIT)
        self._inner.write_outcome(delivery_id, step=step, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def main(argv: list[str]) -> int:
    ready = Path(argv[0])
    settings, journal = migrated_journal()
    folded: Journal = journal
    if len(argv) > 1:
        folded = PoisonedJournal(journal, int(argv[1]))
    player = make_player(folded, wiring.open_archive(settings), settings)
    fold = FoldPass(folded, player, page_size=settings.page_size)
    return drain(journal, fold, ready)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
