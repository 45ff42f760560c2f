"""``GET /health`` on ingest: can it take deliveries now? For a reverse proxy, a container's
health check or an uptime monitor.

No token is asked for and no data is in the reply: 200 ``{"status": "ok"}`` when the
journal and the archive both answer a read, else 503 ``{"status": "unavailable"}``
with which of the two did not answer (``journal``, ``archive``: ``ok`` or
``unavailable``) and a ``Retry-After``. The reads are a point lookup of a delivery id
that cannot exist and a listing of an archive prefix that holds nothing, so a check
costs two lookups, whatever the data (a local archive folder not made yet answers: the
first delivery makes it; an empty one without its marker does not: an unmounted
volume). ``HEAD`` gets the same status without a body; any other method gets 405.
"""

from __future__ import annotations

import json
import logging

from healthlog import log
from healthlog.ingest import IngestDeps, Reply

PATH = "/health"
#: ids no delivery or body ever has (delivery ids are UUIDv7)
_PROBE_ID = "healthlog-health-check"
_PROBE_PREFIX = "health-check/"

logger = logging.getLogger("healthlog.ingest")


def _journal_answers(deps: IngestDeps) -> bool:
    try:
        deps.journal.get_delivery(_PROBE_ID)
    except Exception:
        return False
    return True


def _archive_answers(deps: IngestDeps) -> bool:
    try:
        next(iter(deps.archive.keys(_PROBE_PREFIX)), None)
    except Exception:
        return False
    return True


def check(deps: IngestDeps | None, method: str, retry_after_s: int = 30) -> Reply:
    """The health reply; ``deps`` None when ingest's dependencies could not be built."""
    allowed = (("Allow", "GET, HEAD"),)
    if method.upper() not in ("GET", "HEAD"):
        return Reply(405, json.dumps({"error": "GET or HEAD only"}), "application/json", allowed)
    journal = deps is not None and _journal_answers(deps)
    archive = deps is not None and _archive_answers(deps)
    parts = {
        "journal": "ok" if journal else "unavailable",
        "archive": "ok" if archive else "unavailable",
    }
    body = "" if method.upper() == "HEAD" else None
    if journal and archive:
        return Reply(200, body if body is not None else json.dumps({"status": "ok"}),
                     "application/json", (("Cache-Control", "no-store"),))  # fmt: skip
    log.event(logger, logging.WARNING, "ingest.health", **parts)
    text = json.dumps({"status": "unavailable", **parts})
    headers = (("Cache-Control", "no-store"), ("Retry-After", str(retry_after_s)))
    return Reply(503, body if body is not None else text, "application/json", headers)
