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
    account_id text COLLATE "C" NOT NULL,
    section text COLLATE "C" NOT NULL,
    identity text COLLATE "C" NOT NULL,
    -- NULL when the record had no readable time
    start timestamptz,
    "end" timestamptz,
    utc_offset integer,
    -- text as sent (localized names are never translated)
    name text,
    -- a source object is stored as its canonical JSON
    source text,
    -- canonical JSON of the record's own fields as sent, minus its series, kept byte
    -- for byte (query it with body::jsonb)
    body text NOT NULL,
    layer_received_at timestamptz NOT NULL,
    layer_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (account_id, section, identity)
);

-- "workouts between two dates" (export, the CLI) in time order without a sort; records
-- without a time first, as SQLite sorts NULL
CREATE INDEX records_start ON records (account_id, section, start NULLS FIRST, identity);

CREATE TABLE record_series (
    account_id text COLLATE "C" NOT NULL,
    section text COLLATE "C" NOT NULL,
    identity text COLLATE "C" NOT NULL,
    series text COLLATE "C" NOT NULL,
    layer_received_at timestamptz NOT NULL,
    layer_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (account_id, section, identity, series)
);

-- An ECG reading is ~15 000 rows here.
CREATE TABLE record_items (
    account_id text COLLATE "C" NOT NULL,
    section text COLLATE "C" NOT NULL,
    identity text COLLATE "C" NOT NULL,
    series text COLLATE "C" NOT NULL,
    -- position in the series as sent
    seq integer NOT NULL,
    t timestamptz,
    qty double precision,
    lat double precision,
    lon double precision,
    alt double precision,
    unit text,
    -- the element's other fields, canonical JSON (sent_qty/sent_unit after a conversion)
    extra text,
    PRIMARY KEY (account_id, section, identity, series, seq)
);

-- The zone in which times sent without an offset (CSV deliveries) are read: IANA name.
ALTER TABLE accounts ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC';
