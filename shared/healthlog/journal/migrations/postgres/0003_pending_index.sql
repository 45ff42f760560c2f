-- The fold's queue lookup: pending rows strictly after a (received_at, id) cursor.
--
-- Partial, not full: in steady state the fold keeps up, so this index holds zero or
-- one row, and finding work costs the same with ten rows or ten million in the
-- journal. Through a full index on (received_at, id) (deliveries_order) the lookup
-- would walk past every folded row after the cursor to reach the pending ones: from
-- the zero cursor, the whole journal. The queries must say `status = 'pending'`
-- literally, not as a bound parameter, for the planner to prove the index applies
-- (also to a generic plan of a prepared statement).
CREATE INDEX deliveries_pending ON deliveries (received_at, id) WHERE status = 'pending';
