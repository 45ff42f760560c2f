"""One request and its reply as plain parts, free of any web framework.

Also the two things every step of ``accept`` shares: ``Rejected``, which carries a
reply decided before the end (and the reason code for the log line) out of whichever
step decided it, and ``Note``, what the request's log line reports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from healthlog.archive.port import Archive
from healthlog.config import Settings
from healthlog.journal.port import Journal
from healthlog.wake import Waker

TEXT = "text/plain; charset=utf-8"


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


class Rejected(Exception):
    """The request ends here with ``reply``; ``reason`` is the log line's short code."""

    def __init__(self, reason: str, reply: Reply) -> None:
        super().__init__(reason)
        self.reason = reason
        self.reply = reply


@dataclass(slots=True)
class Note:
    """What the request's log line reports; filled in as the request goes."""

    delivery_id: str
    account_id: str | None = None
    size: int | None = None
    reason: str | None = None


def retry_later(settings: Settings, text: str) -> Reply:
    return Reply(503, text, headers=(("Retry-After", str(settings.retry_after_s)),))
