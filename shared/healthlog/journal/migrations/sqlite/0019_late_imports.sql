-- Late points without imports (docs/dashboard.md, "Data coverage"): a point an import of
-- the Health app's export brought is never late, and an import no longer raises the bar
-- the HAE deliveries after it are judged by (metric_bars). The late counts the fold kept
-- before are corrected once, by the journal itself right after this script
-- (healthlog.journal.late_imports: the bars replayed from delivery_extents in received
-- order), for every account that has an import.
SELECT 1
