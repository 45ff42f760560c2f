-- The PostgreSQL journal's statements: each under a `-- name --` line and a one-line
-- description, loaded once by healthlog.journal.statements. Parameters are psycopg's
-- named style (%(name)s); a literal percent sign would be written %%.
--
-- The values the journal core passes and reads back are the port's: times as
-- fixed-width UTC text, lists as JSON text. The columns are timestamptz, text[] and
-- jsonb, so the conversions are here, at the edge: times go in as text (cast where
-- the type is not implied) and come out through
--   to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
-- (the port's text to the microsecond, year 1 included); uncovered lists go in through
-- jsonb_array_elements_text and come out as to_json(...)::text. A showcase row reads
-- back exactly as it was written, and the fingerprint hashes the very rows SQLite
-- hashes. A `/*name*/` comment is a slot where the core puts a fixed fragment (filters
-- of its own making, never a value): unfilled, it is only a comment.

-- lock_migrations --
-- One migrator at a time: a second process starting at once waits, then finds them applied.
-- (Advisory lock keys are fixed and per database; the migrators' key is b"hl:migr\0" and
-- the fold's b"hl:fold\0", read as big-endian integers.)
SELECT pg_advisory_xact_lock(7524453319023489536)

-- applied_migrations --
-- The versions recorded as applied.
SELECT version FROM schema_migrations

-- record_migration --
-- Record a migration as applied, in the transaction that applied it.
INSERT INTO schema_migrations (version, name, applied_at)
VALUES (%(version)s, %(name)s, %(applied_at)s)

-- add_account --
-- A new account; the unique name, token hash and id are the database's to enforce.
INSERT INTO accounts (id, name, token_hash, created_at)
VALUES (%(id)s, %(name)s, %(token_hash)s, %(created_at)s)

-- set_token_hash --
-- Replace an account's token hash.
UPDATE accounts SET token_hash = %(token_hash)s WHERE id = %(id)s

-- set_time_zone --
-- Set the zone in which an account's offset-less times are read.
UPDATE accounts SET time_zone = %(time_zone)s WHERE id = %(id)s

-- set_unit_system --
-- Set the units an account's figures are shown in (metric, imperial).
UPDATE accounts SET unit_system = %(unit_system)s WHERE id = %(id)s

-- token_hash --
-- An account's stored token hash.
SELECT token_hash FROM accounts WHERE id = %(id)s

-- account_by_id --
-- One account by its id.
SELECT id, name, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       time_zone, unit_system
FROM accounts WHERE id = %(id)s

-- account_by_token_hash --
-- The account a token hash belongs to.
SELECT id, name, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       time_zone, unit_system
FROM accounts WHERE token_hash = %(token_hash)s

-- accounts --
-- Every account, by name.
SELECT id, name, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       time_zone, unit_system
FROM accounts ORDER BY name

-- insert_delivery --
-- Journal a delivery as pending; a second insert of one id changes nothing.
INSERT INTO deliveries (id, account_id, received_at, archive_key, size, content_type, headers)
VALUES (%(id)s, %(account_id)s, %(received_at)s, %(archive_key)s, %(size)s,
        %(content_type)s, %(headers)s::jsonb)
ON CONFLICT (id) DO NOTHING

-- pending_page --
-- Pending deliveries strictly after a (received_at, id) cursor, in that order.
-- `status = 'pending'` is literal: the planner can only prove the partial index
-- deliveries_pending applies to a literal (also in a prepared statement's generic
-- plan). The row value is one index condition: a range of that index from the cursor
-- on, in order, with no sort.
SELECT to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), id
FROM deliveries
WHERE status = 'pending' AND (received_at, id) > (%(received_at)s::timestamptz, %(id)s)
ORDER BY received_at, id
LIMIT %(limit)s

-- count_pending --
-- The backlog, counted in the partial index: its cost is the backlog, not the journal.
SELECT count(*) FROM deliveries WHERE status = 'pending'

-- get_delivery --
-- One delivery with every column the port has.
SELECT id, account_id,
       to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       archive_key, size, content_type, status, to_json(uncovered)::text, points, attempts,
       failure, to_char(folded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       headers::text, fold_position, fold_state, records,
       to_char(body_removed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), repeated
FROM deliveries WHERE id = %(id)s

-- begin_attempt --
-- Count a fold attempt; returns the new count (no row: no such delivery).
UPDATE deliveries SET attempts = attempts + 1 WHERE id = %(id)s RETURNING attempts

-- release_attempt --
-- Undo a counted attempt of a fold that circumstances stopped.
UPDATE deliveries SET attempts = greatest(attempts - 1, 0) WHERE id = %(id)s

-- write_outcome --
-- The outcome, guarded by the expected status; returns the layer (no row: guard failed).
-- The UPDATE locks the delivery row, so a second writer waits for the first to commit,
-- then finds the status changed and updates nothing (READ COMMITTED re-checks the
-- WHERE on the row's newest version).
UPDATE deliveries
SET status = %(status)s,
    uncovered = ARRAY(SELECT jsonb_array_elements_text(%(uncovered)s::jsonb)),
    failure = %(failure)s, points = %(points)s, records = %(records)s,
    repeated = %(repeated)s, attempts = 0,
    folded_at = %(folded_at)s,
    fold_position = 0, fold_state = NULL
WHERE id = %(id)s AND status = %(expected)s
RETURNING account_id,
          to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')

-- write_step --
-- One step of a fold in steps, guarded by the status and the position the fold read;
-- the delivery is (again) pending, resumable after the position, its attempt count 1:
-- this fold's, still running (a crash from here on counts once). Returns the layer (no
-- row: a guard failed). Locks the row as write_outcome does.
UPDATE deliveries
SET status = 'pending', fold_position = %(position)s, fold_state = %(state)s,
    points = %(points)s, records = %(records)s, repeated = %(repeated)s, attempts = 1
WHERE id = %(id)s AND status = %(expected)s AND fold_position = %(after)s
RETURNING account_id,
          to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')

-- write_last_step --
-- The outcome of a fold in steps, with its last step: guarded like write_step; the
-- position goes back to 0 (a later fold starts from the beginning), the state stays as
-- the delivery's report.
UPDATE deliveries
SET status = %(status)s,
    uncovered = ARRAY(SELECT jsonb_array_elements_text(%(uncovered)s::jsonb)),
    failure = %(failure)s, points = %(points)s, records = %(records)s,
    repeated = %(repeated)s, attempts = 0,
    folded_at = %(folded_at)s,
    fold_position = 0, fold_state = %(state)s
WHERE id = %(id)s AND status = %(expected)s AND fold_position = %(after)s
RETURNING account_id,
          to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')

-- delivery_status --
-- A delivery's status, to say why an outcome's guard failed.
SELECT status FROM deliveries WHERE id = %(id)s

-- deliveries --
-- The deliveries listing, under the core's filters, oldest or newest first.
SELECT id, account_id,
       to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       archive_key, size, content_type, status, to_json(uncovered)::text, points, attempts,
       failure, to_char(folded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       headers::text, fold_position, fold_state, records,
       to_char(body_removed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), repeated
FROM deliveries
WHERE true /*and*/
ORDER BY received_at /*order*/, id /*order*/
/*limit*/

-- has_uncovered --
-- A filter: the delivery's uncovered list names the key.
%(uncovered_key)s = ANY (uncovered)

-- retention_due --
-- A page of the bodies retention may remove: parsed, received before the age, not yet
-- marked, after a (received_at, id) cursor; from deliveries_status, in its order.
SELECT id, archive_key, to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM deliveries
WHERE status = 'parsed' AND body_removed_at IS NULL
  AND received_at < %(before)s::timestamptz
  AND (received_at, id) > (%(received_at)s::timestamptz, %(id)s)
ORDER BY received_at, id
LIMIT %(limit)s

-- mark_body_removed --
-- Mark one delivery's body removed, before it is deleted; only a parsed, unmarked row.
UPDATE deliveries SET body_removed_at = %(at)s::timestamptz
WHERE id = %(id)s AND status = 'parsed' AND body_removed_at IS NULL

-- removed_bodies --
-- A page of the deliveries whose bodies retention marked removed, after a cursor.
SELECT id, archive_key, to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM deliveries
WHERE body_removed_at IS NOT NULL
  AND (received_at, id) > (%(received_at)s::timestamptz, %(id)s) /*and*/
ORDER BY received_at, id
LIMIT %(limit)s

-- unconfirmed_removals --
-- A page of the bodies retention marked removed and has not seen deleted yet (what a
-- crash between the mark and the delete left), after a cursor.
SELECT id, archive_key, to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM deliveries
WHERE body_removed_at IS NOT NULL AND body_deleted_at IS NULL
  AND (received_at, id) > (%(received_at)s::timestamptz, %(id)s)
ORDER BY received_at, id
LIMIT %(limit)s

-- confirm_body_deleted --
-- The archive deleted a marked body: later runs need not delete it again.
UPDATE deliveries SET body_deleted_at = %(at)s::timestamptz
WHERE id = %(id)s AND body_removed_at IS NOT NULL AND body_deleted_at IS NULL

-- count_removed_bodies --
-- How many deliveries' bodies retention removed.
SELECT count(*) FROM deliveries WHERE body_removed_at IS NOT NULL /*and*/

-- watch_notices --
-- What the watch told each target: the rules that held when told, not recovered since.
SELECT target, rule_key, subject,
       to_char(told_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), state
FROM watch_notices ORDER BY target, rule_key

-- add_watch_notice --
-- A target told that a rule holds; a second add of one (target, rule) changes nothing.
INSERT INTO watch_notices (target, rule_key, subject, told_at, state)
VALUES (%(target)s, %(rule_key)s, %(subject)s, %(told_at)s::timestamptz, %(state)s)
ON CONFLICT (target, rule_key) DO NOTHING

-- move_watch_notice --
-- A notice moved on from where one evaluator saw it (its state and claim time) to
-- another state and time: changes nothing if another evaluator moved it first.
UPDATE watch_notices SET state = %(state)s, told_at = %(at)s::timestamptz
WHERE target = %(target)s AND rule_key = %(rule_key)s
  AND state = %(was_state)s AND told_at = %(was_at)s::timestamptz

-- delete_watch_notice --
-- A target's notice ended (its "recovered" is being told).
DELETE FROM watch_notices WHERE target = %(target)s AND rule_key = %(rule_key)s

-- retire_token --
-- An account's token hash as it was before a rotation: kept to tell a stale phone apart
-- from a stranger (a second retire of one hash changes nothing).
INSERT INTO retired_tokens (token_hash, account_id, retired_at)
VALUES (%(token_hash)s, %(account_id)s, %(retired_at)s)
ON CONFLICT (token_hash) DO NOTHING

-- is_retired_token --
-- Whether a token hash is a retired one (a read: a stranger's tries take no write lock).
SELECT 1 FROM retired_tokens WHERE token_hash = %(token_hash)s

-- note_refused_token --
-- A request refused for a token that is a retired one of an account: counted.
UPDATE retired_tokens
SET refused = refused + 1,
    first_refused_at = coalesce(first_refused_at, %(at)s),
    last_refused_at = %(at)s
WHERE token_hash = %(token_hash)s

-- stale_tokens --
-- An account's retired tokens that requests still came with, the latest refused first.
SELECT to_char(retired_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), refused,
       to_char(first_refused_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       to_char(last_refused_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM retired_tokens
WHERE account_id = %(account_id)s AND refused > 0
ORDER BY last_refused_at DESC

-- summary_pending --
-- The queue's length and its oldest delivery, from the partial index.
SELECT count(*), to_char(min(received_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM deliveries WHERE status = 'pending' /*and*/

-- summary_settled --
-- The folded deliveries per status.
SELECT status, count(*) FROM deliveries WHERE status <> 'pending' /*and*/ GROUP BY status

-- summary_failures --
-- The failed deliveries per failure class.
SELECT failure, count(*) FROM deliveries WHERE status = 'failed' /*and*/ GROUP BY failure

-- summary_last --
-- When the last delivery arrived.
SELECT to_char(max(received_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM deliveries WHERE true /*and*/

-- summary_uncovered --
-- Per uncovered key, the deliveries naming it (DISTINCT: a key named twice counts once).
SELECT key, count(DISTINCT deliveries.id)
FROM deliveries, unnest(deliveries.uncovered) AS key
WHERE deliveries.uncovered <> '{}' /*and*/
GROUP BY key

-- summary_points --
-- Rows in the showcase's points.
SELECT count(*) FROM points WHERE true /*and*/

-- summary_records --
-- Records per section.
SELECT section, count(*) FROM records WHERE true /*and*/ GROUP BY section

-- export_points --
-- Showcase points under the core's filters, in export (primary key) order.
SELECT account_id, metric, field, source,
       to_char(start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), utc_offset,
       to_char("end" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), qty, text, unit,
       extra, seq,
       to_char(layer_received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       layer_id
FROM points
WHERE true /*and*/
ORDER BY account_id, metric, start, field, source, seq

-- point_metrics --
-- The (account, metric) pairs of the series under the core's filters, in export order:
-- an export of every metric reads their points one metric at a time.
SELECT DISTINCT account_id, metric FROM series WHERE true /*and*/ ORDER BY account_id, metric

-- export_records --
-- Records under the core's filters, in export order (those without a start first).
SELECT r.account_id, r.section, r.identity,
       to_char(r.start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       to_char(r."end" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), r.utc_offset,
       r.name, r.source, r.body,
       to_char(r.layer_received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       r.layer_id
FROM records AS r
WHERE true /*and*/
ORDER BY r.account_id, r.section, r.start NULLS FIRST, r.identity

-- export_record_items --
-- The items of those records, in the same order, then by (series, seq): the core
-- merges the two streams.
SELECT r.account_id, r.section, r.identity, i.series, i.seq,
       to_char(i.t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), i.qty, i.lat,
       i.lon, i.alt, i.unit, i.extra
FROM records AS r
JOIN record_items AS i
  ON i.account_id = r.account_id AND i.section = r.section AND i.identity = r.identity
WHERE true /*and*/
ORDER BY r.account_id, r.section, r.start NULLS FIRST, r.identity, i.series, i.seq

-- fingerprint_points --
-- The fingerprint's first table: every point, in key order.
SELECT account_id, metric, field, source,
       to_char(start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), utc_offset,
       to_char("end" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), qty, text, unit,
       extra, seq,
       to_char(layer_received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       layer_id
FROM points WHERE true /*and*/
ORDER BY account_id, metric, start, field, source, seq

-- fingerprint_records --
-- The fingerprint's second table: every record, in key order.
SELECT account_id, section, identity,
       to_char(start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       to_char("end" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), utc_offset, name,
       source, body,
       to_char(layer_received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       layer_id
FROM records WHERE true /*and*/
ORDER BY account_id, section, identity

-- fingerprint_series --
-- The fingerprint's third table: every series' winning layer, in key order.
SELECT account_id, section, identity, series,
       to_char(layer_received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       layer_id
FROM record_series WHERE true /*and*/
ORDER BY account_id, section, identity, series

-- fingerprint_items --
-- The fingerprint's fourth table: every item, in key order.
SELECT account_id, section, identity, series, seq,
       to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), qty, lat, lon, alt,
       unit, extra
FROM record_items WHERE true /*and*/
ORDER BY account_id, section, identity, series, seq

-- export_records_alone --
-- Records under the core's filters, in export order, without their items (a listing).
SELECT r.account_id, r.section, r.identity,
       to_char(r.start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       to_char(r."end" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), r.utc_offset,
       r.name, r.source, r.body,
       to_char(r.layer_received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       r.layer_id
FROM records AS r
WHERE true /*and*/
ORDER BY r.account_id, r.section, r.start NULLS FIRST, r.identity

-- catalog --
-- Per metric, field, unit and source of an account: the points its deliveries brought
-- (a point sent twice counts twice), the first and last start; from delivery_extents,
-- a row per delivery and series, not a scan of every point.
SELECT metric, field, unit, source, sum(points), to_char(min(first_start) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       to_char(max(last_start) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM delivery_extents WHERE account_id = %(account_id)s
GROUP BY metric, field, unit, source
ORDER BY metric, field, unit, source

-- point_buckets --
-- A metric's field summed up per bucket of the phone's local time (the bucket_* below).
SELECT /*bucket!*/ AS bucket, count(*), min(qty), avg(qty), max(qty), sum(qty)
FROM points
WHERE account_id = %(account_id)s AND metric = %(metric)s AND field = %(field)s /*and*/
GROUP BY bucket
ORDER BY bucket

-- spanning_points --
-- A metric field's points whose end is in another bucket than their start (the span
-- condition), in a range of starts: a cumulative metric spreads them over the buckets
-- they span (clock.spread), where point_buckets sums the others.
SELECT to_char(start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), to_char("end" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), utc_offset, qty
FROM points
WHERE account_id = %(account_id)s AND metric = %(metric)s AND field = %(field)s
  /*and*/ AND /*span!*/

-- spanning_day_points --
-- A metric's points whose end is on another day of the phone's clock than their start
-- (the span condition), in a range of starts: keep_day_sums adds their parts per day.
SELECT field, source, to_char(start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), to_char("end" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), utc_offset, qty, layer_id
FROM points
WHERE account_id = %(account_id)s AND metric = %(metric)s
  AND start >= %(low)s AND start < %(high)s AND /*span!*/

-- add_day_part --
-- A spanning point's part of a day added to the day's sums (a row made if there was
-- none); a day a part joins counts as of several sources, so the overlap rule reads it
-- from its points.
INSERT INTO point_day_sums (account_id, metric, field, day, points, valued, total, low, high,
                            first_start, last_start, sources, imported)
VALUES (%(account_id)s, %(metric)s, %(field)s, %(day)s, %(points)s,
        %(valued)s, %(total)s, %(low)s, %(high)s, %(first_start)s::timestamptz,
        %(last_start)s::timestamptz, %(sources)s, %(imported)s)
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
WHERE account_id = %(account_id)s AND metric = %(metric)s
ORDER BY day

-- clear_day_sums --
-- A metric's days of the phone's clock in [day_low, day_high], before keep_day_sums sums
-- them again: a day no point is on any more has no row.
DELETE FROM point_day_sums
WHERE account_id = %(account_id)s AND metric = %(metric)s
  AND day >= %(day_low)s AND day <= %(day_high)s

-- clear_counted_days --
-- A metric's counted days in [day_low, day_high], whose sums keep_day_sums recomputes:
-- the fold counts them again (count_days).
DELETE FROM counted_days
WHERE account_id = %(account_id)s AND metric = %(metric)s
  AND day >= %(day_low)s AND day <= %(day_high)s

-- keep_day_sums --
-- A metric's days of the phone's clock in [day_low, day_high], recomputed whole from the
-- showcase's points in a range of starts that holds every point of those days
-- (point_day_sums): what a GROUP BY of each day's points gives, whatever was there.
-- `sources` is 1 or 2 (one source, or more: what the overlap rule asks), `imported` the
-- count of points an import brought (count_imported; 0 for an account without imports).
INSERT INTO point_day_sums (account_id, metric, field, day, points, valued, total, low, high,
                            first_start, last_start, sources, imported)
SELECT %(account_id)s::text, %(metric)s::text, field, day, count(*), count(qty), sum(qty),
       min(qty), max(qty), min(start), max(start),
       CASE WHEN min(source) = max(source) THEN 1 ELSE 2 END, /*imported!*/
FROM (SELECT field, source, start, qty, layer_id, /*day!*/ AS day
      FROM points
      WHERE account_id = %(account_id)s AND metric = %(metric)s
        AND start >= %(low)s AND start < %(high)s AND /*stays*/true) AS near
WHERE day >= %(day_low)s AND day <= %(day_high)s
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
    WHERE account_id = %(account_id)s AND content_type IN (%(zip)s, %(xml)s))
    THEN 1 END)

-- day_sums --
-- A metric field's days of the phone's clock in [day_from, day_to), summed up as the fold
-- keeps them (point_day_sums).
SELECT day, points, valued, total, low, high, to_char(first_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), to_char(last_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), sources, imported
FROM point_day_sums
WHERE account_id = %(account_id)s AND metric = %(metric)s AND field = %(field)s
  AND day >= %(day_from)s AND day < %(day_to)s
ORDER BY day

-- imported_deliveries --
-- The deliveries of an account that are imports of the Health app's export (their
-- content types): the origin the overlap rule tells apart from HAE's (healthlog.overlap).
SELECT id FROM deliveries WHERE account_id = %(account_id)s AND content_type IN (%(zip)s, %(xml)s)

-- metric_days --
-- Per metric, the points of an account on each day of the phone's clock (point_days,
-- kept as the fold writes).
SELECT metric, day, points
FROM point_days
WHERE account_id = %(account_id)s AND points > 0 /*and*/
ORDER BY metric, day

-- last_data_day --
-- An account's last day of the phone's clock with points (point_days): where the
-- coverage page's default range ends.
SELECT max(day) FROM point_days WHERE account_id = %(account_id)s AND points > 0

-- late_days --
-- Per metric, the days of an account with points that arrived late, and how many.
SELECT metric, day, late
FROM point_days
WHERE account_id = %(account_id)s AND late > 0 /*and*/
ORDER BY metric, day

-- metric_bars --
-- Per metric, the newest start that the HAE deliveries of an account received before
-- this one brought (delivery_extents): a point this delivery is first to bring is late
-- when it is older. Imports of the Health app's export (their content types) neither
-- raise the bar nor have one: none of their points is late (docs/dashboard.md).
SELECT metric, to_char(max(last_start) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
FROM delivery_extents
WHERE account_id = %(account_id)s
  AND (received_at, delivery_id) < (%(received_at)s::timestamptz, %(delivery_id)s)
  AND delivery_id NOT IN (SELECT id FROM deliveries
                          WHERE account_id = %(account_id)s AND content_type IN (%(zip)s, %(xml)s))
  AND NOT EXISTS (SELECT 1 FROM deliveries
                  WHERE id = %(delivery_id)s AND content_type IN (%(zip)s, %(xml)s))
GROUP BY metric

-- day_tally --
-- A metric's showcase points in a range of starts, per day of the phone's clock, and how
-- many are older than a bar; read before and after a delivery is written, the difference
-- is what that delivery brought first.
SELECT /*day!*/ AS day, count(*), count(CASE WHEN start < %(bar)s::timestamptz THEN 1 END)
FROM points
WHERE account_id = %(account_id)s AND metric = %(metric)s
  AND start >= %(low)s AND start < %(high)s
GROUP BY day

-- own_points --
-- A metric's points in a range of starts that a delivery's own layer holds: what the
-- earlier steps of a fold in steps (or an earlier fold of the delivery) wrote, which a
-- step's samples of one shared key must not overwrite (Journal.write_step).
SELECT field, source,
       to_char(start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), seq,
       to_char("end" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), qty, text, unit,
       extra
FROM points
WHERE account_id = %(account_id)s AND metric = %(metric)s
  AND start >= %(low)s AND start < %(high)s AND layer_id = %(delivery_id)s

-- add_point_days --
-- Add what a delivery brought first to a day's counts.
INSERT INTO point_days (account_id, metric, day, points, late)
VALUES (%(account_id)s, %(metric)s, %(day)s, %(points)s, %(late)s)
ON CONFLICT (account_id, metric, day) DO UPDATE SET
    points = point_days.points + excluded.points,
    late = point_days.late + excluded.late

-- late_import_accounts --
-- The accounts that have imports of the Health app's export (migration 0019).
SELECT DISTINCT account_id FROM deliveries WHERE content_type IN (%(zip)s, %(xml)s)
ORDER BY account_id

-- late_import_extents --
-- An account's deliveries in order with, per metric, the first and last start each
-- brought, and whether it is an import (migration 0019 replays the late rule's bars).
SELECT e.delivery_id, e.metric,
       to_char(min(e.first_start) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       to_char(max(e.last_start) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
       CASE WHEN e.delivery_id IN (SELECT id FROM deliveries
                                   WHERE account_id = %(account_id)s
                                     AND content_type IN (%(zip)s, %(xml)s))
            THEN 1 ELSE 0 END
FROM delivery_extents AS e
WHERE e.account_id = %(account_id)s
GROUP BY e.received_at, e.delivery_id, e.metric
ORDER BY e.received_at, e.delivery_id, e.metric

-- late_import_days --
-- A metric's points in a range of starts, of one origin (an import's layer or HAE's),
-- per day of the phone's clock: what migration 0019 takes off the late counts.
SELECT /*day!*/ AS day, count(*)
FROM points
WHERE account_id = %(account_id)s AND metric = %(metric)s
  AND start >= %(low)s::timestamptz AND start < %(high)s::timestamptz
  AND (layer_id IN (SELECT id FROM deliveries
                    WHERE account_id = %(account_id)s AND content_type IN (%(zip)s, %(xml)s)))
      = (%(imported)s = 1)
GROUP BY day

-- late_import_unlate --
-- Take a number of points off a day's late count (never below 0).
UPDATE point_days SET late = CASE WHEN late > %(points)s THEN late - %(points)s ELSE 0 END
WHERE account_id = %(account_id)s AND metric = %(metric)s AND day = %(day)s

-- delete_extents --
-- What a delivery brought, forgotten before its outcome is written again.
DELETE FROM delivery_extents WHERE delivery_id = %(delivery_id)s

-- insert_extent --
-- What a delivery brought of one series: first and last start, and how many points.
INSERT INTO delivery_extents (delivery_id, metric, field, unit, source, account_id,
                              received_at, first_start, last_start, points)
VALUES (%(delivery_id)s, %(metric)s, %(field)s, %(unit)s, %(source)s,
        %(account_id)s, %(received_at)s, %(first_start)s, %(last_start)s,
        %(points)s)

-- merge_extent --
-- What one step of a fold in steps brought of one series, added to what the delivery's
-- earlier steps brought.
INSERT INTO delivery_extents (delivery_id, metric, field, unit, source, account_id,
                              received_at, first_start, last_start, points)
VALUES (%(delivery_id)s, %(metric)s, %(field)s, %(unit)s, %(source)s,
        %(account_id)s, %(received_at)s, %(first_start)s, %(last_start)s,
        %(points)s)
ON CONFLICT (delivery_id, metric, field, unit, source) DO UPDATE SET
    first_start = least(delivery_extents.first_start, excluded.first_start),
    last_start = greatest(delivery_extents.last_start, excluded.last_start),
    points = delivery_extents.points + excluded.points

-- local_start --
-- A row's start on the phone's clock (a timestamp without zone, compared with the text
-- of a clock.Wall bound): its start plus its offset. `/*a*/` takes the table's alias.
(/*a*/start AT TIME ZONE 'UTC' + coalesce(/*a*/utc_offset, 0) * interval '1 minute')

-- bucket_minute --
-- The minute of a point on the phone's clock (an expression for a bucket slot).
to_char(start AT TIME ZONE 'UTC' + coalesce(utc_offset, 0) * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI')

-- bucket_hour --
-- The hour of a point on the phone's clock.
to_char(start AT TIME ZONE 'UTC' + coalesce(utc_offset, 0) * interval '1 minute', 'YYYY-MM-DD"T"HH24:00')

-- bucket_day --
-- The day of a point on the phone's clock.
to_char(start AT TIME ZONE 'UTC' + coalesce(utc_offset, 0) * interval '1 minute', 'YYYY-MM-DD')

-- bucket_week --
-- The Monday of a point's week on the phone's clock.
to_char(date_trunc('week', start AT TIME ZONE 'UTC' + coalesce(utc_offset, 0) * interval '1 minute'),
        'YYYY-MM-DD')

-- bucket_month --
-- The first day of a point's month on the phone's clock.
to_char(start AT TIME ZONE 'UTC' + coalesce(utc_offset, 0) * interval '1 minute', 'YYYY-MM-01')

-- fold_lock_try --
-- Take the journal-wide fold lock if it is free (session level: the server drops it
-- when the session ends, also when the holder dies).
SELECT pg_try_advisory_lock(7524453289059705856)

-- fold_lock_wait --
-- Wait for the fold lock, under the session's lock_timeout.
SELECT pg_advisory_lock(7524453289059705856)

-- fold_unlock --
-- Release the fold lock at once, so the next holder need not wait for the session to end.
SELECT pg_advisory_unlock(7524453289059705856)

-- fold_lock_keepalives --
-- The fold lock's session probes a silent client after 30 s and gives up after three
-- unanswered probes, so a holder whose machine vanished (not only its process)
-- releases the lock within about a minute instead of the OS's two hours.
SET tcp_keepalives_idle = 30; SET tcp_keepalives_interval = 10; SET tcp_keepalives_count = 3

-- incoming --
-- The session's temporary tables that a delivery's showcase rows are copied into.
-- COPY into them, then one upsert each from there: for 100k points it took 0.7-1.4 s
-- against 2-4 s for executemany (pipelined) and 1.3-2 s for an INSERT from
-- unnest(arrays); for 100 points all three take ~5 ms. `n` is the position in the
-- delivery, so the last of two entries with one key wins, as row-by-row upserts would.
CREATE TEMPORARY TABLE IF NOT EXISTS incoming_points (
    n integer NOT NULL,
    metric_key integer NOT NULL,
    start timestamptz NOT NULL,
    point_key integer NOT NULL,
    series_id integer NOT NULL,
    utc_offset integer,
    "end" timestamptz,
    qty double precision,
    text text,
    extra text,
    seq integer NOT NULL
) ON COMMIT DELETE ROWS;
CREATE TEMPORARY TABLE IF NOT EXISTS incoming_records (
    n integer NOT NULL,
    section text COLLATE "C" NOT NULL,
    identity text COLLATE "C" NOT NULL,
    start timestamptz,
    "end" timestamptz,
    utc_offset integer,
    name text,
    source text,
    body text NOT NULL
) ON COMMIT DELETE ROWS;
CREATE TEMPORARY TABLE IF NOT EXISTS incoming_items (
    n integer NOT NULL,
    section text COLLATE "C" NOT NULL,
    identity text COLLATE "C" NOT NULL,
    series text COLLATE "C" NOT NULL,
    seq integer NOT NULL,
    t timestamptz,
    qty double precision,
    lat double precision,
    lon double precision,
    alt double precision,
    unit text,
    extra text
) ON COMMIT DELETE ROWS

-- account_series --
-- An account's series: the identity, then the id and the two keys a point row takes.
SELECT metric, field, source, unit, id, metric_key, point_key
FROM series WHERE account_id = %(account_id)s

-- lock_series --
-- Before series are added: one writer adds at a time, so two that add the first series
-- of one metric (or point key) at once cannot give it two keys. Only then, and rarely:
-- a series is added once.
LOCK TABLE series IN SHARE ROW EXCLUSIVE MODE

-- add_series --
-- A new series, with the keys of its metric's and its point key's first series if they
-- have one, its own id if not (migration 0011).
INSERT INTO series (id, account_id, metric, field, source, unit, metric_key, point_key)
SELECT n.id, %(account_id)s, %(metric)s, %(field)s, %(source)s, %(unit)s,
       coalesce((SELECT metric_key FROM series
                 WHERE account_id = %(account_id)s AND metric = %(metric)s LIMIT 1), n.id),
       coalesce((SELECT point_key FROM series
                 WHERE account_id = %(account_id)s AND metric = %(metric)s
                   AND field = %(field)s AND source = %(source)s LIMIT 1), n.id)
FROM (SELECT nextval('series_ids')::integer AS id) AS n
ON CONFLICT (account_id, metric, field, source, unit) DO NOTHING

-- copy_points --
-- A delivery's points into the session's incoming table, their series resolved.
COPY incoming_points (n, metric_key, point_key, series_id, start, utc_offset, "end", qty,
                          text, extra, seq)
FROM STDIN

-- upsert_points --
-- The incoming points under the layer guard: a stored point is overwritten only by a
-- layer that is not older, so the newest layer wins whatever order deliveries are
-- folded in, and refolding a delivery rewrites the same values. The key is the point's
-- (metric_key, start, point_key, seq): a point sent in another unit than the stored one
-- meets it here, and the guard gives it or keeps it its series (its unit). One
-- statement may not update a row twice, so a key the delivery carries twice keeps its
-- last point; the sort also takes the rows' locks in key order, so two folds of
-- overlapping deliveries queue behind each other instead of deadlocking.
INSERT INTO point_rows (metric_key, start, point_key, seq, series_id, utc_offset, "end", qty,
                        text, extra, layer_received_at, layer_id)
SELECT DISTINCT ON (i.metric_key, i.start, i.point_key, i.seq)
       i.metric_key, i.start, i.point_key, i.seq, i.series_id, i.utc_offset, i."end", i.qty,
       i.text, i.extra, %(at)s::timestamptz, %(id)s
FROM incoming_points AS i
ORDER BY i.metric_key, i.start, i.point_key, i.seq, i.n DESC
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

-- copy_records --
-- A delivery's records into the session's incoming table.
COPY incoming_records (n, section, identity, start, "end", utc_offset, name, source, body)
FROM STDIN

-- upsert_records --
-- The incoming records' rows under the same layer guard; their series follow.
INSERT INTO records (account_id, section, identity, start, "end", utc_offset, name, source,
                     body, layer_received_at, layer_id)
SELECT DISTINCT ON (i.section, i.identity)
       %(account)s, i.section, i.identity, i.start, i."end", i.utc_offset, i.name, i.source,
       i.body, %(at)s::timestamptz, %(id)s
FROM incoming_records AS i
ORDER BY i.section, i.identity, i.n DESC
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

-- copy_items --
-- A delivery's record items into the session's incoming table.
COPY incoming_items (n, section, identity, series, seq, t, qty, lat, lon, alt, unit, extra)
FROM STDIN

-- claim_series --
-- A series the delivery carries passes to its layer unless a newer layer holds it; the
-- series this layer won lose their stored items. (The upsert locks each series row,
-- also where the guard refuses it, so two writers of one series take turns.)
WITH won AS (
    INSERT INTO record_series (account_id, section, identity, series, layer_received_at,
                               layer_id)
    SELECT DISTINCT ON (i.section, i.identity, i.series)
           %(account)s, i.section, i.identity, i.series, %(at)s::timestamptz, %(id)s
    FROM incoming_items AS i
    ORDER BY i.section, i.identity, i.series
    ON CONFLICT (account_id, section, identity, series) DO UPDATE SET
        layer_received_at = excluded.layer_received_at,
        layer_id = excluded.layer_id
    WHERE (excluded.layer_received_at, excluded.layer_id)
          >= (record_series.layer_received_at, record_series.layer_id)
    RETURNING section, identity, series
)
DELETE FROM record_items AS r
USING won
WHERE r.account_id = %(account)s
  AND (r.section, r.identity, r.series) = (won.section, won.identity, won.series)

-- insert_items --
-- This delivery's items for the series it won: those of the last record that carries
-- the series (a record twice in one delivery).
INSERT INTO record_items (account_id, section, identity, series, seq, t, qty, lat, lon, alt,
                          unit, extra)
SELECT s.account_id, i.section, i.identity, i.series, i.seq, i.t, i.qty, i.lat, i.lon,
       i.alt, i.unit, i.extra
FROM incoming_items AS i
JOIN (SELECT section, identity, series, max(n) AS n
      FROM incoming_items GROUP BY section, identity, series) AS last
  USING (section, identity, series, n)
JOIN record_series AS s
  ON s.account_id = %(account)s
 AND (s.section, s.identity, s.series) = (i.section, i.identity, i.series)
 AND (s.layer_received_at, s.layer_id) = (%(at)s::timestamptz, %(id)s)
ORDER BY i.section, i.identity, i.series, i.seq

-- has_migrations --
-- Whether the database has the migrations' table (a journal's, migrated at least once).
SELECT to_regclass('schema_migrations') IS NOT NULL

-- schema_version --
-- The newest migration applied (NULL before any): what a read-only caller checks.
SELECT max(version) FROM schema_migrations

-- guarded_role_exists --
-- Whether the account's reader role exists.
-- The MCP server's SQL tool: its guarded session (healthlog.sql_guard says the policy,
-- journal/postgres.py's PostgresGuard opens it). The journal's role makes, idempotently,
-- the account's reader role and its schema (both the `role` slot, sql_guard.reader_name),
-- the tool's views in that schema, each bound to the account by the `account` slot (the id as
-- a quoted literal: a view takes no parameters), and grants the role SELECT on them
-- alone; the tool's session signs in as that role. These statements run without
-- parameters, but for the few that say so. The views' columns are those
-- sql_guard.VIEWS describes, in that order.
SELECT 1 FROM pg_roles WHERE rolname = %(role)s

-- guarded_create_role --
-- The account's reader role.
CREATE ROLE /*role!*/ NOINHERIT

-- guarded_role_login --
-- The reader signs in with this session's new password, and may do nothing else.
ALTER ROLE /*role!*/ LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    CONNECTION LIMIT 16 PASSWORD /*password!*/

-- guarded_role_settings --
-- The reader's sessions: read-only, bounded in time, its own schema first, in UTC.
ALTER ROLE /*role!*/ SET default_transaction_read_only = on;
ALTER ROLE /*role!*/ SET statement_timeout = '60s';
ALTER ROLE /*role!*/ SET idle_in_transaction_session_timeout = '60s';
ALTER ROLE /*role!*/ SET search_path = /*role!*/, pg_catalog;
ALTER ROLE /*role!*/ SET TimeZone = 'UTC'

-- guarded_schema --
-- The reader's schema, closed to everyone else.
CREATE SCHEMA IF NOT EXISTS /*role!*/;
REVOKE ALL ON SCHEMA /*role!*/ FROM PUBLIC

-- guarded_view --
-- One of the tool's views, in the reader's schema; a security barrier before its filter.
CREATE OR REPLACE VIEW /*role!*/./*view!*/ WITH (security_barrier) AS /*body!*/

-- guarded_my_points --
-- The account's points (the journal's `points` view), with the local start.
SELECT metric, field, source, start,
       to_char((start + make_interval(mins => coalesce(utc_offset, 0))) AT TIME ZONE 'UTC',
               'YYYY-MM-DD"T"HH24:MI:SS') AS local_start,
       utc_offset, "end", qty, text, unit, extra, layer_id AS delivery_id
FROM public.points WHERE account_id = /*account!*/

-- guarded_my_records --
-- The account's records.
SELECT section, identity, start, "end", utc_offset, name, source, body,
       layer_id AS delivery_id
FROM public.records WHERE account_id = /*account!*/

-- guarded_my_record_items --
-- The account's records' series.
SELECT section, identity, series, seq, t, qty, lat, lon, alt, unit, extra
FROM public.record_items WHERE account_id = /*account!*/

-- guarded_my_deliveries --
-- The account's deliveries, without their headers and bodies.
SELECT id, received_at, status, size, content_type, points, uncovered, failure, attempts,
       folded_at
FROM public.deliveries WHERE account_id = /*account!*/

-- guarded_my_delivery_extents --
-- What each of the account's deliveries brought of each series.
SELECT delivery_id, metric, field, unit, source, received_at, first_start, last_start, points
FROM public.delivery_extents WHERE account_id = /*account!*/

-- guarded_my_point_days --
-- The account's points and late points per metric and local day.
SELECT metric, day, points, late FROM public.point_days WHERE account_id = /*account!*/

-- guarded_my_daily --
-- The table my_daily is kept in: its values come from the reads' overlap rule, in Python.
CREATE TABLE IF NOT EXISTS /*role!*/.my_daily (metric TEXT, field TEXT, unit TEXT,
    value_is TEXT, day TEXT, value DOUBLE PRECISION, points BIGINT)

-- guarded_grant --
-- The reader may use its schema and read what is in it, nothing more.
GRANT USAGE ON SCHEMA /*role!*/ TO /*role!*/;
GRANT SELECT ON ALL TABLES IN SCHEMA /*role!*/ TO /*role!*/

-- guarded_clear_daily --
-- my_daily emptied, by the journal's role, before it is filled again.
DELETE FROM /*role!*/.my_daily

-- guarded_add_daily --
-- One row of my_daily (positional, with executemany).
INSERT INTO /*role!*/.my_daily (metric, field, unit, value_is, day, value, points)
VALUES (%s, %s, %s, %s, %s, %s, %s)

-- guarded_begin --
-- Each query of the tool: one read-only snapshot.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY

-- guarded_timeout --
-- Each query's time limit, in milliseconds.
SET LOCAL statement_timeout = /*ms!*/

-- guarded_tidy --
-- What a query may leave in the reader's session, removed after it: its advisory locks
-- (the fold's among them) and its large objects.
SET TRANSACTION READ WRITE;
SELECT pg_advisory_unlock_all();
SELECT lo_unlink(oid) FROM pg_largeobject_metadata WHERE lomowner = current_user::regrole

-- counted_days --
-- A metric field's days in [day_from, day_to) as the overlap rule counted them, for one
-- source priority (the fold keeps them: keep_counted_day).
SELECT day, points, valued, total, low, high
FROM counted_days
WHERE account_id = %(account_id)s AND metric = %(metric)s AND field = %(field)s
  AND priority = %(priority)s AND day >= %(day_from)s AND day < %(day_to)s
ORDER BY day

-- uncounted_days --
-- An account's kept days the overlap rule may count otherwise than their sums (several
-- sources, or an import beside other points) that have no counted row for the priority,
-- the oldest first.
SELECT s.metric, s.field, s.day
FROM point_day_sums s
LEFT JOIN counted_days c
  ON c.account_id = s.account_id AND c.metric = s.metric AND c.field = s.field
 AND c.day = s.day AND c.priority = %(priority)s
WHERE s.account_id = %(account_id)s AND c.day IS NULL
  AND (s.sources > 1 OR (s.imported > 0 AND s.imported < s.points))
ORDER BY s.metric, s.field, s.day
LIMIT %(limit)s

-- keep_counted_day --
-- A day as the overlap rule counted it, for one source priority.
INSERT INTO counted_days (account_id, metric, field, day, priority, points, valued, total,
                          low, high)
VALUES (%(account_id)s, %(metric)s, %(field)s, %(day)s, %(priority)s, %(points)s,
        %(valued)s, %(total)s, %(low)s, %(high)s)
ON CONFLICT (account_id, metric, field, day, priority) DO UPDATE SET
    points = excluded.points, valued = excluded.valued, total = excluded.total,
    low = excluded.low, high = excluded.high
