-- The token hashes an account had before its token was rotated (healthlog account
-- rotate), and how often a request still came with one: the phone that kept the old
-- token in its automation (issue 22: "a token is rotated and the phone keeps the old
-- one"). A hash only, as for the account's own; the watch's stale_token rule reads it.
CREATE TABLE retired_tokens (
    token_hash text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    retired_at timestamptz NOT NULL,
    refused bigint NOT NULL DEFAULT 0,
    first_refused_at timestamptz,
    last_refused_at timestamptz
);
CREATE INDEX retired_tokens_account ON retired_tokens (account_id);
