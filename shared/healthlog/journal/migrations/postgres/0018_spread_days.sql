-- Days a sample spans (docs/time.md): a cumulative sample now counts in each day of the
-- phone's clock it overlaps its part of its value. The day sums the fold keeps are summed
-- again for every cumulative metric's days, once, by the journal itself right after this
-- script (healthlog.journal.core.keep_days: one rule, clock.spread, in Python), so a
-- journal that had samples across midnight reads them spread from here on.
SELECT 1
