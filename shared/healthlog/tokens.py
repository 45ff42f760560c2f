"""Access tokens: long random secrets, stored only as their hash.

A token is ``hl_`` followed by 32 random bytes in URL-safe base64 (43 characters), so
a plain SHA-256 is enough to store it: there is nothing to brute-force, and a salt or a
slow hash would only make the lookup by hash impossible. The journal keeps the hex
digest; the token itself is shown once, when the account is created, and never
stored or logged.

Ingest finds the account by the token's hash (an index lookup in the journal). Any
timing difference there tells a caller at most how much of the SHA-256 of a token *they*
chose matches a stored hash, which reveals nothing about a stored token: the hash is
the lookup key, so comparing it in constant time has nothing left to protect.
``matches`` is the constant-time check for code that holds a stored hash itself.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

PREFIX = "hl_"


def new_token() -> str:
    """A fresh token to show the user once."""
    return PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """The form of a token the journal stores and looks up: SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def matches(token: str, token_hash: str) -> bool:
    """Whether ``token`` hashes to ``token_hash``, in constant time."""
    return hmac.compare_digest(hash_token(token), token_hash)
