"""Archive keys carry everything reconcile needs to rebuild a journal row.

``<account_id>/<YYYY-MM-DD>/<delivery_id>.<kind>``: the account, the day (UTC) the
body was received (so a folder never holds millions of files), the delivery id (a
UUIDv7 whose time is ``received_at`` to the microsecond) and the kind of body
(``json``, ``form`` for multipart CSV, ``zip`` or ``xml`` for an import of the Health
app's own export: docs/history.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from healthlog import ids

#: the content types of an import of the Health app's export: its zip (or a folder,
#: zipped as it is archived), or a bare ``export.xml``
EXPORT_ZIP = "application/vnd.healthlog.apple-health-export+zip"
EXPORT_XML = "application/vnd.healthlog.apple-health-export+xml"

KINDS = {
    "application/json": "json",
    "multipart/form-data": "form",
    EXPORT_ZIP: "zip",
    EXPORT_XML: "xml",
}


@dataclass(frozen=True, slots=True)
class BodyKey:
    account_id: str
    delivery_id: str
    kind: str

    @property
    def received_at(self) -> datetime:
        return ids.received_at_of(self.delivery_id)

    def __str__(self) -> str:
        day = self.received_at.strftime("%Y-%m-%d")
        return f"{self.account_id}/{day}/{self.delivery_id}.{self.kind}"


def body_key(account_id: str, delivery_id: str, content_type: str) -> str:
    base = content_type.split(";", 1)[0].strip().lower()
    return str(BodyKey(account_id, delivery_id, KINDS.get(base, "json")))


def parse_body_key(key: str) -> BodyKey | None:
    """The parts of a body key, or None for anything else found in the archive."""
    parts = key.split("/")
    if len(parts) != 3 or "." not in parts[2]:
        return None
    delivery_id, kind = parts[2].rsplit(".", 1)
    try:
        ids.received_at_of(delivery_id)
    except ValueError:
        return None
    if kind not in KINDS.values():
        return None
    return BodyKey(parts[0], delivery_id, kind)


def check_key(key: str) -> str:
    """The key itself if every adapter can store it; ValueError otherwise.

    Shared by all adapters so that a key accepted by S3 is also accepted by the local
    folder: relative, ``/``-separated, no empty, ``.`` or ``..`` segment, no NUL.
    """
    if not key or key.startswith("/") or "\\" in key or "\0" in key:
        raise ValueError(f"invalid archive key: {key[:80]!r}")
    if any(part in ("", ".", "..") for part in key.split("/")):
        raise ValueError(f"invalid archive key: {key[:80]!r}")
    return key
