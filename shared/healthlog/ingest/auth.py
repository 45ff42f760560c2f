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


def misses_bearer(headers: Mapping[str, str]) -> bool:
    """Whether a request without a token sent an ``Authorization`` header of another form
    (the token pasted alone, another scheme): the user's mistake is then the header's
    form, not a missing token. ``Bearer`` with nothing after it is a missing token."""
    scheme = headers.get("authorization", "").strip().partition(" ")[0]
    return bool(scheme) and scheme.lower() != "bearer"
