-- The SQLite journal's statements: each under a `-- name --` line and a one-line
-- description, loaded once by healthlog.journal.statements. Parameters are sqlite3's
-- named style (:name), except in the showcase's bulk statements at the end, which the
-- driver runs with executemany and positional tuples (?), the cheaper form per row.
--
-- The values the journal core passes and reads back are the port's: times as
-- fixed-width UTC text, lists as JSON text. SQLite stores exactly those, so nothing
-- here converts. A `/*name*/` comment is a slot where the core puts a fixed fragment
-- (filters of its own making, never a value): unfilled, it is only a comment.

-- lock_migrations --
-- Nothing to do: the migration's transaction is BEGIN IMMEDIATE, which excludes others.
SELECT 1

-- applied_migrations --
-- The versions recorded as applied.
SELECT version FROM schema_migrations

-- record_migration --
-- Record a migration as applied, in the transaction that applied it.
INSERT INTO schema_migrations (version, name, applied_at) VALUES (:version, :name, :applied_at)

-- add_account --
-- A new account; the unique name, token hash and id are the database's to enforce.
INSERT INTO accounts (id, name, token_hash, created_at)
VALUES (:id, :name, :token_hash, :created_at)

-- set_token_hash --
-- Replace an account's token hash.
UPDATE accounts SET token_hash = :token_hash WHERE id = :id

-- set_time_zone --
-- Set the zone in which an account's offset-less times are read.
UPDATE accounts SET time_zone = :time_zone WHERE id = :id

-- set_unit_system --
-- Set the units an account's figures are shown in (metric, imperial).
UPDATE accounts SET unit_system = :unit_system WHERE id = :id

-- token_hash --
-- An account's stored token hash.
SELECT token_hash FROM accounts WHERE id = :id

-- account_by_id --
-- One account by its id.
SELECT id, name, created_at, time_zone, unit_system FROM accounts WHERE id = :id

-- account_by_token_hash --
-- The account a token hash belongs to.
SELECT id, name, created_at, time_zone, unit_system FROM accounts WHERE token_hash = :token_hash

-- accounts --
-- Every account, by name.
SELECT id, name, created_at, time_zone, unit_system FROM accounts ORDER BY name

-- insert_delivery --
-- Journal a delivery as pending; a second insert of one id changes nothing.
INSERT INTO deliveries (id, account_id, received_at, archive_key, size, content_type, headers)
VALUES (:id, :account_id, :received_at, :archive_key, :size, :content_type, :headers)
ON CONFLICT (id) DO NOTHING

-- pending_page --
-- Pending deliveries strictly after a (received_at, id) cursor, in that order.
-- INDEXED BY names the partial index: SQLite documents the clause for exactly this, a
-- time-sensitive query whose plan must not change silently (a missing index is an
-- error, not a quiet slide into a scan of deliveries_status, which holds the whole
-- table). `status = 'pending'` is literal: the planner can only prove a partial index
-- applies to a literal. The row value keeps the cursor one index SEARCH; the
-- OR-expanded form (a > ? OR (a = ? AND b > ?)) makes SQLite scan.
SELECT received_at, id FROM deliveries INDEXED BY deliveries_pending
WHERE status = 'pending' AND (received_at, id) > (:received_at, :id)
ORDER BY received_at, id
LIMIT :limit

-- count_pending --
-- The backlog, counted in the partial index: its cost is the backlog, not the journal.
SELECT count(*) FROM deliveries INDEXED BY deliveries_pending WHERE status = 'pending'

-- get_delivery --
-- One delivery with every column the port has.
SELECT id, account_id, received_at, archive_key, size, content_type, status, uncovered,
       points, attempts, failure, folded_at, headers, fold_position, fold_state,
       records, body_removed_at, repeated
FROM deliveries WHERE id = :id

-- begin_attempt --
-- Count a fold attempt; returns the new count (no row: no such delivery).
UPDATE deliveries SET attempts = attempts + 1 WHERE id = :id RETURNING attempts

-- release_attempt --
-- Undo a counted attempt of a fold that circumstances stopped.
UPDATE deliveries SET attempts = max(attempts - 1, 0) WHERE id = :id

-- write_outcome --
-- The outcome, guarded by the expected status; returns the layer (no row: guard failed).
UPDATE deliveries
SET status = :status, uncovered = :uncovered, failure = :failure, points = :points,
    records = :records, repeated = :repeated,
    attempts = 0, folded_at = :folded_at, fold_position = 0, fold_state = NULL
WHERE id = :id AND status = :expected
RETURNING account_id, received_at

-- write_step --
-- One step of a fold in steps, guarded by the status and the position the fold read;
-- the delivery is (again) pending, resumable after the position, its attempt count 1:
-- this fold's, still running (a crash from here on counts once). Returns the layer (no
-- row: a guard failed).
UPDATE deliveries
SET status = 'pending', fold_position = :position, fold_state = :state, points = :points,
    records = :records, repeated = :repeated,
    attempts = 1
WHERE id = :id AND status = :expected AND fold_position = :after
RETURNING account_id, received_at

-- write_last_step --
-- The outcome of a fold in steps, with its last step: guarded like write_step; the
-- position goes back to 0 (a later fold starts from the beginning), the state stays as
-- the delivery's report.
UPDATE deliveries
SET status = :status, uncovered = :uncovered, failure = :failure, points = :points,
    records = :records, repeated = :repeated,
    attempts = 0, folded_at = :folded_at, fold_position = 0, fold_state = :state
WHERE id = :id AND status = :expected AND fold_position = :after
RETURNING account_id, received_at

-- delivery_status --
-- A delivery's status, to say why an outcome's guard failed.
SELECT status FROM deliveries WHERE id = :id

-- deliveries --
-- The deliveries listing, under the core's filters, oldest or newest first.
SELECT id, account_id, received_at, archive_key, size, content_type, status, uncovered,
       points, attempts, failure, folded_at, headers, fold_position, fold_state,
       records, body_removed_at, repeated
FROM deliveries
WHERE true /*and*/
ORDER BY received_at /*order*/, id /*order*/
/*limit*/

-- has_uncovered --
-- A filter: the delivery's uncovered list names the key.
EXISTS (SELECT 1 FROM json_each(deliveries.uncovered) WHERE value = :uncovered_key)

-- retention_due --
-- A page of the bodies retention may remove: parsed, received before the age, not yet
-- marked, after a (received_at, id) cursor; from deliveries_status, in its order.
SELECT id, archive_key, received_at FROM deliveries
WHERE status = 'parsed' AND body_removed_at IS NULL AND received_at < :before
  AND (received_at, id) > (:received_at, :id)
ORDER BY received_at, id
LIMIT :limit

-- mark_body_removed --
-- Mark one delivery's body removed, before it is deleted; only a parsed, unmarked row.
UPDATE deliveries SET body_removed_at = :at
WHERE id = :id AND status = 'parsed' AND body_removed_at IS NULL

-- removed_bodies --
-- A page of the deliveries whose bodies retention marked removed, after a cursor.
SELECT id, archive_key, received_at FROM deliveries
WHERE body_removed_at IS NOT NULL AND (received_at, id) > (:received_at, :id) /*and*/
ORDER BY received_at, id
LIMIT :limit

-- unconfirmed_removals --
-- A page of the bodies retention marked removed and has not seen deleted yet (what a
-- crash between the mark and the delete left), after a cursor.
SELECT id, archive_key, received_at FROM deliveries
WHERE body_removed_at IS NOT NULL AND body_deleted_at IS NULL
  AND (received_at, id) > (:received_at, :id)
ORDER BY received_at, id
LIMIT :limit

-- confirm_body_deleted --
-- The archive deleted a marked body: later runs need not delete it again.
UPDATE deliveries SET body_deleted_at = :at
WHERE id = :id AND body_removed_at IS NOT NULL AND body_deleted_at IS NULL

-- count_removed_bodies --
-- How many deliveries' bodies retention removed.
SELECT count(*) FROM deliveries WHERE body_removed_at IS NOT NULL /*and*/

-- watch_notices --
-- What the watch told each target: the rules that held when told, not recovered since.
SELECT target, rule_key, subject, told_at, state FROM watch_notices ORDER BY target, rule_key

-- add_watch_notice --
-- A target told that a rule holds; a second add of one (target, rule) changes nothing.
INSERT INTO watch_notices (target, rule_key, subject, told_at, state)
VALUES (:target, :rule_key, :subject, :told_at, :state)
ON CONFLICT (target, rule_key) DO NOTHING

-- move_watch_notice --
-- A notice moved on from where one evaluator saw it (its state and claim time) to
-- another state and time: changes nothing if another evaluator moved it first.
UPDATE watch_notices SET state = :state, told_at = :at
WHERE target = :target AND rule_key = :rule_key
  AND state = :was_state AND told_at = :was_at

-- delete_watch_notice --
-- A target's notice ended (its "recovered" is being told).
DELETE FROM watch_notices WHERE target = :target AND rule_key = :rule_key

-- retire_token --
-- An account's token hash as it was before a rotation: kept to tell a stale phone apart
-- from a stranger (a second retire of one hash changes nothing).
INSERT INTO retired_tokens (token_hash, account_id, retired_at)
VALUES (:token_hash, :account_id, :retired_at)
ON CONFLICT (token_hash) DO NOTHING

-- is_retired_token --
-- Whether a token hash is a retired one (a read: a stranger's tries take no write lock).
SELECT 1 FROM retired_tokens WHERE token_hash = :token_hash

-- note_refused_token --
-- A request refused for a token that is a retired one of an account: counted.
UPDATE retired_tokens
SET refused = refused + 1,
    first_refused_at = coalesce(first_refused_at, :at),
    last_refused_at = :at
WHERE token_hash = :token_hash

-- stale_tokens --
-- An account's retired tokens that requests still came with, the latest refused first.
SELECT retired_at, refused, first_refused_at, last_refused_at
FROM retired_tokens
WHERE account_id = :account_id AND refused > 0
ORDER BY last_refused_at DESC

-- summary_pending --
-- The queue's length and its oldest delivery.
SELECT count(*), min(received_at) FROM deliveries WHERE status = 'pending' /*and*/

-- summary_settled --
-- The folded deliveries per status.
SELECT status, count(*) FROM deliveries WHERE status <> 'pending' /*and*/ GROUP BY status

-- summary_failures --
-- The failed deliveries per failure class.
SELECT failure, count(*) FROM deliveries WHERE status = 'failed' /*and*/ GROUP BY failure

-- summary_last --
-- When the last delivery arrived.
SELECT max(received_at) FROM deliveries WHERE true /*and*/

-- summary_uncovered --
-- Per uncovered key, the deliveries naming it (DISTINCT: a key named twice counts once).
SELECT item.value, count(DISTINCT deliveries.id)
FROM deliveries, json_each(deliveries.uncovered) AS item
WHERE deliveries.uncovered <> '[]' /*and*/
GROUP BY item.value

-- summary_points --
-- Rows in the showcase's points.
SELECT count(*) FROM points WHERE true /*and*/

-- summary_records --
-- Records per section.
SELECT section, count(*) FROM records WHERE true /*and*/ GROUP BY section

-- export_points --
-- Showcase points under the core's filters, in export (primary key) order.
SELECT account_id, metric, field, source, start, utc_offset, "end", qty, text, unit, extra,
       seq, layer_received_at, layer_id
FROM points
WHERE true /*and*/
ORDER BY account_id, metric, start, field, source, seq

-- point_metrics --
-- The (account, metric) pairs of the series under the core's filters, in export order:
-- an export of every metric reads their points one metric at a time.
SELECT DISTINCT account_id, metric FROM series WHERE true /*and*/ ORDER BY account_id, metric

-- export_records --
-- Records under the core's filters, in export order (those without a start first).
SELECT r.account_id, r.section, r.identity, r.start, r."end", r.utc_offset, r.name,
       r.source, r.body, r.layer_received_at, r.layer_id
FROM records AS r
WHERE true /*and*/
ORDER BY r.account_id, r.section, r.start, r.identity

-- export_record_items --
-- The items of those records, in the same order, then by (series, seq): the core
-- merges the two streams. CROSS JOIN makes records the outer loop (SQLite's documented
-- way to fix the join order), so the items come in record order and only each record's
-- own items are sorted, never the whole export's.
SELECT r.account_id, r.section, r.identity, i.series, i.seq, i.t, i.qty, i.lat, i.lon,
       i.alt, i.unit, i.extra
FROM records AS r
CROSS JOIN record_items AS i
WHERE i.account_id = r.account_id AND i.section = r.section AND i.identity = r.identity
  /*and*/
ORDER BY r.account_id, r.section, r.start, r.identity, i.series, i.seq

-- fingerprint_points --
-- The fingerprint's first table: every point, in key order.
SELECT account_id, metric, field, source, start, utc_offset, "end", qty, text, unit, extra,
       seq, layer_received_at, layer_id
FROM points WHERE true /*and*/
ORDER BY account_id, metric, start, field, source, seq

-- fingerprint_records --
-- The fingerprint's second table: every record, in key order.
SELECT account_id, section, identity, start, "end", utc_offset, name, source, body,
       layer_received_at, layer_id
FROM records WHERE true /*and*/
ORDER BY account_id, section, identity

-- fingerprint_series --
-- The fingerprint's third table: every series' winning layer, in key order.
SELECT account_id, section, identity, series, layer_received_at, layer_id
FROM record_series WHERE true /*and*/
ORDER BY account_id, section, identity, series

-- fingerprint_items --
-- The fingerprint's fourth table: every item, in key order.
SELECT account_id, section, identity, series, seq, t, qty, lat, lon, alt, unit, extra
FROM record_items WHERE true /*and*/
ORDER BY account_id, section, identity, series, seq

-- export_records_alone --
-- Records under the core's filters, in export order, without their items (a listing).
SELECT r.account_id, r.section, r.identity, r.start, r."end", r.utc_offset, r.name,
       r.source, r.body, r.layer_received_at, r.layer_id
FROM records AS r
WHERE true /*and*/
ORDER BY r.account_id, r.section, r.start, r.identity

-- catalog --
-- Per metric, field, unit and source of an account: the points its deliveries brought
-- (a point sent twice counts twice), the first and last start; from delivery_extents,
-- a row per delivery and series, not a scan of every point.
SELECT metric, field, unit, source, sum(points), min(first_start),
       max(last_start)
FROM delivery_extents WHERE account_id = :account_id
GROUP BY metric, field, unit, source
ORDER BY metric, field, unit, source

-- point_buckets --
-- A metric's field summed up per bucket of the phone's local time (the bucket_* below).
SELECT /*bucket!*/ AS bucket, count(*), min(qty), avg(qty), max(qty), sum(qty)
FROM points
WHERE account_id = :account_id AND metric = :metric AND field = :field /*and*/
GROUP BY bucket
ORDER BY bucket

-- spanning_points --
-- A metric field's points whose end is in another bucket than their start (the span
-- condition), in a range of starts: a cumulative metric spreads them over the buckets
-- they span (clock.spread), where point_buckets sums the others.
SELECT start, "end", utc_offset, qty
FROM points
WHERE account_id = :account_id AND metric = :metric AND field = :field
  /*and*/ AND /*span!*/

-- spanning_day_points --
-- A metric's points whose end is on another day of the phone's clock than their start
-- (the span condition), in a range of starts: keep_day_sums adds their parts per day.
SELECT field, source, start, "end", utc_offset, qty, layer_id
FROM points
WHERE account_id = :account_id AND metric = :metric
  AND start >= :low AND start < :high AND /*span!*/

-- add_day_part --
-- A spanning point's part of a day added to the day's sums (a row made if there was
-- none); a day a part joins counts as of several sources, so the overlap rule reads it
-- from its points.
INSERT INTO point_day_sums (account_id, metric, field, day, points, valued, total, low, high,
                            first_start, last_start, sources, imported)
VALUES (:account_id, :metric, :field, :day, :points,
        :valued, :total, :low, :high, :first_start,
        :last_start, :sources, :imported)
ON CONFLICT (account_id, metric, field, day) DO UPDATE SET
    points = point_day_sums.points + excluded.points,
    valued = point_day_sums.valued + excluded.valued,
    total = CASE WHEN point_day_sums.total IS NULL THEN excluded.total
                 WHEN excluded.total IS NULL THEN point_day_sums.total
                 ELSE point_day_sums.total + excluded.total END,
    low = CASE WHEN point_day_sums.low IS NULL OR excluded.low < point_day_sums.low
               THEN excluded.low ELSE point_day_sums.low END,
    high = CASE WHEN point_day_sums.high IS NULL OR excluded.high > point_day_sums.high
                THEN excluded.high ELSE point_day_sums.high END,
    first_start = CASE WHEN excluded.first_start < point_day_sums.first_start
                       THEN excluded.first_start ELSE point_day_sums.first_start END,
    last_start = CASE WHEN excluded.last_start > point_day_sums.last_start
                      THEN excluded.last_start ELSE point_day_sums.last_start END,
    sources = 2,
    imported = point_day_sums.imported + excluded.imported

-- day_sum_metrics --
-- Every account's metrics that have kept day sums (migration 0018 sums them again).
SELECT DISTINCT account_id, metric FROM point_day_sums ORDER BY account_id, metric

-- day_sum_days --
-- One account's metric's days that have kept sums.
SELECT DISTINCT day FROM point_day_sums
WHERE account_id = :account_id AND metric = :metric
ORDER BY day

-- clear_day_sums --
-- A metric's days of the phone's clock in [day_low, day_high], before keep_day_sums sums
-- them again: a day no point is on any more has no row.
DELETE FROM point_day_sums
WHERE account_id = :account_id AND metric = :metric
  AND day >= :day_low AND day <= :day_high

-- clear_counted_days --
-- A metric's counted days in [day_low, day_high], whose sums keep_day_sums recomputes:
-- the fold counts them again (count_days).
DELETE FROM counted_days
WHERE account_id = :account_id AND metric = :metric
  AND day >= :day_low AND day <= :day_high

-- keep_day_sums --
-- A metric's days of the phone's clock in [day_low, day_high], recomputed whole from the
-- showcase's points in a range of starts that holds every point of those days
-- (point_day_sums): what a GROUP BY of each day's points gives, whatever was there.
-- `sources` is 1 or 2 (one source, or more: what the overlap rule asks), `imported` the
-- count of points an import brought (count_imported; 0 for an account without imports).
INSERT INTO point_day_sums (account_id, metric, field, day, points, valued, total, low, high,
                            first_start, last_start, sources, imported)
SELECT :account_id, :metric, field, day, count(*), count(qty), sum(qty),
       min(qty), max(qty), min(start), max(start),
       CASE WHEN min(source) = max(source) THEN 1 ELSE 2 END, /*imported!*/
FROM (SELECT field, source, start, qty, layer_id, /*day!*/ AS day
      FROM points
      WHERE account_id = :account_id AND metric = :metric
        AND start >= :low AND start < :high AND /*stays*/true) AS near
WHERE day >= :day_low AND day <= :day_high
GROUP BY field, day
ON CONFLICT (account_id, metric, field, day) DO UPDATE SET
    points = excluded.points,
    valued = excluded.valued,
    total = excluded.total,
    low = excluded.low,
    high = excluded.high,
    first_start = excluded.first_start,
    last_start = excluded.last_start,
    sources = excluded.sources,
    imported = excluded.imported

-- count_imported --
-- How many of a day's points an import brought (keep_day_sums' imported slot).
count(CASE WHEN layer_id IN (
    SELECT id FROM deliveries
    WHERE account_id = :account_id AND content_type IN (:zip, :xml))
    THEN 1 END)

-- day_sums --
-- A metric field's days of the phone's clock in [day_from, day_to), summed up as the fold
-- keeps them (point_day_sums).
SELECT day, points, valued, total, low, high, first_start, last_start, sources, imported
FROM point_day_sums
WHERE account_id = :account_id AND metric = :metric AND field = :field
  AND day >= :day_from AND day < :day_to
ORDER BY day

-- imported_deliveries --
-- The deliveries of an account that are imports of the Health app's export (their
-- content types): the origin the overlap rule tells apart from HAE's (healthlog.overlap).
SELECT id FROM deliveries WHERE account_id = :account_id AND content_type IN (:zip, :xml)

-- metric_days --
-- Per metric, the points of an account on each day of the phone's clock (point_days,
-- kept as the fold writes).
SELECT metric, day, points
FROM point_days
WHERE account_id = :account_id AND points > 0 /*and*/
ORDER BY metric, day

-- last_data_day --
-- An account's last day of the phone's clock with points (point_days): where the
-- coverage page's default range ends.
SELECT max(day) FROM point_days WHERE account_id = :account_id AND points > 0

-- late_days --
-- Per metric, the days of an account with points that arrived late, and how many.
SELECT metric, day, late
FROM point_days
WHERE account_id = :account_id AND late > 0 /*and*/
ORDER BY metric, day

-- metric_bars --
-- Per metric, the newest start that the HAE deliveries of an account received before
-- this one brought (delivery_extents): a point this delivery is first to bring is late
-- when it is older. Imports of the Health app's export (their content types) neither
-- raise the bar nor have one: none of their points is late (docs/dashboard.md).
SELECT metric, max(last_start)
FROM delivery_extents
WHERE account_id = :account_id AND (received_at, delivery_id) < (:received_at, :delivery_id)
  AND delivery_id NOT IN (SELECT id FROM deliveries
                          WHERE account_id = :account_id AND content_type IN (:zip, :xml))
  AND NOT EXISTS (SELECT 1 FROM deliveries
                  WHERE id = :delivery_id AND content_type IN (:zip, :xml))
GROUP BY metric

-- day_tally --
-- A metric's showcase points in a range of starts, per day of the phone's clock, and how
-- many are older than a bar; read before and after a delivery is written, the difference
-- is what that delivery brought first.
SELECT /*day!*/ AS day, count(*), count(CASE WHEN start < :bar THEN 1 END)
FROM points
WHERE account_id = :account_id AND metric = :metric AND start >= :low AND start < :high
GROUP BY day

-- own_points --
-- A metric's points in a range of starts that a delivery's own layer holds: what the
-- earlier steps of a fold in steps (or an earlier fold of the delivery) wrote, which a
-- step's samples of one shared key must not overwrite (Journal.write_step).
SELECT field, source, start, seq, "end", qty, text, unit, extra
FROM points
WHERE account_id = :account_id AND metric = :metric AND start >= :low AND start < :high
  AND layer_id = :delivery_id

-- add_point_days --
-- Add what a delivery brought first to a day's counts.
INSERT INTO point_days (account_id, metric, day, points, late)
VALUES (:account_id, :metric, :day, :points, :late)
ON CONFLICT (account_id, metric, day) DO UPDATE SET
    points = point_days.points + excluded.points,
    late = point_days.late + excluded.late

-- late_import_accounts --
-- The accounts that have imports of the Health app's export (migration 0019).
SELECT DISTINCT account_id FROM deliveries WHERE content_type IN (:zip, :xml)
ORDER BY account_id

-- late_import_extents --
-- An account's deliveries in order with, per metric, the first and last start each
-- brought, and whether it is an import (migration 0019 replays the late rule's bars).
SELECT e.delivery_id, e.metric, min(e.first_start), max(e.last_start),
       CASE WHEN e.delivery_id IN (SELECT id FROM deliveries
                                   WHERE account_id = :account_id
                                     AND content_type IN (:zip, :xml))
            THEN 1 ELSE 0 END
FROM delivery_extents AS e
WHERE e.account_id = :account_id
GROUP BY e.received_at, e.delivery_id, e.metric
ORDER BY e.received_at, e.delivery_id, e.metric

-- late_import_days --
-- A metric's points in a range of starts, of one origin (an import's layer or HAE's),
-- per day of the phone's clock: what migration 0019 takes off the late counts.
SELECT /*day!*/ AS day, count(*)
FROM points
WHERE account_id = :account_id AND metric = :metric AND start >= :low AND start < :high
  AND (layer_id IN (SELECT id FROM deliveries
                    WHERE account_id = :account_id AND content_type IN (:zip, :xml)))
      = (:imported = 1)
GROUP BY day

-- late_import_unlate --
-- Take a number of points off a day's late count (never below 0).
UPDATE point_days SET late = CASE WHEN late > :points THEN late - :points ELSE 0 END
WHERE account_id = :account_id AND metric = :metric AND day = :day

-- delete_extents --
-- What a delivery brought, forgotten before its outcome is written again.
DELETE FROM delivery_extents WHERE delivery_id = :delivery_id

-- insert_extent --
-- What a delivery brought of one series: first and last start, and how many points.
INSERT INTO delivery_extents (delivery_id, metric, field, unit, source, account_id,
                              received_at, first_start, last_start, points)
VALUES (:delivery_id, :metric, :field, :unit, :source,
        :account_id, :received_at, :first_start, :last_start,
        :points)

-- merge_extent --
-- What one step of a fold in steps brought of one series, added to what the delivery's
-- earlier steps brought.
INSERT INTO delivery_extents (delivery_id, metric, field, unit, source, account_id,
                              received_at, first_start, last_start, points)
VALUES (:delivery_id, :metric, :field, :unit, :source,
        :account_id, :received_at, :first_start, :last_start,
        :points)
ON CONFLICT (delivery_id, metric, field, unit, source) DO UPDATE SET
    first_start = min(delivery_extents.first_start, excluded.first_start),
    last_start = max(delivery_extents.last_start, excluded.last_start),
    points = delivery_extents.points + excluded.points

-- local_start --
-- A row's start on the phone's clock, as text that sorts as the times do (the text of a
-- clock.Wall bound): its start plus its offset, the fraction kept; off the calendar's
-- ends there, its UTC text. `/*a*/` takes the table's alias.
coalesce(strftime('%Y-%m-%dT%H:%M:%S', /*a*/start, coalesce(/*a*/utc_offset, 0) || ' minutes')
         || substr(/*a*/start, 20, 7), /*a*/start)

-- bucket_minute --
-- The minute of a point on the phone's clock (an expression for a bucket slot); off the
-- calendar's ends there (year 1 moved back, 9999 on), its UTC minute, as for every bucket.
coalesce(strftime('%Y-%m-%dT%H:%M', start, coalesce(utc_offset, 0) || ' minutes'),
         strftime('%Y-%m-%dT%H:%M', start))

-- bucket_hour --
-- The hour of a point on the phone's clock.
coalesce(strftime('%Y-%m-%dT%H:00', start, coalesce(utc_offset, 0) || ' minutes'),
         strftime('%Y-%m-%dT%H:00', start))

-- bucket_day --
-- The day of a point on the phone's clock. Most points stay on their UTC day once the
-- offset is added, and for them the day is the text's first ten characters: date(), its
-- modifier and its parse, only for the rest (a tenth of the time of a year's coverage).
CASE WHEN substr(start, 12, 2) * 60 + substr(start, 15, 2) + coalesce(utc_offset, 0)
          BETWEEN 0 AND 1439
     THEN substr(start, 1, 10)
     -- date() gives NULL off the calendar's ends (year 1 moved back): the UTC day then
     ELSE coalesce(date(start, coalesce(utc_offset, 0) || ' minutes'), substr(start, 1, 10))
END

-- bucket_week --
-- The Monday of a point's week on the phone's clock.
coalesce(date(start, coalesce(utc_offset, 0) || ' minutes', '-6 days', 'weekday 1'),
         date(start, '-6 days', 'weekday 1'))

-- bucket_month --
-- The first day of a point's month on the phone's clock.
coalesce(strftime('%Y-%m-01', start, coalesce(utc_offset, 0) || ' minutes'),
         strftime('%Y-%m-01', start))

-- account_series --
-- An account's series: the identity, then the id and the two keys a point row takes.
SELECT metric, field, source, unit, id, metric_key, point_key
FROM series WHERE account_id = :account_id

-- lock_series --
-- Nothing to do: the write's transaction is BEGIN IMMEDIATE, which excludes others.
SELECT 1

-- add_series --
-- A new series, with the keys of its metric's and its point key's first series if they
-- have one, its own id if not (migration 0011).
INSERT INTO series (id, account_id, metric, field, source, unit, metric_key, point_key)
SELECT n.id, :account_id, :metric, :field, :source, :unit,
       coalesce((SELECT metric_key FROM series
                 WHERE account_id = :account_id AND metric = :metric LIMIT 1), n.id),
       coalesce((SELECT point_key FROM series
                 WHERE account_id = :account_id AND metric = :metric AND field = :field
                   AND source = :source LIMIT 1), n.id)
FROM (SELECT coalesce(max(id), 0) + 1 AS id FROM series) AS n
WHERE true
ON CONFLICT (account_id, metric, field, source, unit) DO NOTHING

-- upsert_point --
-- One point under the layer guard: a stored point is overwritten only by a layer that
-- is not older, so the newest layer wins whatever order deliveries are folded in, and
-- refolding a delivery rewrites the same values. The key is the point's (metric_key,
-- start, point_key, seq): a point sent in another unit than the stored one meets it here, and
-- the guard gives it or keeps it its series (its unit) with the other values.
INSERT INTO point_rows (metric_key, point_key, series_id, start, utc_offset, "end", qty,
                        text, extra, seq, layer_received_at, layer_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (metric_key, start, point_key, seq) DO UPDATE SET
    series_id = excluded.series_id,
    utc_offset = excluded.utc_offset,
    "end" = excluded."end",
    qty = excluded.qty,
    text = excluded.text,
    extra = excluded.extra,
    layer_received_at = excluded.layer_received_at,
    layer_id = excluded.layer_id
WHERE (excluded.layer_received_at, excluded.layer_id)
      >= (point_rows.layer_received_at, point_rows.layer_id)

-- upsert_record --
-- One record's row under the same layer guard; its series are guarded one by one.
INSERT INTO records (section, identity, start, "end", utc_offset, name, source, body,
                     account_id, layer_received_at, layer_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (account_id, section, identity) DO UPDATE SET
    start = excluded.start,
    "end" = excluded."end",
    utc_offset = excluded.utc_offset,
    name = excluded.name,
    source = excluded.source,
    body = excluded.body,
    layer_received_at = excluded.layer_received_at,
    layer_id = excluded.layer_id
WHERE (excluded.layer_received_at, excluded.layer_id)
      >= (records.layer_received_at, records.layer_id)

-- series_layer --
-- The layer that holds a record's series now.
SELECT layer_received_at, layer_id FROM record_series
WHERE account_id = ? AND section = ? AND identity = ? AND series = ?

-- delete_series_items --
-- A series' stored items, before the layer that won it writes its own.
DELETE FROM record_items WHERE account_id = ? AND section = ? AND identity = ? AND series = ?

-- insert_item --
-- One item of a series.
INSERT INTO record_items (account_id, section, identity, series, seq, t, qty, lat, lon, alt,
                          unit, extra)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- upsert_series --
-- Give a series to the layer that won it.
INSERT INTO record_series (account_id, section, identity, series, layer_received_at, layer_id)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (account_id, section, identity, series) DO UPDATE SET
    layer_received_at = excluded.layer_received_at,
    layer_id = excluded.layer_id

-- has_migrations --
-- Whether the database has the migrations' table (a journal's, migrated at least once).
SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = 'schema_migrations'

-- schema_version --
-- The newest migration applied (NULL before any): what a read-only caller checks.
SELECT max(version) FROM schema_migrations

-- guarded_names --
-- The journal's tables and views, which a query reads only through the tool's views.
-- The MCP server's SQL tool: its guarded session (healthlog.sql_guard says the policy,
-- journal/sqlite.py's SqliteGuard opens it). The file is opened read-only; each view is
-- TEMP, in the session's own schema, bound to the account by the `account` slot (the id as a
-- quoted literal: a view takes no parameters); an authorizer lets a query read the
-- journal's tables only through them. The views' columns are those sql_guard.VIEWS
-- describes, in that order.
SELECT name FROM main.sqlite_master WHERE type IN ('table', 'view')

-- points_definition --
-- The `points` view as the schema holds it (the one definition): my_points reads its
-- tables by this text, so that the authorizer sees my_points as their reader.
SELECT sql FROM main.sqlite_master WHERE type = 'view' AND name = 'points'

-- guarded_view --
-- One of the tool's views, in the session's temporary schema.
CREATE TEMP VIEW /*view!*/ AS /*body!*/

-- guarded_my_points --
-- The account's points, from the body of `points` (/*points!*/), with the local start.
SELECT metric, field, source, start,
       strftime('%Y-%m-%dT%H:%M:%S', start, coalesce(utc_offset, 0) || ' minutes') AS local_start,
       utc_offset, "end", qty, text, unit, extra, layer_id AS delivery_id
FROM (/*points!*/)
WHERE account_id = /*account!*/

-- guarded_my_records --
-- The account's records.
SELECT section, identity, start, "end", utc_offset, name, source, body,
       layer_id AS delivery_id
FROM main.records WHERE account_id = /*account!*/

-- guarded_my_record_items --
-- The account's records' series.
SELECT section, identity, series, seq, t, qty, lat, lon, alt, unit, extra
FROM main.record_items WHERE account_id = /*account!*/

-- guarded_my_deliveries --
-- The account's deliveries, without their headers and bodies.
SELECT id, received_at, status, size, content_type, points, uncovered, failure, attempts,
       folded_at
FROM main.deliveries WHERE account_id = /*account!*/

-- guarded_my_delivery_extents --
-- What each of the account's deliveries brought of each series.
SELECT delivery_id, metric, field, unit, source, received_at, first_start, last_start, points
FROM main.delivery_extents WHERE account_id = /*account!*/

-- guarded_my_point_days --
-- The account's points and late points per metric and local day.
SELECT metric, day, points, late FROM main.point_days WHERE account_id = /*account!*/

-- guarded_my_daily --
-- The table my_daily is kept in: its values come from the reads' overlap rule, in Python.
CREATE TEMP TABLE my_daily (metric TEXT, field TEXT, unit TEXT, value_is TEXT, day TEXT,
                            value DOUBLE PRECISION, points BIGINT)

-- guarded_clear_daily --
-- my_daily emptied, before it is filled again.
DELETE FROM temp.my_daily

-- guarded_add_daily --
-- One row of my_daily (positional, with executemany).
INSERT INTO temp.my_daily (metric, field, unit, value_is, day, value, points)
VALUES (?, ?, ?, ?, ?, ?, ?)

-- counted_days --
-- A metric field's days in [day_from, day_to) as the overlap rule counted them, for one
-- source priority (the fold keeps them: keep_counted_day).
SELECT day, points, valued, total, low, high
FROM counted_days
WHERE account_id = :account_id AND metric = :metric AND field = :field
  AND priority = :priority AND day >= :day_from AND day < :day_to
ORDER BY day

-- uncounted_days --
-- An account's kept days the overlap rule may count otherwise than their sums (several
-- sources, or an import beside other points) that have no counted row for the priority,
-- the oldest first.
SELECT s.metric, s.field, s.day
FROM point_day_sums s
LEFT JOIN counted_days c
  ON c.account_id = s.account_id AND c.metric = s.metric AND c.field = s.field
 AND c.day = s.day AND c.priority = :priority
WHERE s.account_id = :account_id AND c.day IS NULL
  AND (s.sources > 1 OR (s.imported > 0 AND s.imported < s.points))
ORDER BY s.metric, s.field, s.day
LIMIT :limit

-- keep_counted_day --
-- A day as the overlap rule counted it, for one source priority.
INSERT INTO counted_days (account_id, metric, field, day, priority, points, valued, total,
                          low, high)
VALUES (:account_id, :metric, :field, :day, :priority, :points,
        :valued, :total, :low, :high)
ON CONFLICT (account_id, metric, field, day, priority) DO UPDATE SET
    points = excluded.points, valued = excluded.valued, total = excluded.total,
    low = excluded.low, high = excluded.high
