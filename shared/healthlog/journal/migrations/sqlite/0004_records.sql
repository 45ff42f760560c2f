-- Records: every section other than metrics (workouts, stateOfMind, medications,
-- symptoms, cycleTracking, ecg, heartRateNotifications, and the HRV heartbeatSeries),
-- one row per event, keyed by the section's identity rule (docs/sections.md).
--
-- Layers as for points (docs/architecture.md, "Layers"), at two grains. The record row
-- holds the body of the newest layer that carries the record. Each series of a record (a
-- route, a heart-rate series, ECG voltages) is a unit of its own: it is replaced wholly
-- by the newest layer that carries it, and inherited from an older layer when a newer
-- one does not carry it (the app drops routes and series now and then: docs/hae-format.md,
-- "Known app bugs"). So record_series keeps the winning layer per series, and the
-- showcase is the same in any fold order.

CREATE TABLE records (
    account_id TEXT NOT NULL,
    section TEXT NOT NULL,
    identity TEXT NOT NULL,
    -- UTC, fixed width with microseconds; NULL when the record had no readable time
    start TEXT,
    "end" TEXT,
    utc_offset INTEGER,
    -- text as sent (localized names are never translated)
    name TEXT,
    -- a source object is stored as its canonical JSON
    source TEXT,
    -- canonical JSON of the record's own fields as sent, minus its series
    body TEXT NOT NULL,
    layer_received_at TEXT NOT NULL,
    layer_id TEXT NOT NULL,
    PRIMARY KEY (account_id, section, identity)
) WITHOUT ROWID;

-- "workouts between two dates" (export, the CLI) in time order without a sort
CREATE INDEX records_start ON records (account_id, section, start);

CREATE TABLE record_series (
    account_id TEXT NOT NULL,
    section TEXT NOT NULL,
    identity TEXT NOT NULL,
    series TEXT NOT NULL,
    layer_received_at TEXT NOT NULL,
    layer_id TEXT NOT NULL,
    PRIMARY KEY (account_id, section, identity, series)
) WITHOUT ROWID;

-- An ECG reading is ~15 000 rows here: the key is the b-tree, nothing stored twice.
CREATE TABLE record_items (
    account_id TEXT NOT NULL,
    section TEXT NOT NULL,
    identity TEXT NOT NULL,
    series TEXT NOT NULL,
    -- position in the series as sent
    seq INTEGER NOT NULL,
    t TEXT,
    qty REAL,
    lat REAL,
    lon REAL,
    alt REAL,
    unit TEXT,
    -- the element's other fields, canonical JSON (sent_qty/sent_unit after a conversion)
    extra TEXT,
    PRIMARY KEY (account_id, section, identity, series, seq)
) WITHOUT ROWID;

-- The zone in which times sent without an offset (CSV deliveries) are read: IANA name.
ALTER TABLE accounts ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC';
