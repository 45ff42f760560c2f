-- Distinct samples that share a start are all kept (issue "One truth", item 4): a
-- point's key gains `seq`, which tells apart the samples of one delivery that share
-- (account, metric, field, source, start) but differ in anything else (ten foods logged
-- at one minute, an In Bed and an Asleep segment that start together, two distance
-- samples that differ in their end). Before, the last of them overwrote the others.
-- The fold numbers them 0, 1, 2... in the order of their contents
-- (healthlog.model.distinct_points), so a later delivery that re-sends the window
-- meets the same keys and replaces them under the layer guard, as before. A sample sent
-- twice exactly is kept once and counted in `deliveries.repeated`.
--
-- Every point stored before has seq 0: one per key, as it was. The table is rebuilt
-- (SQLite cannot change a primary key): about as long as migration 0011 took, once.

CREATE TABLE point_rows_seq (
    metric_key INTEGER NOT NULL,
    start TEXT NOT NULL,
    point_key INTEGER NOT NULL,
    -- which of the delivery's samples sharing the rest of the key: 0 for the first
    seq INTEGER NOT NULL DEFAULT 0,
    series_id INTEGER NOT NULL,
    utc_offset INTEGER,
    "end" TEXT,
    qty REAL,
    text TEXT,
    extra TEXT,
    layer_received_at TEXT NOT NULL,
    layer_id TEXT NOT NULL,
    PRIMARY KEY (metric_key, start, point_key, seq)
) WITHOUT ROWID;

INSERT INTO point_rows_seq (metric_key, start, point_key, seq, series_id, utc_offset, "end",
                            qty, text, extra, layer_received_at, layer_id)
SELECT metric_key, start, point_key, 0, series_id, utc_offset, "end", qty, text, extra,
       layer_received_at, layer_id
FROM point_rows;

DROP VIEW points;
DROP TABLE point_rows;
ALTER TABLE point_rows_seq RENAME TO point_rows;

-- The points as they read before, with `seq` last (migration 0011 says why the joins
-- are written so).
CREATE VIEW points AS
SELECT m.account_id, m.metric, s.field, s.source, p.start, p.utc_offset, p."end", p.qty,
       p.text, s.unit, p.extra, p.layer_received_at, p.layer_id, p.seq
FROM series AS m
CROSS JOIN point_rows AS p
CROSS JOIN series AS s
WHERE p.metric_key = m.id AND s.id = p.series_id;

-- How many samples a delivery's body held more than once exactly, kept once.
ALTER TABLE deliveries ADD COLUMN repeated INTEGER NOT NULL DEFAULT 0;
