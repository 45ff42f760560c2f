-- Each series' identity (account, metric, field, source, unit) once, in `series`, and
-- the points referring to it by small integers (issue #9, "Storage amplification": the
-- names were copied into every point row). The table the showcase's points are kept in
-- is `point_rows`; `points` becomes a view with the columns it had, so every reader of
-- `points` (the journal's statements, SQL users, Datasette) reads what it read.
--
-- A point's identity does not change: (account, metric, start, field, source), the unit
-- being one of its values. A series with a unit is a row of `series`; the series of one
-- (account, metric, field, source) that differ only in their unit share a `point_key`,
-- and the series of one (account, metric) share a `metric_key`, both the id of the
-- first such series. A point's primary key is (metric_key, start, point_key): a point
-- re-sent in another unit meets its own row under the layer guard, which replaces or
-- keeps the row's `series_id` (its unit) with its values, never holds it twice.
-- "One metric between two dates" stays a range of the key, in time order.

CREATE TABLE series (
    id INTEGER PRIMARY KEY,
    account_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    field TEXT NOT NULL,
    source TEXT NOT NULL,
    unit TEXT NOT NULL,
    -- the id of the first series of (account_id, metric): every series of it has it
    metric_key INTEGER NOT NULL,
    -- the id of the first series of (account_id, metric, field, source): the series of
    -- one point key in different units have it
    point_key INTEGER NOT NULL,
    -- the identity; its prefix (account_id, metric) also finds a metric's series
    UNIQUE (account_id, metric, field, source, unit)
);

-- the series of the points folded before this migration, in their identity's order
INSERT INTO series (account_id, metric, field, source, unit, metric_key, point_key)
SELECT DISTINCT account_id, metric, field, source, unit, 0, 0
FROM points
ORDER BY account_id, metric, field, source, unit;

UPDATE series
SET metric_key = (SELECT min(f.id) FROM series AS f
                  WHERE f.account_id = series.account_id AND f.metric = series.metric),
    point_key = (SELECT min(f.id) FROM series AS f
                 WHERE f.account_id = series.account_id AND f.metric = series.metric
                   AND f.field = series.field AND f.source = series.source);

CREATE TABLE point_rows (
    metric_key INTEGER NOT NULL,
    -- UTC, fixed width with microseconds, like every time in this database
    start TEXT NOT NULL,
    point_key INTEGER NOT NULL,
    -- the point's series, which gives its unit (no foreign key: the fold resolves it,
    -- and a key here would cost a lookup for every point of every fold)
    series_id INTEGER NOT NULL,
    -- the offset the phone sent, minutes; NULL when the body had none
    utc_offset INTEGER,
    "end" TEXT,
    qty REAL,
    text TEXT,
    -- the point's unmapped fields, canonical JSON
    extra TEXT,
    layer_received_at TEXT NOT NULL,
    layer_id TEXT NOT NULL,
    -- start before the point key: "one metric between two dates" (export, plots) is a
    -- range of this b-tree, in time order
    PRIMARY KEY (metric_key, start, point_key)
) WITHOUT ROWID;

INSERT INTO point_rows (metric_key, start, point_key, series_id, utc_offset, "end", qty, text,
                        extra, layer_received_at, layer_id)
SELECT s.metric_key, p.start, s.point_key, s.id, p.utc_offset, p."end", p.qty, p.text,
       p.extra, p.layer_received_at, p.layer_id
FROM points AS p
JOIN series AS s
  ON s.account_id = p.account_id AND s.metric = p.metric AND s.field = p.field
 AND s.source = p.source AND s.unit = p.unit;

DROP TABLE points;

-- The points as they read before. `m` is the metric's first series (only its id is a
-- metric_key), so a filter on account_id and metric finds the metric's key in the
-- series' index and reads one range of point_rows, in time order (with no filter, the
-- index's order of the metrics: an export sorts only the points of one start). CROSS
-- JOIN fixes that order of the loops (SQLite's documented way): a filter on a field or
-- a source never makes the planner loop over series first and read a metric's range
-- once for each of them.
CREATE VIEW points AS
SELECT m.account_id, m.metric, s.field, s.source, p.start, p.utc_offset, p."end", p.qty,
       p.text, s.unit, p.extra, p.layer_received_at, p.layer_id
FROM series AS m
CROSS JOIN point_rows AS p
CROSS JOIN series AS s
WHERE p.metric_key = m.id AND s.id = p.series_id;
