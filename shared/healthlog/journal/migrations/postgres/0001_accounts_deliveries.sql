-- Accounts and the journal of deliveries. The deliveries table is also the fold's
-- queue: its `pending` rows are the work (docs/architecture.md, "The queue is a table").
--
-- Times are timestamptz (microseconds, like the SQLite journal's fixed-width text); the
-- adapter's sessions run in UTC. Identifiers are COLLATE "C": byte order, the order the
-- SQLite journal and Python give them, whatever the database's default collation (under
-- en_US a UUID's hyphens are ignored and the queue's id tie-break would differ), and the
-- cheapest comparison there is.

CREATE TABLE accounts (
    id text COLLATE "C" PRIMARY KEY,
    name text COLLATE "C" UNIQUE NOT NULL,
    -- the caller hashes the token; the token itself is never stored
    token_hash text UNIQUE NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE deliveries (
    id text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL REFERENCES accounts (id),
    received_at timestamptz NOT NULL,
    archive_key text NOT NULL,
    size bigint NOT NULL,
    content_type text NOT NULL,
    -- list of [name, value] pairs, values already truncated by ingest
    headers jsonb NOT NULL DEFAULT '[]',
    -- text with a CHECK rather than an enum type: a new status is a one-line
    -- migration, and the values read the same as in the SQLite journal
    status text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'parsed', 'partial', 'failed')),
    -- uncovered key names (never section content); the status derives from them, and
    -- a write replaces the list wholly
    uncovered text[] NOT NULL DEFAULT '{}',
    points integer NOT NULL DEFAULT 0,
    -- folds begun and not ended; a count left raised means the process died mid-fold
    attempts integer NOT NULL DEFAULT 0,
    failure text,
    folded_at timestamptz
);

-- The settled rows by status: counts per status (summary), a listing by status (replay,
-- the CLI) and retention's "parsed, older than" come out of it in (received_at, id)
-- order without a sort. Unlike SQLite's, it leaves the pending rows out: a full index
-- on (status, received_at, id) is as good a path to the pending rows as the partial
-- index of 0003, and PostgreSQL's planner takes it (its statistics on status are sharper
-- than on the partial index's columns), so the queue lookup would descend the big
-- index. With the two indexes disjoint, the small one is the only path to the queue.
CREATE INDEX deliveries_status ON deliveries (status, received_at, id)
    WHERE status <> 'pending';

-- The listing of every delivery in order, and "last delivery" as one index step
-- (max(received_at)) instead of a scan.
CREATE INDEX deliveries_order ON deliveries (received_at, id);

-- Per-account listings and summaries. PostgreSQL does not index a foreign key's child
-- column by itself; this one also serves the key's checks when an account is deleted.
CREATE INDEX deliveries_account ON deliveries (account_id, received_at, id);
