-- The parser now covers every section FORMAT.md §3-§5 describes (SPEC §3: the change
-- that covers a section moves the `partial` rows naming it back to `pending`, and the
-- next pass folds them). Rows whose other uncovered keys are still uncovered come back
-- `partial` from that pass, with their list rewritten.
UPDATE deliveries SET status = 'pending'
WHERE status = 'partial'
  AND EXISTS (
    SELECT 1 FROM json_each(deliveries.uncovered)
    WHERE value IN (
        'workouts', 'stateOfMind', 'medications', 'symptoms', 'cycleTracking', 'ecg',
        'heartRateNotifications', 'metrics.heart_rate_variability.heartbeatSeries'
    )
  );
