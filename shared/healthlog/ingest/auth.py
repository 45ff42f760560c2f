"""Token extraction: where a request carries its access token.

Only the finding is here; the account lookup by the token's hash is a step of ``flow``.
"""

from __future__ import annotations

from collections.abc import Mapping


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
