"""The ingest function: unwrap the request, call ``healthlog.ingest.accept``, shape the reply.

Cold start (import): read the settings (in AWS, the journal URL from its SSM parameter),
set up the logs and migrate the journal, so a wrong setting or an unreachable journal
stops the server from starting instead of failing every request. The dependencies
themselves are built at the process's first request (``deps()``): functions-framework's
gunicorn imports this module in its master process and forks the worker, and neither a
SQLite connection nor a boto3 client may cross a fork.

Two entry points: ``ingest``, the functions-framework target (the local stack), and
``handler``, the Lambda handler behind a Function URL (payload format 2.0). Both answer
``GET /health`` (``healthlog.ops.health``: no token, no data) and take deliveries on
every other path.
"""

from __future__ import annotations

import base64
import io
import threading
from typing import TYPE_CHECKING, Any

from healthlog import ingest as core
from healthlog import log
from healthlog.config import Settings
from healthlog.ingest import IngestDeps, IngestRequest, Reply
from healthlog.ops import health, secrets, wiring

if TYPE_CHECKING:
    import flask

SETTINGS = secrets.resolve(Settings.from_env())
log.setup(SETTINGS.log_level)

# Lambda freezes the environment as soon as the handler returns, and with it the
# wake-up's sender thread; the reply is decided already, so this only bounds the wait
LAMBDA_WAKE_FLUSH_S = 0.5


def _migrate() -> None:
    journal = wiring.open_journal(SETTINGS)
    try:
        journal.migrate()
    finally:
        journal.close()


_migrate()
_deps: IngestDeps | None = None
_deps_lock = threading.Lock()


def deps() -> IngestDeps:
    """This process's dependencies, built once, at its first request."""
    global _deps
    with _deps_lock:
        if _deps is None:
            _deps = wiring.ingest_deps(SETTINGS)
        return _deps


def _accept(request: IngestRequest) -> Reply:
    try:
        built = deps()
    except Exception as exc:
        return core.unavailable(SETTINGS, exc)
    return core.accept(built, request)


def _health(method: str) -> Reply:
    """``GET /health``: no token, no data; 200 when the journal and archive answer."""
    try:
        built: IngestDeps | None = deps()
    except Exception:
        built = None
    return health.check(built, method, SETTINGS.retry_after_s)


def ingest(request: flask.Request) -> flask.Response:
    """functions-framework target (HTTP); ``/health`` is the health check."""
    import flask

    if request.path == health.PATH:
        reply = _health(request.method)
        response = flask.Response(reply.body, status=reply.status, headers=reply.all_headers())
        return response
    reply = _accept(
        IngestRequest(
            headers=dict(request.headers.items()),
            content_length=request.content_length,
            # the raw stream: request.data / get_data() would hold the whole body
            read=request.stream.read,
            method=request.method,
        )
    )
    body = reply.body.encode("utf-8")
    # An iterator makes the response "streamed", which is what stops functions-framework's
    # after-request hook from calling get_data(): on a rejected request (401, 413) that
    # would read the unread body, however large, into memory. The server drains or drops
    # the rest of the body itself.
    response = flask.Response(iter([body]), status=reply.status, headers=reply.all_headers())
    response.headers["Content-Length"] = str(len(body))
    return response


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    """Lambda handler for a Function URL event (payload 2.0: lowercased headers).

    The whole body is in the event: a text type (``application/json``) as a string, any
    other type (``multipart/form-data``) base64-encoded with ``isBase64Encoded``. Lambda
    itself refuses requests over its 6 MB payload limit before this runs, so the body
    limit that answers 413 with the "Batch Requests" text (``HEALTHLOG_MAX_BODY_BYTES``
    in template.yaml) is set below it, with room for base64's growth by a third.
    """
    method = event.get("requestContext", {}).get("http", {}).get("method", "POST")
    if event.get("rawPath") == health.PATH:
        found = _health(method)
        return {"statusCode": found.status, "headers": found.all_headers(), "body": found.body}
    raw = event.get("body") or ""
    body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode("utf-8")
    reply = _accept(
        IngestRequest(
            headers=event.get("headers") or {},
            content_length=len(body),
            read=io.BytesIO(body).read,
            method=method,
        )
    )
    if _deps is not None:
        _deps.waker.flush(LAMBDA_WAKE_FLUSH_S)
    return {"statusCode": reply.status, "headers": reply.all_headers(), "body": reply.body}
