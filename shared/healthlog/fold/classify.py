"""The one predicate: is this a circumstance (stay ``pending``) or a failure (``failed``)?

The code that writes an outcome and the code that counts outcomes both ask ``_classify``
(through ``Player``), so the two can never disagree. It is private on purpose: a second
public door would hand out outcomes that skip the uncovered keys (docs/architecture.md,
"Classification").
"""

from __future__ import annotations

from healthlog.errors import Circumstance, FoldFailure
from healthlog.model import OutcomeClass

#: an unexpected exception while folding one delivery: a bug or a body we choke on
EXCEPTION = "exception"
#: folds of this delivery killed the process again and again, its last try alone too
CRASHED = "crashed"
#: folds of this delivery died ``max_attempts`` times: one more try, alone, after the rest
SUSPECT = "crash_suspect"


def _classify(exc: BaseException) -> tuple[OutcomeClass, str]:
    """The outcome class and the reason for an exception raised while folding.

    Circumstances (a busy or unreachable journal, an unreachable archive, cancellation,
    an unknown account, a conflicting writer, a failed outcome write) mean "not done":
    the delivery stays pending. The fold's own deadline is *not* a circumstance: a body
    that did not fit its budget will not fit it next time. Anything else is a property
    of the delivery: failed.

    The deadline bounds the write too, and that distinction holds there: a write
    interrupted at the delivery's own deadline reaches here as ``FoldDeadline``
    (``Player`` turns it so), failed; one interrupted because the *pass's* time ran out
    (others used it), or after waiting for another writer's lock, is a circumstance
    (``WriteInterrupted``, ``JournalBusy``): pending, for the next pass.
    """
    if isinstance(exc, Circumstance):
        return OutcomeClass.DEFERRED, type(exc).__name__
    if isinstance(exc, FoldFailure):
        return OutcomeClass.FAILED, exc.kind
    return OutcomeClass.FAILED, EXCEPTION
