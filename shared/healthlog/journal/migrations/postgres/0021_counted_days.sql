-- The days where the overlap rule counts otherwise than the day's sums (several sources
-- of a cumulative metric, or an import and HAE on one day), counted once by the fold
-- (Reads.count_days) and kept, so that a read of a year of such days need not count
-- every point again (docs/database.md, "Counted days"). A row holds for one source
-- priority (HEALTHLOG_SOURCE_PRIORITY's fragments); a write that changes a day's sums
-- deletes its rows (clear_counted_days), and the fold counts it again.
CREATE TABLE counted_days (
    account_id text COLLATE "C" NOT NULL,
    metric text COLLATE "C" NOT NULL,
    field text COLLATE "C" NOT NULL,
    -- YYYY-MM-DD on the phone's clock
    day text COLLATE "C" NOT NULL,
    priority text COLLATE "C" NOT NULL,
    points bigint NOT NULL,
    valued bigint NOT NULL,
    total double precision,
    low double precision,
    high double precision,
    PRIMARY KEY (account_id, metric, field, day, priority)
);
