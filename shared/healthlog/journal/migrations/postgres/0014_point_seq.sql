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
-- Every point stored before has seq 0: one per key, as it was. Adding a column with a
-- constant default rewrites nothing; the primary key's index is built again, once.

ALTER TABLE point_rows ADD COLUMN seq integer NOT NULL DEFAULT 0;
ALTER TABLE point_rows DROP CONSTRAINT point_rows_pkey,
    ADD CONSTRAINT point_rows_pkey PRIMARY KEY (metric_key, start, point_key, seq);

-- The points as they read before, with `seq` last (migration 0011 says why the joins
-- are written so).
CREATE OR REPLACE VIEW points AS
SELECT m.account_id, m.metric, s.field, s.source, p.start, p.utc_offset, p."end", p.qty,
       p.text, s.unit, p.extra, p.layer_received_at, p.layer_id, p.seq
FROM series AS m
JOIN point_rows AS p ON p.metric_key = m.id AND m.metric_key = m.id
JOIN series AS s ON s.id = p.series_id;

-- How many samples a delivery's body held more than once exactly, kept once.
ALTER TABLE deliveries ADD COLUMN repeated integer NOT NULL DEFAULT 0;
