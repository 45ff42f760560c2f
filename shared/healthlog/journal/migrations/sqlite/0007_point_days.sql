-- Per account, metric and day of the phone's clock: how many points the showcase holds,
-- and how many of them arrived late. Kept by the fold as it writes, so the coverage of a
-- year of minute-level data is a read of a few thousand rows, not a pass over millions
-- of points (docs/dashboard.md, "Data coverage").
--
-- A point is counted once, when its key first enters the showcase (a re-send of the same
-- key changes nothing here), on the day its start has on the clock its offset gives, and
-- it is *late* when its start is older than the newest start of its metric that the
-- deliveries received before the one that brought it had brought (delivery_extents).

CREATE TABLE point_days (
    account_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    -- YYYY-MM-DD on the phone's clock
    day TEXT NOT NULL,
    points INTEGER NOT NULL,
    late INTEGER NOT NULL,
    PRIMARY KEY (account_id, metric, day)
) WITHOUT ROWID;

-- the points folded before this migration: counted; when each one first arrived was not
-- recorded, so none of them is judged late
INSERT INTO point_days (account_id, metric, day, points, late)
SELECT account_id, metric,
       CASE WHEN substr(start, 12, 2) * 60 + substr(start, 15, 2) + coalesce(utc_offset, 0)
                 BETWEEN 0 AND 1439
            THEN substr(start, 1, 10)
            ELSE date(start, coalesce(utc_offset, 0) || ' minutes') END AS day,
       count(*), 0
FROM points
GROUP BY account_id, metric, day;
