-- The showcase: one row per point key, holding the value of the newest layer that
-- carries it. A layer is a delivery, ordered by (received_at, id); the winning layer is
-- stored beside the point so an older delivery folded later cannot overwrite it, and
-- the showcase comes out the same whatever order deliveries are folded in
-- (docs/architecture.md, "Layers").
--
-- WITHOUT ROWID: the table is its primary key's b-tree, so an upsert is one lookup in
-- one b-tree and the key is not stored twice.

CREATE TABLE points (
    -- no foreign key: the account comes from the delivery row, which has one, and a
    -- key here would cost a lookup in accounts for every point of every fold
    account_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    field TEXT NOT NULL,
    source TEXT NOT NULL,
    -- UTC, fixed width with microseconds, like every time in this database
    start TEXT NOT NULL,
    -- the offset the phone sent, minutes; NULL when the body had none
    utc_offset INTEGER,
    "end" TEXT,
    qty REAL,
    text TEXT,
    unit TEXT NOT NULL,
    -- the point's unmapped fields, canonical JSON
    extra TEXT,
    layer_received_at TEXT NOT NULL,
    layer_id TEXT NOT NULL,
    -- start before field and source: "one metric between two dates" (export, plots) is
    -- a range of this b-tree, and an export in time order needs no sort
    PRIMARY KEY (account_id, metric, start, field, source)
) WITHOUT ROWID;
