"""The one root exception and its few leaves.

Driver errors (sqlite3, psycopg, botocore) are translated at the adapter with
``raise ... from``; nothing past an adapter sees them. The class docstring is the
default message, and messages never carry health values, source names, tokens or
header values.

Two families matter to the fold (see ``healthlog.fold.classify``):

* ``Circumstance``: the work was not done because of the world around it (a busy
  database, cancellation, an unreachable store). The delivery stays ``pending``.
* everything else raised while folding one delivery: the delivery itself cannot be
  folded. It becomes ``failed``.
"""

from __future__ import annotations


def needs_extra(command: str, extra: str, purpose: str = "") -> str:
    """What to say when an optional extra is not installed: ``healthlog mcp needs the
    extra: pip install 'healthlog[mcp]'`` (``purpose``, if given, after "the extra")."""
    for_what = f" {purpose}" if purpose else ""
    return f"{command} needs the extra{for_what}: pip install 'healthlog[{extra}]'"


#: what the dashboard says (at start, on its chart pages, for plotly.js) without plotly
PLOTLY_MISSING = needs_extra("healthlog dashboard", "dashboard", "for its charts (plotly.js)")


def plotly_missing() -> str | None:
    """``PLOTLY_MISSING`` when the plotly package, which ships plotly.js, cannot be
    imported (installed without the ``dashboard`` extra); None when it can. Here, not in
    the dashboard's package, so that ``healthlog serve``'s banner asks without importing
    Flask."""
    import importlib.util

    try:
        found = importlib.util.find_spec("plotly")
    except (ImportError, ValueError):
        found = None
    return PLOTLY_MISSING if found is None else None


class HealthlogError(Exception):
    """healthlog failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip().splitlines()[0])


class ConfigError(HealthlogError):
    """The configuration is invalid."""


# --- accounts: what the Journal port promises for its account methods -------------------


class AccountError(HealthlogError):
    """The journal refused the change to an account."""


class AccountNameTaken(AccountError):
    """An account with this name exists."""


class TokenTaken(AccountError):
    """An account with this token exists."""


class AccountIdTaken(AccountError):
    """An account with this id exists."""


class AccountNotFound(AccountError):
    """There is no such account."""


# --- circumstances: "not done", never "cannot be done" ------------------------------


class Circumstance(HealthlogError):
    """The work was not done because of circumstances; it will be tried again."""


class JournalBusy(Circumstance):
    """The journal stayed busy after every retry."""


class JournalUnavailable(Circumstance):
    """The journal cannot be reached."""


class ArchiveUnavailable(Circumstance):
    """The archive cannot be reached or is throttling."""


class Cancelled(Circumstance):
    """The work was cancelled from outside."""


class Paused(Circumstance):
    """A fold in steps stopped between two steps (its budget ran out); it goes on later."""


class ReaderDied(Circumstance):
    """The process that read the body for the fold died; counted as a crash of the fold.

    The delivery stays pending with its attempt still counted, as if the fold's own
    process had died (``healthlog.applehealth.aside``).
    """

    crash = True


class WriteInterrupted(Circumstance):
    """A write ran to the end of its time and was rolled back; nothing of it was kept.

    The journal raises it for a write under a bound (``journal.driver.write_bound``).
    As such it is a circumstance: the pass's time ran out (others used it) and the
    delivery stays pending. The fold turns it into ``FoldDeadline`` when the bound was
    the delivery's own deadline (``healthlog.fold.player``).
    """


class NoSuchAccount(Circumstance):
    """The delivery's account does not exist (yet) in this journal."""


class OutcomeWriteFailed(Circumstance):
    """The outcome of a fold could not be written."""


class Conflict(Circumstance):
    """Another writer changed the delivery first; this outcome was not written."""


# --- failures of the delivery itself ---------------------------------------------------


class FoldFailure(HealthlogError):
    """The delivery cannot be folded."""

    kind = "error"

    def __init__(self, message: str | None = None, *, uncovered: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        # the uncovered keys the parser had collected before it failed: ``failed`` with a
        # non-empty list is a legal state (docs/architecture.md, "Delivery statuses")
        self.uncovered = uncovered


class UnreadableBody(FoldFailure):
    """The body is not a JSON object this parser can read."""

    kind = "unreadable"


class BodyMissing(FoldFailure):
    """The delivery's body is not in the archive."""

    kind = "missing_body"


class ValueRefused(FoldFailure):
    """The journal cannot store a value of the delivery (too long, out of range, invalid)."""

    kind = "refused_value"


class FoldDeadline(FoldFailure):
    """The fold did not finish within its own deadline."""

    kind = "deadline"


# --- archive writes --------------------------------------------------------------------


class AlreadyExists(HealthlogError):
    """An object with this key already exists; archived bodies are never overwritten."""


class BodyTooLarge(HealthlogError):
    """The body is larger than the configured limit."""
