"""Ingest: take a delivery from HAE, or say plainly why not (docs/architecture.md, "The contract").

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
5. the journal insert (``pending``): the journal adapter's bounded retries are the only
   ones (ingest adds none); a journal still busy after them, or down: 503 + Retry-After;
6. the wake-up bit, which never blocks and never fails the request;
7. 200 with ``{"id", "received_at", "status": "pending"}``.

The modules, one idea each:

- ``request``: ``IngestRequest``, ``Reply``, ``IngestDeps``, and the ``Rejected`` that
  carries a reply out of any step, made only by ``reject`` from ``texts.REFUSALS``;
- ``flow``: ``accept`` itself, steps 1, 2 and 4 to 7, the log line, the 503s;
- ``auth``: where a request carries its token (``bearer_token``);
- ``body``: step 3, the streaming into the archive writer, the decoders (gzip) and the
  shape checks (a JSON object, a multipart form, UTF-8);
- ``texts``: every reply text, the one place to review what a person reads in HAE, and
  ``REFUSALS``, the one table from a refusal's reason code to its status, text and
  headers.

The names below are the package's interface; import them from ``healthlog.ingest``.
"""

from __future__ import annotations

from healthlog.ingest.auth import bearer_token
from healthlog.ingest.body import CHUNK_BYTES, DEFAULT_CONTENT_TYPE, FORM
from healthlog.ingest.flow import (
    HAE_HEADERS,
    accept,
    logger,
    unavailable,
)
from healthlog.ingest.request import TEXT, IngestDeps, IngestRequest, Reply
from healthlog.ingest.texts import (
    BAD_GZIP_TEXT,
    EMPTY_TEXT,
    ENCODING_TEXT,
    INCOMPLETE_TEXT,
    METHOD_TEXT,
    NO_AUTH_TEXT,
    NOT_FORM_TEXT,
    NOT_OBJECT_TEXT,
    NOT_UTF8_TEXT,
    WRONG_AUTH_TEXT,
    archive_unavailable_text,
    internal_text,
    journal_busy_text,
    too_large_text,
)

__all__ = [
    "BAD_GZIP_TEXT",
    "CHUNK_BYTES",
    "DEFAULT_CONTENT_TYPE",
    "EMPTY_TEXT",
    "ENCODING_TEXT",
    "FORM",
    "HAE_HEADERS",
    "INCOMPLETE_TEXT",
    "METHOD_TEXT",
    "NOT_FORM_TEXT",
    "NOT_OBJECT_TEXT",
    "NOT_UTF8_TEXT",
    "NO_AUTH_TEXT",
    "TEXT",
    "WRONG_AUTH_TEXT",
    "IngestDeps",
    "IngestRequest",
    "Reply",
    "accept",
    "archive_unavailable_text",
    "bearer_token",
    "internal_text",
    "journal_busy_text",
    "logger",
    "too_large_text",
    "unavailable",
]
