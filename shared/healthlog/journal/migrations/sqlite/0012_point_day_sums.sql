-- Per account, metric, field and day of the phone's clock: what the showcase holds, summed
-- up (points, valued points, sum, min, max, the first and last start), kept by the fold as
-- it writes, so a daily summary of years of minute-level data reads a row a day instead of
-- every point (docs/database.md, "point_day_sums"; issue #13, "Reads for people").
--
-- A day's row is recomputed whole from the showcase whenever a delivery writes points
-- near it, so it is always what a GROUP BY of that day's points would give. `sources` and
-- `imported` say whether the overlap rule (healthlog.overlap) could count the day
-- otherwise: a day with points of several sources, or of an import and of HAE, is read
-- from its points by the rule, not from here.

CREATE TABLE point_day_sums (
    account_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    field TEXT NOT NULL,
    -- YYYY-MM-DD on the phone's clock
    day TEXT NOT NULL,
    points INTEGER NOT NULL,
    -- the points with a value (an average divides by these)
    valued INTEGER NOT NULL,
    total REAL,
    low REAL,
    high REAL,
    -- the day's first and last start (UTC text): a range that holds both holds the day
    first_start TEXT NOT NULL,
    last_start TEXT NOT NULL,
    -- 1 when the day's points have one source, 2 when they have more; and how many
    -- points came by an import of the Health app's export
    sources INTEGER NOT NULL,
    imported INTEGER NOT NULL,
    PRIMARY KEY (account_id, metric, field, day)
) WITHOUT ROWID;

-- the points folded before this migration
INSERT INTO point_day_sums (account_id, metric, field, day, points, valued, total, low, high,
                            first_start, last_start, sources, imported)
SELECT account_id, metric, field,
       CASE WHEN substr(start, 12, 2) * 60 + substr(start, 15, 2) + coalesce(utc_offset, 0)
                 BETWEEN 0 AND 1439
            THEN substr(start, 1, 10)
            ELSE coalesce(date(start, coalesce(utc_offset, 0) || ' minutes'),
                          substr(start, 1, 10)) END AS day,
       count(*), count(qty), sum(qty), min(qty), max(qty), min(start), max(start),
       CASE WHEN min(source) = max(source) THEN 1 ELSE 2 END,
       count(CASE WHEN layer_id IN (
           SELECT id FROM deliveries
           WHERE content_type IN ('application/vnd.healthlog.apple-health-export+zip',
                                  'application/vnd.healthlog.apple-health-export+xml'))
           THEN 1 END)
FROM points
GROUP BY account_id, metric, field, day;
