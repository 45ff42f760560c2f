-- The showcase: one row per point key, holding the value of the newest layer that
-- carries it. A layer is a delivery, ordered by (received_at, id); the winning layer is
-- stored beside the point so an older delivery folded later cannot overwrite it, and
-- the showcase comes out the same whatever order deliveries are folded in
-- (docs/architecture.md, "Layers").

CREATE TABLE points (
    -- no foreign key: the account comes from the delivery row, which has one, and a
    -- key here would cost a lookup in accounts for every point of every fold
    account_id text COLLATE "C" NOT NULL,
    metric text COLLATE "C" NOT NULL,
    field text COLLATE "C" NOT NULL,
    source text COLLATE "C" NOT NULL,
    -- the UTC instant (the SQLite journal keeps the same instant as fixed-width text)
    start timestamptz NOT NULL,
    -- the offset the phone sent, minutes; NULL when the body had none
    utc_offset integer,
    "end" timestamptz,
    qty double precision,
    text text,
    unit text NOT NULL,
    -- the point's unmapped fields as canonical JSON text, kept byte for byte (jsonb
    -- would respace it); query it with extra::jsonb
    extra text,
    layer_received_at timestamptz NOT NULL,
    layer_id text COLLATE "C" NOT NULL,
    -- start before field and source: "one metric between two dates" (export, plots) is
    -- a range of this index, and an export in time order needs no sort
    PRIMARY KEY (account_id, metric, start, field, source)
);
