"""Every reply text ingest sends: the one place to review what a person reads.

HAE shows a reply's body in the automation's activity log, so each text is written for
the person reading it there: what happened, what to change in the app, and whether
anything was saved. A 5xx text names a ``ref`` that the server's log line carries too.

``REFUSALS`` at the end is the one table from a refusal's reason code (the log line's
``reason``) to its status, text and headers; ``healthlog.ingest.request.reject`` builds
every refusal from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from healthlog.config import MB

METHOD_TEXT = (
    "healthlog: this address takes deliveries from Health Auto Export as POST requests "
    "only. Use it as the URL of a REST API automation in the app."
)
NO_AUTH_TEXT = (
    "healthlog: this request has no access token. In Health Auto Export, open this "
    "automation and add a header: key Authorization, value Bearer followed by a space "
    "and your token (or key X-API-Key, value the token alone). Then export again."
)
NOT_BEARER_TEXT = (
    "healthlog: this request's Authorization header is not a token in the form the server "
    "reads. In Health Auto Export, open this automation and set that header's value to "
    "the word Bearer, a space, then your token (or use the key X-API-Key with the token "
    "alone). Then export again."
)
WRONG_AUTH_TEXT = (
    "healthlog: the server does not know this access token. In Health Auto Export, check "
    "the Authorization (or X-API-Key) header of this automation: the value must be the "
    "token you were given when your account was created, with no quotes or extra "
    "spaces. A lost token cannot be shown again: whoever runs the server can give your "
    "account a new one with `healthlog account rotate NAME` (the old one then stops "
    "working); put it in this header and export again."
)
EMPTY_TEXT = (
    "healthlog: the request had no body. Health Auto Export sends the data as a JSON "
    "object: check that this automation's export format is JSON and that its date range "
    "has data, then export again."
)
NOT_OBJECT_TEXT = (
    "healthlog: the body must be a JSON object ({...}) or a CSV export sent as a "
    "multipart form, as Health Auto Export sends them, and this one is neither. In this "
    "automation, set the export format to JSON or CSV, then export again. Nothing was "
    "saved."
)
NOT_FORM_TEXT = (
    "healthlog: the body was sent as a multipart form (CSV export) but is not a whole form"
    " with the boundary its Content-Type names. Export again; if it keeps happening, set"
    " this automation's export format to JSON. Nothing was saved."
)
NOT_UTF8_TEXT = (
    "healthlog: the body must be a JSON object in UTF-8 text, and this one contains "
    "bytes that are not UTF-8. In this automation, set the export format to JSON, then "
    "export again. Nothing was saved."
)
INCOMPLETE_TEXT = (
    "healthlog: the connection ended before the whole body arrived. Nothing was saved; "
    "export again."
)
ENCODING_TEXT = (
    "healthlog: the body is compressed in a way this server does not read (its "
    "Content-Encoding header names something other than gzip). Send it uncompressed or "
    "gzip-compressed. Nothing was saved."
)
BAD_GZIP_TEXT = (
    "healthlog: the body says it is gzip-compressed (Content-Encoding: gzip) but it is "
    "not valid gzip, or it was cut short. Nothing was saved; export again."
)


def too_large_text(limit: int, size: int | None) -> str:
    sent = f"{_amount(size)}" if size is not None else f"more than {_amount(limit)}"
    return (
        f"healthlog: this export is too large ({sent}); the server takes at most "
        f'{_amount(limit)} per request. In Health Auto Export, turn on "Batch Requests" '
        "in this automation so the data is sent in smaller parts (or export a shorter "
        "date range), then export again. Nothing was saved."
    )


def archive_unavailable_text(retry_after_s: int, ref: str) -> str:
    return (
        "healthlog: the server cannot store exports right now (its storage is not "
        "available), so nothing was saved from this request. The data is still on your "
        f"phone: export again in {retry_after_s} seconds or later. (ref {ref})"
    )


def journal_busy_text(retry_after_s: int, ref: str) -> str:
    return (
        "healthlog: the server is too busy to record this export right now, so it was "
        "not accepted. The data is still on your phone: export again in "
        f"{retry_after_s} seconds or later. (ref {ref})"
    )


def internal_text(retry_after_s: int, ref: str) -> str:
    return (
        "healthlog: something went wrong on the server, and this export was not accepted. "
        f"Export again in {retry_after_s} seconds or later; if it keeps happening, the "
        f"server's log has the details under ref {ref}."
    )


# --- the table: reason -> status, text, headers ------------------------------------------

Reason = Literal[
    "method",
    "no_token",
    "not_bearer",
    "bad_token",
    "too_large",
    "empty",
    "encoding",
    "not_form",
    "not_utf8",
    "not_object",
    "incomplete",
    "bad_gzip",
    "archive_unavailable",
    "journal_busy",
    "journal_unavailable",
    "internal",
]


@dataclass(frozen=True, slots=True)
class Refusal:
    """How one reason is answered.

    ``text`` is the reply's text, or the function that writes it from the refusal's
    details (``limit`` and ``size``; ``retry_after_s`` and ``ref``), passed by name.
    ``retry_after`` adds ``Retry-After: <retry_after_s>`` to ``headers``.
    """

    status: int
    text: str | Callable[..., str]
    headers: tuple[tuple[str, str], ...] = ()
    retry_after: bool = False


_BEARER = (("WWW-Authenticate", "Bearer"),)

REFUSALS: Mapping[Reason, Refusal] = {
    "method": Refusal(405, METHOD_TEXT, headers=(("Allow", "POST"),)),
    "no_token": Refusal(401, NO_AUTH_TEXT, headers=_BEARER),
    "not_bearer": Refusal(401, NOT_BEARER_TEXT, headers=_BEARER),
    "bad_token": Refusal(401, WRONG_AUTH_TEXT, headers=_BEARER),
    "too_large": Refusal(413, too_large_text),
    "empty": Refusal(400, EMPTY_TEXT),
    "encoding": Refusal(415, ENCODING_TEXT),
    "not_form": Refusal(400, NOT_FORM_TEXT),
    "not_utf8": Refusal(400, NOT_UTF8_TEXT),
    "not_object": Refusal(400, NOT_OBJECT_TEXT),
    "incomplete": Refusal(400, INCOMPLETE_TEXT),
    "bad_gzip": Refusal(400, BAD_GZIP_TEXT),
    "archive_unavailable": Refusal(503, archive_unavailable_text, retry_after=True),
    "journal_busy": Refusal(503, journal_busy_text, retry_after=True),
    # the phone's reader is told the same as for a busy journal: export again later
    "journal_unavailable": Refusal(503, journal_busy_text, retry_after=True),
    # any exception nobody planned for (and dependencies that cannot be built)
    "internal": Refusal(503, internal_text, retry_after=True),
}


def _amount(n: int) -> str:
    """A size a person reads: ``100 MB``, ``1.5 MB``, ``512 KB``, ``300 bytes``."""
    for unit, scale in (("MB", MB), ("KB", 1024)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"
