"""One request and its reply as plain parts, free of any web framework.

Also the things every step of ``accept`` shares: ``Rejected``, which carries a reply
decided before the end (and the reason code for the log line) out of whichever step
decided it; ``reject``, the one way to make one, from the table ``texts.REFUSALS``; and
``Note``, what the request's log line reports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypedDict, Unpack

from healthlog.archive.port import Archive
from healthlog.config import Settings
from healthlog.ingest.texts import REFUSALS, Reason
from healthlog.ingest.wake import Waker
from healthlog.journal.port import Journal

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
    """Built once per process (cold start) by ``healthlog.ops.wiring.ingest_deps``."""

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


class Details(TypedDict, total=False):
    """What a refusal's text or headers say beside the fixed words (never a header value)."""

    limit: int  # too_large: the configured limit, bytes
    size: int | None  # too_large: the declared size, None when counted while streaming
    retry_after_s: int  # a 503: its Retry-After, seconds
    ref: str  # a 503: the request's reference, which its log line carries too


def reply_for(reason: Reason, **details: Unpack[Details]) -> Reply:
    """The reply to a request refused for ``reason``, as ``texts.REFUSALS`` has it."""
    refusal = REFUSALS[reason]
    text = refusal.text if isinstance(refusal.text, str) else refusal.text(**details)
    headers = refusal.headers
    if refusal.retry_after:
        headers += (("Retry-After", str(details["retry_after_s"])),)
    return Reply(refusal.status, text, headers=headers)


def reject(reason: Reason, **details: Unpack[Details]) -> Rejected:
    """The ``Rejected`` that ends a request refused for ``reason``; the caller raises it."""
    return Rejected(reason, reply_for(reason, **details))
