"""Structured log lines: one JSON object per line, ids, counters and durations only.

Never pass a health value, a source or device name, a token or a raw header value to
``event``: callers pass ids, counts, durations, status names and truncated forms.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

_RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None)))


def utc_ts(created: float) -> str:
    """A record's time as ISO 8601 UTC with milliseconds: ``2026-01-02T07:00:00.123Z``."""
    at = datetime.fromtimestamp(created, UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is now (a test's capture, a redirected stream)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": utc_ts(record.created),
            "level": record.levelname,
            "logger": record.name,
            "event": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _RESERVED and not key.startswith("_"):
                line[key] = value
        if record.exc_info and record.exc_info[0] is not None:
            # the type only: an exception's message may quote what it choked on
            line["exc_type"] = record.exc_info[0].__name__
        return orjson.dumps(line, default=str).decode()


def json_handler() -> logging.Handler:
    """A handler writing JSON lines to the stderr of the moment, marked as healthlog's."""
    handler = _StderrHandler()
    handler.setFormatter(JsonFormatter())
    handler._healthlog = True  # type: ignore[attr-defined]
    return handler


def setup(level: str = "INFO", name: str = "healthlog") -> None:
    """Send healthlog's loggers (or library ``name``'s) to stderr as JSON lines (idempotent)."""
    root = logging.getLogger(name)
    root.setLevel(level.upper())
    if not any(getattr(h, "_healthlog", False) for h in root.handlers):
        root.addHandler(json_handler())
        root.propagate = True


def event(logger: logging.Logger, level: int, name: str, **fields: Any) -> None:
    """Log ``name`` with ``fields`` as structured attributes."""
    logger.log(level, name, extra=fields)


def truncate(value: str, limit: int) -> str:
    """The short form of a header value that may be stored or logged."""
    return value if len(value) <= limit else value[:limit] + "…"
