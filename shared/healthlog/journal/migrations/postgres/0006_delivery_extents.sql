-- What each delivery brought of each series (metric, field, unit, source): its first
-- and last start and how many points, whatever layer holds those points now. The
-- catalog of an account's series is read from here (a delivery's rows, not every
-- point's), and late samples are counted against it
-- (a point older than the newest start an earlier delivery of its metric *brought*;
-- docs/dashboard.md, "Data coverage"): the points a delivery still holds in the
-- showcase say less, since a later window that re-sends the newest point takes it over.
-- Written with the outcome, replaced when the delivery is folded again.

CREATE TABLE delivery_extents (
    delivery_id text COLLATE "C" NOT NULL,
    metric text COLLATE "C" NOT NULL,
    field text COLLATE "C" NOT NULL,
    unit text COLLATE "C" NOT NULL,
    source text COLLATE "C" NOT NULL,
    account_id text COLLATE "C" NOT NULL,
    received_at timestamptz NOT NULL,
    first_start timestamptz NOT NULL,
    last_start timestamptz NOT NULL,
    points integer NOT NULL,
    PRIMARY KEY (delivery_id, metric, field, unit, source)
);

-- per account and metric in delivery order: the window of the late-points query
CREATE INDEX delivery_extents_order ON delivery_extents (account_id, metric, received_at, delivery_id);

-- the deliveries folded before this migration: what their layers still hold is the best
-- there is of what they brought
INSERT INTO delivery_extents (delivery_id, metric, field, unit, source, account_id,
                              received_at, first_start, last_start, points)
SELECT layer_id, metric, field, unit, source, account_id, layer_received_at, min(start),
       max(start), count(*)
FROM points
GROUP BY layer_id, metric, field, unit, source, account_id, layer_received_at;
