"""Every reply text ingest sends: the one place to review what a person reads.

HAE shows a reply's body in the automation's activity log, so each text is written for
the person reading it there: what happened, what to change in the app, and whether
anything was saved. A 5xx text names a ``ref`` that the server's log line carries too.
"""

from __future__ import annotations

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
WRONG_AUTH_TEXT = (
    "healthlog: the server does not know this access token. In Health Auto Export, check "
    "the Authorization (or X-API-Key) header of this automation: the value must be the "
    "token you were given when your account was created, with no quotes or extra "
    "spaces. A lost token cannot be shown again: create a new one with the healthlog "
    "command on the server."
)
EMPTY_TEXT = (
    "healthlog: the request had no body. Health Auto Export sends the data as a JSON "
    "object: check that this automation's export format is JSON and that its date range "
    "has data, then export again."
)
NOT_OBJECT_TEXT = (
    "healthlog: the body must be a JSON object ({...}) as Health Auto Export sends it, "
    "and this one is not. In this automation, set the export format to JSON (not CSV), "
    "then export again. Nothing was saved."
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


def _amount(n: int) -> str:
    """A size a person reads: ``100 MB``, ``1.5 MB``, ``512 KB``, ``300 bytes``."""
    for unit, scale in (("MB", MB), ("KB", 1024)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"
