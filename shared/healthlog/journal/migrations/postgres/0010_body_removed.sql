-- When retention (`healthlog retention`) removed the delivery's archived body: set
-- before the body is deleted (mark, then delete), so the journal never counts on a body
-- that may be gone. A row with it set keeps its outcome and its layer in the showcase;
-- replay skips it and says how many it skipped. Only `parsed` deliveries are marked.
ALTER TABLE deliveries ADD COLUMN body_removed_at timestamptz;

-- The marked rows, for the run that finishes deletes a crash interrupted, and for the
-- count `status` shows: small beside the table, and empty until retention is used.
CREATE INDEX deliveries_body_removed ON deliveries (received_at, id)
    WHERE body_removed_at IS NOT NULL;
