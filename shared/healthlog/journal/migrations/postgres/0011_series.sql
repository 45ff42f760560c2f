-- Each series' identity (account, metric, field, source, unit) once, in `series`, and
-- the points referring to it by small integers (issue #9, "Storage amplification": the
-- names were copied into every point row). The table the showcase's points are kept in
-- is `point_rows`; `points` becomes a view with the columns it had, so every reader of
-- `points` (the journal's statements, SQL users) reads what it read.
--
-- A point's identity does not change: (account, metric, start, field, source), the unit
-- being one of its values. A series with a unit is a row of `series`; the series of one
-- (account, metric, field, source) that differ only in their unit share a `point_key`,
-- and the series of one (account, metric) share a `metric_key`, both the id of the
-- first such series. A point's primary key is (metric_key, start, point_key): a point
-- re-sent in another unit meets its own row under the layer guard, which replaces or
-- keeps the row's `series_id` (its unit) with its values, never holds it twice.
-- "One metric between two dates" stays a range of the key, in time order.

CREATE SEQUENCE series_ids AS integer;

CREATE TABLE series (
    id integer PRIMARY KEY DEFAULT nextval('series_ids'),
    account_id text COLLATE "C" NOT NULL,
    metric text COLLATE "C" NOT NULL,
    field text COLLATE "C" NOT NULL,
    source text COLLATE "C" NOT NULL,
    unit text COLLATE "C" NOT NULL,
    -- the id of the first series of (account_id, metric): every series of it has it
    metric_key integer NOT NULL,
    -- the id of the first series of (account_id, metric, field, source): the series of
    -- one point key in different units have it
    point_key integer NOT NULL,
    -- the identity; its prefix (account_id, metric) also finds a metric's series
    UNIQUE (account_id, metric, field, source, unit)
);

ALTER SEQUENCE series_ids OWNED BY series.id;

-- the series of the points folded before this migration, in their identity's order
INSERT INTO series (account_id, metric, field, source, unit, metric_key, point_key)
SELECT account_id, metric, field, source, unit, 0, 0
FROM (SELECT DISTINCT account_id, metric, field, source, unit FROM points) AS found
ORDER BY account_id, metric, field, source, unit;

UPDATE series
SET metric_key = first.metric_key, point_key = first.point_key
FROM (SELECT id,
             min(id) OVER (PARTITION BY account_id, metric) AS metric_key,
             min(id) OVER (PARTITION BY account_id, metric, field, source) AS point_key
      FROM series) AS first
WHERE first.id = series.id;

CREATE TABLE point_rows (
    metric_key integer NOT NULL,
    -- the UTC instant (the SQLite journal keeps the same instant as fixed-width text)
    start timestamptz NOT NULL,
    point_key integer NOT NULL,
    -- the point's series, which gives its unit (no foreign key: the fold resolves it,
    -- and a key here would cost a lookup for every point of every fold)
    series_id integer NOT NULL,
    -- the offset the phone sent, minutes; NULL when the body had none
    utc_offset integer,
    "end" timestamptz,
    qty double precision,
    text text,
    -- the point's unmapped fields as canonical JSON text, kept byte for byte (jsonb
    -- would respace it); query it with extra::jsonb
    extra text,
    layer_received_at timestamptz NOT NULL,
    layer_id text COLLATE "C" NOT NULL,
    -- start before the point key: "one metric between two dates" (export, plots) is a
    -- range of this index, in time order
    PRIMARY KEY (metric_key, start, point_key)
);

INSERT INTO point_rows (metric_key, start, point_key, series_id, utc_offset, "end", qty, text,
                        extra, layer_received_at, layer_id)
SELECT s.metric_key, p.start, s.point_key, s.id, p.utc_offset, p."end", p.qty, p.text,
       p.extra, p.layer_received_at, p.layer_id
FROM points AS p
JOIN series AS s
  ON s.account_id = p.account_id AND s.metric = p.metric AND s.field = p.field
 AND s.source = p.source AND s.unit = p.unit
ORDER BY s.metric_key, p.start, s.point_key;

DROP TABLE points;

-- The points as they read before. `m` is the metric's first series (only its id is a
-- metric_key), so a filter on account_id and metric finds the metric's key in the
-- series' index and reads one range of point_rows. `m.metric_key = m.id` says so to
-- the planner, which would otherwise count every series of the metric as a match and
-- prefer a scan of every point.
CREATE VIEW points AS
SELECT m.account_id, m.metric, s.field, s.source, p.start, p.utc_offset, p."end", p.qty,
       p.text, s.unit, p.extra, p.layer_received_at, p.layer_id
FROM series AS m
JOIN point_rows AS p ON p.metric_key = m.id AND m.metric_key = m.id
JOIN series AS s ON s.id = p.series_id;
