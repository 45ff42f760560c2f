"""The body: streamed into the archive writer, decoded and shape-checked on the way.

The body is streamed in 64 KiB chunks straight into the archive writer while its
*shape* is checked: valid UTF-8, first non-blank byte ``{``, last ``}`` (a CSV export, a
``multipart/form-data`` body, is checked as a whole form instead); a chunked body is
counted as it streams and cut at the limit. Any failure aborts the writer: 400 or 413,
nothing stored. An archive that fails on the way is a 503 + Retry-After.

gzip: a body sent with ``Content-Encoding: gzip`` is decompressed as it streams, and the
archive keeps the decompressed bytes, the JSON the phone meant: the fold, reconcile and
retention never need to know how a body travelled. The size limit counts what the body
expands to, checked on every 64 KiB of output, so a gzip bomb is cut at the limit (413)
after at most one chunk past it, whatever its ratio. Damaged or cut-short gzip is 400.

Why a shape check and not a parse: the body is never ``json``-loaded here, so ingest's
memory does not grow with the body. Full JSON validity is the fold's business: a body
that passes the shape check but is not JSON (``{ nope }``) is archived, journalled, and
folds to ``failed`` (kind ``unreadable``), where ``healthlog status`` shows it.
"""

from __future__ import annotations

import codecs
import re
import zlib
from collections.abc import Iterator, Mapping

from healthlog import log
from healthlog.errors import ArchiveUnavailable
from healthlog.ingest.request import IngestDeps, IngestRequest, Note, reject

CHUNK_BYTES = 64 * 1024
DEFAULT_CONTENT_TYPE = "application/json"
# JSON's whitespace (RFC 8259): what may surround the object
_JSON_BLANK = b" \t\r\n"
FORM = "multipart/form-data"
#: the content types healthlog gives the deliveries it makes itself (keys.EXPORT_ZIP...)
OWN_TYPES = "application/vnd.healthlog."
# boundary="quoted" or boundary=token (RFC 2046: at most 70 characters)
_BOUNDARY = re.compile(r';\s*boundary\s*=\s*(?:"([^"\r\n]{1,70})"|([^\s;"]{1,70}))', re.I)
_FORM_TAIL_SLACK = 64
# Content-Encoding values (RFC 9110 §8.4.1) ingest takes off; HAE compresses nothing,
# but a client or proxy in between may
_GZIP = frozenset({"gzip", "x-gzip"})
_IDENTITY = frozenset({"", "identity"})


def content_type(headers: Mapping[str, str], limit: int) -> tuple[str, _Shape | _FormShape]:
    """The content type to store, and the shape check for it.

    HAE sends JSON, or CSV as ``multipart/form-data`` (docs/hae-format.md, "Requests"):
    the form keeps its boundary (the fold needs it to split the parts) and is checked as a
    form; anything else is checked as a JSON object.
    """
    raw = headers.get("content-type", "")
    base = raw.split(";", 1)[0].strip().lower()
    if base.startswith(OWN_TYPES):
        # healthlog's own types (a Health export) are made by `healthlog import` alone: a
        # phone's body is JSON to the fold whatever it claims, never an export to unpack
        return DEFAULT_CONTENT_TYPE, _Shape()
    if base != FORM:
        return log.truncate(base or DEFAULT_CONTENT_TYPE, limit), _Shape()
    match = _BOUNDARY.search(raw)
    if match is None:
        raise reject("not_form")
    boundary = match.group(1) or match.group(2)
    return f"{FORM}; boundary={boundary}", _FormShape(boundary.encode("ascii"))


def decoder_for(headers: Mapping[str, str]) -> _Decoder:
    """The decoder for the body's ``Content-Encoding``: 415 for one ingest does not read."""
    encoding = headers.get("content-encoding", "").strip().lower()
    if encoding in _IDENTITY:
        return _Decoder()
    if encoding in _GZIP:
        return _Gunzip()
    raise reject("encoding")


def archive(
    deps: IngestDeps,
    key: str,
    request: IngestRequest,
    note: Note,
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
                raise reject("too_large", limit=limit, size=None)
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
                raise reject("too_large", limit=limit, size=None)
            store(decoder.feed(chunk))
        if declared is not None and received < declared:
            raise reject("incomplete")
        store(decoder.finish())
        shape.finish()
        writer.commit()
        committed = True
        return size
    except ArchiveUnavailable:
        raise reject(
            "archive_unavailable", retry_after_s=settings.retry_after_s, ref=note.delivery_id
        ) from None
    finally:
        if not committed:
            writer.abort()


def _read(request: IngestRequest, n: int) -> bytes:
    try:
        return request.read(n)
    except Exception:
        # the server's reader gave up on the client (a chunked body cut off, a reset):
        # the client's failure, not ours, and nothing of the body is kept
        raise reject("incomplete") from None


# --- the decoders ----------------------------------------------------------------------


class _Decoder:
    """Takes the ``Content-Encoding`` off a body as it streams: none (identity)."""

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        yield chunk

    def finish(self) -> Iterator[bytes]:
        yield from ()


class _Gunzip(_Decoder):
    """gzip, at most ``CHUNK_BYTES`` of output per step: the limit sees a bomb go off.

    A body may hold several gzip members one after the other (RFC 1952, 2.2; what
    ``cat a.gz b.gz`` makes): each is inflated in turn and their outputs follow each
    other. Anything after a member that is not another member is a broken stream.
    """

    def __init__(self) -> None:
        self._z = self._member()

    @staticmethod
    def _member() -> zlib._Decompress:
        return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip header and trailer

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        yield from self._inflate(chunk)

    def finish(self) -> Iterator[bytes]:
        yield from self._inflate(b"")
        if not self._z.eof:
            raise reject("bad_gzip")  # cut short inside a member

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        while True:
            if self._z.eof:
                if not data:
                    return
                self._z = self._member()  # the next member starts here
            try:
                out = self._z.decompress(data, CHUNK_BYTES)
            except zlib.error:
                raise reject("bad_gzip") from None
            if out:
                yield out
            if self._z.eof:
                data = self._z.unused_data  # what follows this member, if anything
                continue
            data = self._z.unconsumed_tail
            # a full piece may leave output inside zlib even with no input left
            if not data and len(out) < CHUNK_BYTES:
                return


# --- the shape checks ------------------------------------------------------------------


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
            raise reject("not_utf8") from None
        if len(self._head) < len(self._opening):
            self._head = (self._head + chunk).lstrip(_JSON_BLANK)
            if not self._opening.startswith(self._head[: len(self._opening)]):
                raise reject("not_form")
        # enough of the end to find the closing line behind a few blank bytes
        self._tail = (self._tail + chunk)[-(len(self._closing) + _FORM_TAIL_SLACK) :]

    def finish(self) -> None:
        try:
            self._utf8.decode(b"", final=True)
        except UnicodeDecodeError:
            raise reject("not_utf8") from None
        if not self._head:
            raise reject("empty")
        opened = self._head.startswith(self._opening)
        if not opened or not self._tail.rstrip(_JSON_BLANK).endswith(self._closing):
            raise reject("not_form")


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
            raise reject("not_utf8") from None
        inner = chunk.strip(_JSON_BLANK)
        if not inner:
            return
        if self._first is None:
            self._first = inner[0]
            if self._first != ord("{"):
                raise reject("not_object")
        self._last = inner[-1]

    def finish(self) -> None:
        try:
            self._utf8.decode(b"", final=True)
        except UnicodeDecodeError:
            raise reject("not_utf8") from None
        if self._first is None:
            raise reject("empty")
        if self._last != ord("}"):
            raise reject("not_object")
