-- Accounts and the journal of deliveries. The deliveries table is also the fold's
-- queue: its `pending` rows are the work (docs/architecture.md, "The queue is a table").
--
-- Times are fixed-width UTC text, YYYY-MM-DDTHH:MM:SS.ffffffZ (always six digits), so
-- text order is time order and (received_at, id) row values compare as the cursor does.

CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    name TEXT UNIQUE NOT NULL,
    -- the caller hashes the token; the token itself is never stored
    token_hash TEXT UNIQUE NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE deliveries (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    received_at TEXT NOT NULL,
    archive_key TEXT NOT NULL,
    size INTEGER NOT NULL,
    content_type TEXT NOT NULL,
    -- JSON list of [name, value] pairs, values already truncated by ingest
    headers TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'parsed', 'partial', 'failed')),
    -- JSON list of uncovered key names (never section content); the status derives
    -- from it, and a write replaces it wholly
    uncovered TEXT NOT NULL DEFAULT '[]',
    points INTEGER NOT NULL DEFAULT 0,
    -- folds begun and not ended; a count left raised means the process died mid-fold
    attempts INTEGER NOT NULL DEFAULT 0,
    failure TEXT,
    folded_at TEXT
);

-- Counts per status (summary) walk this narrow index instead of the wide rows
-- (headers); a listing by status (replay, the CLI) and retention's "parsed, older than"
-- come out of it in (received_at, id) order without a sort. It holds the whole table,
-- so the fold's queue lookups name the small partial index instead (0003).
CREATE INDEX deliveries_status ON deliveries (status, received_at, id);

-- The listing of every delivery in order, and "last delivery" as one index step
-- (max(received_at)) instead of a scan.
CREATE INDEX deliveries_order ON deliveries (received_at, id);

-- Per-account listings and summaries, and the child-key index of the foreign key.
CREATE INDEX deliveries_account ON deliveries (account_id, received_at, id);
