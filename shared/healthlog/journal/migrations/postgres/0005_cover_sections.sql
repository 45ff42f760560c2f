-- The parser now covers every section docs/hae-format.md describes. The change that
-- covers a section moves the `partial` rows naming it back to `pending`, and the next
-- pass folds them (docs/architecture.md, "Coverage and uncovered keys"). Rows whose
-- other uncovered keys are still uncovered come back `partial` from that pass, with
-- their list rewritten.
UPDATE deliveries SET status = 'pending'
WHERE status = 'partial'
  AND uncovered && ARRAY[
    'workouts', 'stateOfMind', 'medications', 'symptoms', 'cycleTracking', 'ecg',
    'heartRateNotifications', 'metrics.heart_rate_variability.heartbeatSeries'
  ]::text[];
