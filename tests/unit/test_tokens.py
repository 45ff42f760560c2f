"""Access tokens: long random secrets, stored as their SHA-256."""

from __future__ import annotations

import hashlib

from healthlog import tokens


def test_new_tokens_are_prefixed_long_and_distinct() -> None:
    made = {tokens.new_token() for _ in range(100)}
    assert len(made) == 100
    for token in made:
        assert token.startswith("hl_")
        assert len(token) == 3 + 43  # 32 random bytes in URL-safe base64
        assert token[3:].replace("-", "").replace("_", "").isalnum()


def test_hash_is_sha256_hex_of_the_token() -> None:
    token = tokens.new_token()
    assert tokens.hash_token(token) == hashlib.sha256(token.encode()).hexdigest()
    assert tokens.hash_token(token) != token


def test_matches_only_the_token_it_was_made_from() -> None:
    token = tokens.new_token()
    stored = tokens.hash_token(token)
    assert tokens.matches(token, stored)
    assert not tokens.matches(tokens.new_token(), stored)
    assert not tokens.matches(token + "x", stored)
