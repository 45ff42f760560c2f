"""Ingest: take one delivery from Health Auto Export, or say plainly why not (SPEC §6).

``accept(deps, request) -> Reply`` is the whole contract, free of any web framework;
``functions/ingest/main.py`` only unwraps a functions-framework request or a Lambda
event into an ``IngestRequest`` and shapes the ``Reply``.

In order:

1. the token (``Authorization: Bearer``, ``X-API-Key`` or ``api-key``) is checked
   before a byte of the body is read: 401;
2. a declared ``Content-Length`` over the limit is refused before reading: 413; a
   ``Content-Encoding`` other than gzip: 415;
3. the body is streamed in 64 KiB chunks straight into the archive writer while its
   *shape* is checked: valid UTF-8, first non-blank byte ``{``, last ``}``; a chunked
   body is counted as it streams and cut at the limit. Any failure aborts the writer:
   400 or 413, nothing stored;
4. the archive commit: 503 + Retry-After if the archive is unavailable, nothing
   journalled;
5. the journal insert (``pending``), retried on a busy database: 503 + Retry-After;
6. the wake-up bit, which never blocks and never fails the request;
7. 200 with ``{"id", "received_at", "status": "pending"}``.

gzip: a body sent with ``Content-Encoding: gzip`` is decompressed as it streams, and the
archive keeps the decompressed bytes, the JSON the phone meant: the fold, reconcile and
retention never need to know how a body travelled. The size limit counts what the body
expands to, checked on every 64 KiB of output, so a gzip bomb is cut at the limit (413)
after at most one chunk past it, whatever its ratio. Damaged or cut-short gzip is 400.

Why a shape check and not a parse: the body is never ``json``-loaded here, so ingest's
memory does not grow with the body. Full JSON validity is the fold's business: a body
that passes the shape check but is not JSON (``{ nope }``) is archived, journalled, and
folds to ``failed`` (kind ``unreadable``), where ``healthlog status`` shows it.

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

import codecs
import json
import logging
import re
import time
import traceback
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime

from healthlog import ids, log, tokens
from healthlog.archive import keys
from healthlog.archive.port import Archive
from healthlog.config import MB, Settings
from healthlog.errors import ArchiveUnavailable, JournalBusy, JournalUnavailable
from healthlog.journal.port import Journal
from healthlog.model import Account, NewDelivery, ParseStatus
from healthlog.wake import Waker

logger = logging.getLogger("healthlog.ingest")

CHUNK_BYTES = 64 * 1024
# on top of the adapter's own retries: a busy spell longer than one adapter round
INSERT_ATTEMPTS = 3
INSERT_BACKOFF_S = 0.05
# the headers HAE adds to every request; kept (truncated) beside the delivery
HAE_HEADERS = (
    "automation-name",
    "automation-id",
    "automation-aggregation",
    "automation-period",
    "session-id",
)
DEFAULT_CONTENT_TYPE = "application/json"
TEXT = "text/plain; charset=utf-8"
# JSON's whitespace (RFC 8259): what may surround the object
_JSON_BLANK = b" \t\r\n"
FORM = "multipart/form-data"
# boundary="quoted" or boundary=token (RFC 2046: at most 70 characters)
_BOUNDARY = re.compile(r';\s*boundary\s*=\s*(?:"([^"\r\n]{1,70})"|([^\s;"]{1,70}))', re.I)
_FORM_TAIL_SLACK = 64
# Content-Encoding values (RFC 9110 §8.4.1) ingest takes off; HAE compresses nothing,
# but a client or proxy in between may
_GZIP = frozenset({"gzip", "x-gzip"})
_IDENTITY = frozenset({"", "identity"})


@dataclass(frozen=True, slots=True)
class IngestRequest:
    """One HTTP request, as plain parts.

    ``headers`` may use any case; they are stored lowercased. ``content_length`` is None
    for a chunked body. ``read(n)`` returns at most ``n`` bytes, ``b""`` at the end.
    """

    headers: Mapping[str, str]
    content_length: int | None
    read: Callable[[int], bytes]
    method: str = "POST"

    def __post_init__(self) -> None:
        lowered = {name.lower(): value for name, value in self.headers.items()}
        object.__setattr__(self, "headers", lowered)


@dataclass(frozen=True, slots=True)
class Reply:
    """What the client gets. HAE shows ``body`` in the automation's activity log."""

    status: int
    body: str
    content_type: str = TEXT
    headers: tuple[tuple[str, str], ...] = ()

    def all_headers(self) -> dict[str, str]:
        return {"Content-Type": self.content_type, **dict(self.headers)}


@dataclass(frozen=True, slots=True)
class IngestDeps:
    """Built once per process (cold start) by ``healthlog.wiring.ingest_deps``."""

    journal: Journal
    archive: Archive
    waker: Waker
    settings: Settings


# --- the replies, written for the person reading HAE's activity log -------------------

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


# --- accept ---------------------------------------------------------------------------


class _Rejected(Exception):
    def __init__(self, reason: str, reply: Reply) -> None:
        super().__init__(reason)
        self.reason = reason
        self.reply = reply


@dataclass(slots=True)
class _Note:
    """What the request's log line reports; filled in as the request goes."""

    delivery_id: str
    account_id: str | None = None
    size: int | None = None
    reason: str | None = None


def accept(deps: IngestDeps, request: IngestRequest) -> Reply:
    """Archive and journal one delivery, or reject it; never raises.

    200 only once the body is committed to the archive and its row to the journal;
    any unexpected exception becomes a 503 with no detail in the reply.
    """
    started = time.monotonic()
    received_at = ids.now()
    delivery_id = ids.new_delivery_id(received_at)
    note = _Note(delivery_id)
    try:
        reply = _accept(deps, request, received_at, note)
    except _Rejected as rejected:
        note.reason = rejected.reason
        reply = rejected.reply
    except Exception as exc:
        note.reason = "internal"
        _log_crash(exc, note)
        reply = _retry_later(
            deps.settings, internal_text(deps.settings.retry_after_s, note.delivery_id)
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
    return _retry_later(settings, internal_text(settings.retry_after_s, ref))


def _accept(deps: IngestDeps, request: IngestRequest, received_at: datetime, note: _Note) -> Reply:
    settings = deps.settings
    if request.method.upper() != "POST":
        raise _Rejected("method", Reply(405, METHOD_TEXT, headers=(("Allow", "POST"),)))
    account = _authenticate(deps, request.headers, note)
    note.account_id = account.id

    declared = request.content_length
    if declared is not None and declared > settings.max_body_bytes:
        note.size = declared
        raise _Rejected("too_large", Reply(413, too_large_text(settings.max_body_bytes, declared)))
    if declared == 0:
        raise _Rejected("empty", Reply(400, EMPTY_TEXT))
    decoder = _decoder(request.headers)

    content_type, shape = _content_type(request.headers, settings.header_max_chars)
    key = keys.body_key(account.id, note.delivery_id, content_type)
    size = _archive_body(deps, key, request, note, decoder, shape)

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
    body = {
        "id": new.id,
        "received_at": received_at.isoformat(timespec="microseconds").replace("+00:00", "Z"),
        "status": ParseStatus.PENDING.value,
    }
    return Reply(200, json.dumps(body), content_type="application/json")


def _authenticate(deps: IngestDeps, headers: Mapping[str, str], note: _Note) -> Account:
    token = bearer_token(headers)
    if token is None:
        raise _Rejected(
            "no_token", Reply(401, NO_AUTH_TEXT, headers=(("WWW-Authenticate", "Bearer"),))
        )
    try:
        account = deps.journal.account_by_token_hash(tokens.hash_token(token))
    except (JournalBusy, JournalUnavailable) as exc:
        raise _journal_rejected(deps.settings, exc, note.delivery_id) from None
    if account is None:
        raise _Rejected(
            "bad_token", Reply(401, WRONG_AUTH_TEXT, headers=(("WWW-Authenticate", "Bearer"),))
        )
    return account


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token from the first of ``Authorization: Bearer``, ``X-API-Key``, ``api-key``.

    ``headers`` must have lowercased names (``IngestRequest`` lowercases them).
    """
    authorization = headers.get("authorization", "").strip()
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    for name in ("x-api-key", "api-key"):
        value = headers.get(name, "").strip()
        if value:
            return value
    return None


def _archive_body(
    deps: IngestDeps,
    key: str,
    request: IngestRequest,
    note: _Note,
    decoder: _Decoder,
    shape: _Shape | _FormShape,
) -> int:
    """Stream the (decoded) body into the archive while checking its shape; return its size."""
    settings = deps.settings
    limit = settings.max_body_bytes
    declared = request.content_length
    writer = deps.archive.writer(key)
    committed = False
    size = 0  # stored (decoded) bytes, which the limit counts

    def store(pieces: Iterator[bytes]) -> None:
        nonlocal size
        for piece in pieces:
            size += len(piece)
            note.size = size
            if size > limit:
                # a chunked or compressed body: cut here, never write the piece that
                # went over
                raise _Rejected("too_large", Reply(413, too_large_text(limit, None)))
            shape.feed(piece)
            writer.write(piece)

    try:
        received = 0  # bytes on the wire, which Content-Length counts
        while True:
            want = CHUNK_BYTES if declared is None else min(CHUNK_BYTES, declared - received)
            if want <= 0:
                break
            chunk = _read(request, want)
            if not chunk:
                break
            received += len(chunk)
            if received > limit:
                # compressed input over the limit too (e.g. gzip that expands to nothing)
                raise _Rejected("too_large", Reply(413, too_large_text(limit, None)))
            store(decoder.feed(chunk))
        if declared is not None and received < declared:
            raise _Rejected("incomplete", Reply(400, INCOMPLETE_TEXT))
        store(decoder.finish())
        shape.finish()
        writer.commit()
        committed = True
        return size
    except ArchiveUnavailable:
        text = archive_unavailable_text(settings.retry_after_s, note.delivery_id)
        raise _Rejected("archive_unavailable", _retry_later(settings, text)) from None
    finally:
        if not committed:
            writer.abort()


def _read(request: IngestRequest, n: int) -> bytes:
    try:
        return request.read(n)
    except Exception:
        # the server's reader gave up on the client (a chunked body cut off, a reset):
        # the client's failure, not ours, and nothing of the body is kept
        raise _Rejected("incomplete", Reply(400, INCOMPLETE_TEXT)) from None


class _Decoder:
    """Takes the ``Content-Encoding`` off a body as it streams: none (identity)."""

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        yield chunk

    def finish(self) -> Iterator[bytes]:
        yield from ()


class _Gunzip(_Decoder):
    """gzip, at most ``CHUNK_BYTES`` of output per step: the limit sees a bomb go off."""

    def __init__(self) -> None:
        self._z = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip header and trailer

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        if self._z.eof:
            raise _Rejected("bad_gzip", Reply(400, BAD_GZIP_TEXT))  # bytes after the end
        yield from self._inflate(chunk)

    def finish(self) -> Iterator[bytes]:
        yield from self._inflate(b"")
        if not self._z.eof or self._z.unused_data:
            raise _Rejected("bad_gzip", Reply(400, BAD_GZIP_TEXT))

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        while True:
            try:
                out = self._z.decompress(data, CHUNK_BYTES)
            except zlib.error:
                raise _Rejected("bad_gzip", Reply(400, BAD_GZIP_TEXT)) from None
            if out:
                yield out
            data = self._z.unconsumed_tail
            # a full piece may leave output inside zlib even with no input left
            if not data and (len(out) < CHUNK_BYTES or self._z.eof):
                return


def _decoder(headers: Mapping[str, str]) -> _Decoder:
    encoding = headers.get("content-encoding", "").strip().lower()
    if encoding in _IDENTITY:
        return _Decoder()
    if encoding in _GZIP:
        return _Gunzip()
    raise _Rejected("encoding", Reply(415, ENCODING_TEXT))


class _FormShape:
    """Checks, chunk by chunk, that a body can be a multipart form with this boundary.

    Like the JSON check, it reads no data: the body must be UTF-8 (HAE's CSV files are
    text), open with ``--boundary`` and close with ``--boundary--``.
    """

    def __init__(self, boundary: bytes) -> None:
        self._opening = b"--" + boundary
        self._closing = b"--" + boundary + b"--"
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._head = b""
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        try:
            self._utf8.decode(chunk)
        except UnicodeDecodeError:
            raise _Rejected("not_utf8", Reply(400, NOT_UTF8_TEXT)) from None
        if len(self._head) < len(self._opening):
            self._head = (self._head + chunk).lstrip(_JSON_BLANK)
            if not self._opening.startswith(self._head[: len(self._opening)]):
                raise _Rejected("not_form", Reply(400, NOT_FORM_TEXT))
        # enough of the end to find the closing line behind a few blank bytes
        self._tail = (self._tail + chunk)[-(len(self._closing) + _FORM_TAIL_SLACK) :]

    def finish(self) -> None:
        try:
            self._utf8.decode(b"", final=True)
        except UnicodeDecodeError:
            raise _Rejected("not_utf8", Reply(400, NOT_UTF8_TEXT)) from None
        if not self._head:
            raise _Rejected("empty", Reply(400, EMPTY_TEXT))
        opened = self._head.startswith(self._opening)
        if not opened or not self._tail.rstrip(_JSON_BLANK).endswith(self._closing):
            raise _Rejected("not_form", Reply(400, NOT_FORM_TEXT))


class _Shape:
    """Checks, chunk by chunk, that a body can be a JSON object, without parsing it."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._first: int | None = None
        self._last: int | None = None

    def feed(self, chunk: bytes) -> None:
        try:
            self._utf8.decode(chunk)  # the text is dropped: only validity matters
        except UnicodeDecodeError:
            raise _Rejected("not_utf8", Reply(400, NOT_UTF8_TEXT)) from None
        inner = chunk.strip(_JSON_BLANK)
        if not inner:
            return
        if self._first is None:
            self._first = inner[0]
            if self._first != ord("{"):
                raise _Rejected("not_object", Reply(400, NOT_OBJECT_TEXT))
        self._last = inner[-1]

    def finish(self) -> None:
        try:
            self._utf8.decode(b"", final=True)
        except UnicodeDecodeError:
            raise _Rejected("not_utf8", Reply(400, NOT_UTF8_TEXT)) from None
        if self._first is None:
            raise _Rejected("empty", Reply(400, EMPTY_TEXT))
        if self._last != ord("}"):
            raise _Rejected("not_object", Reply(400, NOT_OBJECT_TEXT))


def _journal(deps: IngestDeps, new: NewDelivery) -> None:
    for attempt in range(1, INSERT_ATTEMPTS + 1):
        try:
            # False means the row exists already: an earlier attempt did commit
            deps.journal.insert_delivery(new)
            return
        except JournalBusy as exc:
            if attempt == INSERT_ATTEMPTS:
                raise _journal_rejected(deps.settings, exc, new.id) from None
            time.sleep(INSERT_BACKOFF_S * attempt)
        except JournalUnavailable as exc:
            raise _journal_rejected(deps.settings, exc, new.id) from None


def _journal_rejected(settings: Settings, exc: Exception, ref: str) -> _Rejected:
    reason = "journal_busy" if isinstance(exc, JournalBusy) else "journal_unavailable"
    text = journal_busy_text(settings.retry_after_s, ref)
    return _Rejected(reason, _retry_later(settings, text))


def _wake(waker: Waker) -> None:
    try:
        waker.wake()
    except Exception as exc:
        # a lost wake-up costs latency only: the fold's schedule finds the row
        log.event(logger, logging.WARNING, "ingest.wake_failed", error=type(exc).__name__)


def _retry_later(settings: Settings, text: str) -> Reply:
    return Reply(503, text, headers=(("Retry-After", str(settings.retry_after_s)),))


def _content_type(headers: Mapping[str, str], limit: int) -> tuple[str, _Shape | _FormShape]:
    """The content type to store, and the shape check for it.

    HAE sends JSON, or CSV as ``multipart/form-data`` (FORMAT.md §1): the form keeps its
    boundary (the fold needs it to split the parts) and is checked as a form; anything
    else is checked as a JSON object.
    """
    raw = headers.get("content-type", "")
    base = raw.split(";", 1)[0].strip().lower()
    if base != FORM:
        return log.truncate(base or DEFAULT_CONTENT_TYPE, limit), _Shape()
    match = _BOUNDARY.search(raw)
    if match is None:
        raise _Rejected("not_form", Reply(400, NOT_FORM_TEXT))
    boundary = match.group(1) or match.group(2)
    return f"{FORM}; boundary={boundary}", _FormShape(boundary.encode("ascii"))


def _hae_headers(headers: Mapping[str, str], limit: int) -> tuple[tuple[str, str], ...]:
    return tuple(
        (name, log.truncate(headers[name], limit)) for name in HAE_HEADERS if name in headers
    )


def _log_crash(exc: Exception, note: _Note) -> None:
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


def _amount(n: int) -> str:
    """A size a person reads: ``100 MB``, ``1.5 MB``, ``512 KB``, ``300 bytes``."""
    for unit, scale in (("MB", MB), ("KB", 1024)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"
