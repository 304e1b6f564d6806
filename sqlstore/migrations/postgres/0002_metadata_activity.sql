-- recall sqlstore schema, version 2 (PostgreSQL): metadata, Updated as
-- conversation activity, checked_seq.

-- A session's metadata map (recall.Meta.Metadata), kept by the same code
-- as the other metadata columns: a JSON object of strings, NULL for none.
ALTER TABLE sessions ADD COLUMN metadata jsonb;

-- updated_at now means the last conversation activity (recall.Kind.
-- IsActivity: item, pop, remove, clear, compaction, fork, create); title
-- and meta entries (title, archive, pin, labels, metadata) no longer move
-- it. Version 1 moved it for every entry, so it is computed afresh from
-- each log, as recall.Meta.Apply computes it: the latest time of an
-- activity entry, and never before the first entry's time (where Updated
-- starts, whatever that entry's kind). GREATEST ignores NULLs; a session
-- without entries keeps its value.
UPDATE sessions s SET updated_at = coalesce(GREATEST(
	(SELECT time FROM entries WHERE session = s.sid ORDER BY seq LIMIT 1),
	(SELECT max(time) FROM entries WHERE session = s.sid
		AND kind IN ('item', 'pop', 'remove', 'clear', 'compaction', 'fork', 'create'))
	), s.updated_at);

-- checked_seq is a watermark: every item row of the session at or below
-- it was written by this package, which validated it, so readers check
-- only the rows above it in full (see read.go). Writers move it with
-- last_seq when it was at last_seq; another program's rows stay above it.
-- A session written by version 1 is taken as checked when each of its item
-- rows is a JSON object (PostgreSQL's jsonb parser, stricter than the Go
-- check in places, never looser); otherwise its rows stay to be checked on
-- every read.
ALTER TABLE sessions ADD COLUMN checked_seq bigint NOT NULL DEFAULT 0;
CREATE FUNCTION pg_temp.recall_item_ok(p bytea) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	RETURN jsonb_typeof(convert_from(p, 'UTF8')::jsonb) = 'object';
EXCEPTION WHEN OTHERS THEN
	RETURN false;
END $$;
UPDATE sessions s SET checked_seq = s.last_seq WHERE NOT EXISTS (
	SELECT 1 FROM entries e WHERE e.session = s.sid AND e.kind = 'item'
		AND NOT coalesce(pg_temp.recall_item_ok(e.payload), false));
DROP FUNCTION pg_temp.recall_item_ok(bytea);
