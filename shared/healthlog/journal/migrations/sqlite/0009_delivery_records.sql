-- How many records (workouts, ECGs, state of mind, ...) each delivery brought, beside
-- its points: written with its outcome (a fold in steps: every step's, counted). The
-- deliveries folded before this migration get what their layer still holds of the
-- records table, the best there is of what they brought.
ALTER TABLE deliveries ADD COLUMN records INTEGER NOT NULL DEFAULT 0;

UPDATE deliveries
SET records = (SELECT count(*) FROM records WHERE records.layer_id = deliveries.id)
WHERE status <> 'pending';
