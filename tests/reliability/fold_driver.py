"""A fold process for the crash harness: passes until the queue is empty, then exit 0.

    python -m tests.reliability.fold_driver READY_FILE

Settings come from the environment (``HEALTHLOG_JOURNAL_URL``, ``..._ARCHIVE_URL``,
``..._MAX_FOLD_ATTEMPTS``...), as for the fold function. The driver holds the journal's
fold lock like a served pass does, writes READY_FILE once it holds it (so the harness
kills it while it folds, not while Python starts), and runs passes until nothing is
pending.

The poison: the parser is the real one wrapped by a test double that kills the
process (``os._exit``, no cleanup, like a segfault in a native parser) the moment it is
given a body carrying ``POISON``. The double lives here, in the test's own driver,
never in the product: what is under test is the Player's counting of folds that never
ended.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from healthlog import log
from healthlog.config import Settings
from healthlog.fold.pass_ import FoldPass
from healthlog.fold.player import Player, PlayOptions
from healthlog.hae import parse
from healthlog.journal.port import Journal
from healthlog.model import ParseResult
from healthlog.ops import wiring

POISON = b"poison-pill-5b1e0c"
POISON_EXIT = 9
LOCK_NOT_RELEASED_EXIT = 3


def poisoned_parse(body: bytes, **kw: Any) -> ParseResult:
    if POISON in body:
        os._exit(POISON_EXIT)
    return parse(body, **kw)


def migrated_journal() -> tuple[Settings, Journal]:
    """The settings of the environment the harness gave, with logging set up, and their
    journal, migrated."""
    settings = Settings.from_env()
    log.setup(settings.log_level)
    journal = wiring.open_journal(settings)
    journal.migrate()
    return settings, journal


def drain(journal: Journal, fold: FoldPass, ready: Path) -> int:
    """Hold the fold lock, say so in ``ready``, pass until nothing is pending: the exit
    status (``LOCK_NOT_RELEASED_EXIT`` if a killed holder's lock was not dropped)."""
    # a killed holder's lock is dropped by the OS: waiting long here would be a bug
    with journal.fold_lock(wait_s=10) as held:
        if not held:
            return LOCK_NOT_RELEASED_EXIT
        ready.write_text(str(os.getpid()))
        while True:
            report = fold.pass_once()
            if report.stopped is None and journal.count_pending() == 0:
                break
    journal.close()
    return 0


def main(argv: list[str]) -> int:
    ready = Path(argv[0])
    settings, journal = migrated_journal()
    options = PlayOptions(
        deadline_s=settings.fold_deadline_s, max_attempts=settings.max_fold_attempts
    )
    player = Player(journal, wiring.open_archive(settings), options, parse=poisoned_parse)
    fold = FoldPass(journal, player, page_size=settings.page_size)
    return drain(journal, fold, ready)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
