-- When retention saw the archive delete a body it had marked removed (body_removed_at):
-- a run deletes again only the marks without it, which a crash between the mark and the
-- delete can leave (at most a page), not every body it ever removed.
ALTER TABLE deliveries ADD COLUMN body_deleted_at TEXT;

-- The marks still to delete: empty but for what a crash left.
CREATE INDEX deliveries_body_unconfirmed ON deliveries (received_at, id)
    WHERE body_removed_at IS NOT NULL AND body_deleted_at IS NULL;

-- The marks made before: each run of an earlier healthlog deleted every mark it found
-- before it marked any, so only the newest run's marks may still have their bodies
-- (that run may have crashed). Those, and any within a day of them (a clock set back
-- between two runs), stay unconfirmed: the next run deletes them once more (a body
-- already gone is no error). The older ones are confirmed as they stand.
-- (the stored text is YYYY-MM-DDTHH:MM:SS.ffffffZ: the newest mark's day less one, and
-- its time of day as it is, compare as the instants do)
UPDATE deliveries SET body_deleted_at = body_removed_at
WHERE body_removed_at < (
    SELECT date(substr(max(body_removed_at), 1, 10), '-1 day') || substr(max(body_removed_at), 11)
    FROM deliveries
);
