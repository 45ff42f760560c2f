-- When retention saw the archive delete a body it had marked removed (body_removed_at):
-- a run deletes again only the marks without it, which a crash between the mark and the
-- delete can leave (at most a page), not every body it ever removed. A row marked by a
-- healthlog before this column has none: the next run deletes its body once more (gone
-- already, no error) and sets it.
ALTER TABLE deliveries ADD COLUMN body_deleted_at TEXT;

-- The marks still to delete: empty but for what a crash left.
CREATE INDEX deliveries_body_unconfirmed ON deliveries (received_at, id)
    WHERE body_removed_at IS NOT NULL AND body_deleted_at IS NULL;
