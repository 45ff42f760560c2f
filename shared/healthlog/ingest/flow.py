"""The flow of ``accept``: every step in order, the log line, and a reply for each ending.

A 503 after the archive commit (the journal busy or down, or a crash between the two)
leaves the body archived without a row. Ingest never deletes it: the archive's keys are
write-once and only retention deletes, only ``parsed`` bodies. ``healthlog reconcile``
finds the body and journals it from its key alone (account, id, and ``received_at``,
which the UUIDv7 id carries), so even a phone that never retries loses nothing; one that
retries sends a second delivery with a new id, and the layers make the duplicate
harmless (the same points, the same values).

A client that hangs up: once the last byte of the body is read, nothing here reads from
or writes to the client, and neither a WSGI worker nor Lambda cancels a handler whose
client has gone, so the commit and the insert run to the end (no archived body without
its row, beyond the crash case above). A client that hangs up before the whole declared
body arrived gets nothing stored.

Logs: one line per request (``ingest.request``) with the delivery id (also used as the
request's reference in 5xx replies), the account id, status code, size, duration and a
short reason code for rejections; never a token, a header value, a body byte, or an
exception's message.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Mapping
from datetime import datetime

from healthlog import ids, log, tokens
from healthlog.archive import keys
from healthlog.config import Settings
from healthlog.errors import HealthlogError, JournalBusy, JournalUnavailable
from healthlog.ingest import body
from healthlog.ingest.auth import bearer_token, misses_bearer
from healthlog.ingest.request import (
    IngestDeps,
    IngestRequest,
    Note,
    Rejected,
    Reply,
    reject,
    reply_for,
)
from healthlog.ingest.texts import Reason
from healthlog.ingest.wake import Waker
from healthlog.model import Account, NewDelivery, ParseStatus

# the package's name, not this module's: the log lines keep their logger however the
# package is cut into modules
logger = logging.getLogger("healthlog.ingest")

# the headers HAE adds to every request; kept (truncated) beside the delivery
HAE_HEADERS = (
    "automation-name",
    "automation-id",
    "automation-aggregation",
    "automation-period",
    "session-id",
)


def accept(deps: IngestDeps, request: IngestRequest) -> Reply:
    """Archive and journal one delivery, or reject it; never raises.

    200 only once the body is committed to the archive and its row to the journal;
    any unexpected exception becomes a 503 with no detail in the reply.
    """
    started = time.monotonic()
    received_at = ids.now()
    delivery_id = ids.new_delivery_id(received_at)
    note = Note(delivery_id)
    try:
        reply = _accept(deps, request, received_at, note)
    except Rejected as rejected:
        note.reason = rejected.reason
        reply = rejected.reply
    except Exception as exc:
        note.reason = "internal"
        _log_crash(exc, note)
        reply = reply_for(
            "internal", retry_after_s=deps.settings.retry_after_s, ref=note.delivery_id
        )
    level = logging.WARNING if reply.status >= 500 else logging.INFO
    log.event(
        logger,
        level,
        "ingest.request",
        delivery_id=note.delivery_id,
        account_id=note.account_id,
        status=reply.status,
        size=note.size,
        duration_ms=round((time.monotonic() - started) * 1000, 1),
        reason=note.reason,
    )
    return reply


def unavailable(settings: Settings, exc: Exception) -> Reply:
    """The reply when ingest's dependencies cannot be built; logged by type only."""
    ref = ids.new_delivery_id(ids.now())
    log.event(logger, logging.ERROR, "ingest.unavailable", ref=ref, error=type(exc).__name__)
    return reply_for("internal", retry_after_s=settings.retry_after_s, ref=ref)


def _accept(deps: IngestDeps, request: IngestRequest, received_at: datetime, note: Note) -> Reply:
    settings = deps.settings
    if request.method.upper() != "POST":
        raise reject("method")
    account = _authenticate(deps, request.headers, note)
    note.account_id = account.id

    declared = request.content_length
    if declared is not None and declared > settings.max_body_bytes:
        note.size = declared
        raise reject("too_large", limit=settings.max_body_bytes, size=declared)
    if declared == 0:
        raise reject("empty")
    decoder = body.decoder_for(request.headers)

    content_type, shape = body.content_type(request.headers, settings.header_max_chars)
    key = keys.body_key(account.id, note.delivery_id, content_type)
    size = body.archive(deps, key, request, note, decoder, shape)

    new = NewDelivery(
        id=note.delivery_id,
        account_id=account.id,
        received_at=received_at,
        archive_key=key,
        size=size,
        content_type=content_type,
        headers=_hae_headers(request.headers, settings.header_max_chars),
    )
    _journal(deps, new)
    _wake(deps.waker)
    payload = {
        "id": new.id,
        "received_at": received_at.isoformat(timespec="microseconds").replace("+00:00", "Z"),
        "status": ParseStatus.PENDING.value,
    }
    return Reply(200, json.dumps(payload), content_type="application/json")


def _authenticate(deps: IngestDeps, headers: Mapping[str, str], note: Note) -> Account:
    token = bearer_token(headers)
    if token is None:
        if misses_bearer(headers):
            raise reject("not_bearer")
        raise reject("no_token")
    token_hash = tokens.hash_token(token)
    try:
        account = deps.journal.account_by_token_hash(token_hash)
    except (JournalBusy, JournalUnavailable) as exc:
        raise _journal_rejected(deps.settings, exc, note.delivery_id) from None
    if account is None:
        _note_stale(deps, token_hash)
        raise reject("bad_token")
    return account


def _note_stale(deps: IngestDeps, token_hash: str) -> None:
    """Count a refused token that is one an account had before a rotation (the watch's
    stale_token rule tells the person the phone still sends it). The answer is the same
    401 either way, and a journal that fails here changes nothing of it."""
    try:
        deps.journal.note_refused_token(token_hash, ids.now())
    except HealthlogError:
        return


def _journal(deps: IngestDeps, new: NewDelivery) -> None:
    # One call: the adapter retries a busy transaction (bounded, jittered) and raises
    # JournalBusy only once those retries are spent; ingest adds no round of its own, so
    # a busy journal is answered at once with 503 + Retry-After and the phone exports
    # again later. A False return means the row exists already: one of the adapter's
    # tries did commit.
    try:
        deps.journal.insert_delivery(new)
    except (JournalBusy, JournalUnavailable) as exc:
        raise _journal_rejected(deps.settings, exc, new.id) from None


def _journal_rejected(settings: Settings, exc: Exception, ref: str) -> Rejected:
    reason: Reason = "journal_busy" if isinstance(exc, JournalBusy) else "journal_unavailable"
    return reject(reason, retry_after_s=settings.retry_after_s, ref=ref)


def _wake(waker: Waker) -> None:
    try:
        waker.wake()
    except Exception as exc:
        # a lost wake-up costs latency only: the fold's schedule finds the row
        log.event(logger, logging.WARNING, "ingest.wake_failed", error=type(exc).__name__)


def _hae_headers(headers: Mapping[str, str], limit: int) -> tuple[tuple[str, str], ...]:
    return tuple(
        (name, log.truncate(headers[name], limit)) for name in HAE_HEADERS if name in headers
    )


def _log_crash(exc: Exception, note: Note) -> None:
    # where it happened and the exception's type; never its message, which may quote
    # what it choked on
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{frames[-1].name}:{frames[-1].lineno}" if frames else None
    log.event(
        logger,
        logging.ERROR,
        "ingest.crashed",
        delivery_id=note.delivery_id,
        account_id=note.account_id,
        error=type(exc).__name__,
        where=where,
    )
