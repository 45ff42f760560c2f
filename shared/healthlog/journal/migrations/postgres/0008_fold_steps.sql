-- A delivery too large for one fold transaction (an export of the Health app, several GB)
-- folds in steps: each step's points and records and the position it reached are
-- committed together, and a fold that is interrupted goes on after the last committed
-- step (docs/architecture.md, "Folds in steps").
--
-- fold_position: how many of the body's units (an export's top-level elements, then its
-- ECG files) the committed steps have folded; 0 when no fold is under way, and again
-- once the outcome is written.
-- fold_state: the fold's own account of what it found so far (JSON text, kept byte for
-- byte as the other JSON columns are: points written, uncovered and unreadable types with
-- their counts, where a cut file stopped), kept with the outcome as the delivery's
-- report; NULL for a delivery that folds in one step.
ALTER TABLE deliveries ADD COLUMN fold_position bigint NOT NULL DEFAULT 0;
ALTER TABLE deliveries ADD COLUMN fold_state text;
