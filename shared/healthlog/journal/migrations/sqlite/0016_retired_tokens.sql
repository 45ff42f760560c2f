-- The token hashes an account had before its token was rotated (healthlog account
-- rotate), and how often a request still came with one: the phone that kept the old
-- token in its automation (issue 22: "a token is rotated and the phone keeps the old
-- one"). A hash only, as for the account's own; the watch's stale_token rule reads it.
CREATE TABLE retired_tokens (
    token_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    retired_at TEXT NOT NULL,
    refused INTEGER NOT NULL DEFAULT 0,
    first_refused_at TEXT,
    last_refused_at TEXT
) WITHOUT ROWID;
CREATE INDEX retired_tokens_account ON retired_tokens (account_id);
