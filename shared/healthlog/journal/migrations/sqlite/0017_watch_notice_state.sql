-- Where a watch notice stands: `telling` from the claim until the target took it,
-- `told` after, `ending` from the claim of its "recovered" until the target took that.
-- A claim that no evaluator finished (its process was killed between the claim and the
-- send) is taken up again by the next evaluation once it is old: no notice is lost to
-- a kill. Rows from before are `told`.
ALTER TABLE watch_notices ADD COLUMN state TEXT NOT NULL DEFAULT 'told';
