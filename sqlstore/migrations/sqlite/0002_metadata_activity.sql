-- recall sqlstore schema, version 2 (SQLite): metadata, Updated as
-- conversation activity, checked_seq.

-- A session's metadata map (recall.Meta.Metadata), kept by the same code
-- as the other metadata columns: a JSON object of strings, NULL for none.
ALTER TABLE sessions ADD COLUMN metadata TEXT;

-- updated_at now means the last conversation activity (recall.Kind.
-- IsActivity: item, pop, remove, clear, compaction, fork, create); title
-- and meta entries (title, archive, pin, labels, metadata) no longer move
-- it. Version 1 moved it for every entry, so it is computed afresh from
-- each log, as recall.Meta.Apply computes it: the latest time of an
-- activity entry, and never before the first entry's time (where Updated
-- starts, whatever that entry's kind). A session without entries keeps
-- its value.
UPDATE sessions SET updated_at = coalesce((
	SELECT max(t) FROM (
		SELECT (SELECT time FROM entries WHERE session = sessions.sid ORDER BY seq LIMIT 1) AS t
		UNION ALL
		SELECT max(time) FROM entries WHERE session = sessions.sid
			AND kind IN ('item', 'pop', 'remove', 'clear', 'compaction', 'fork', 'create')
	)), updated_at);

-- checked_seq is a watermark: every item row of the session at or below
-- it was written by this package, which validated it, so readers check
-- only the rows above it in full (see read.go). Writers move it with
-- last_seq when it was at last_seq; another program's rows stay above it.
-- A session written by version 1 is taken as checked when each of its item
-- rows is a JSON object (SQLite's json_valid, stricter than the Go check
-- in places, never looser: a NUL byte, which some of SQLite's functions
-- stop at, makes a row unchecked); otherwise its rows stay to be checked
-- on every read.
ALTER TABLE sessions ADD COLUMN checked_seq INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET checked_seq = last_seq WHERE NOT EXISTS (
	SELECT 1 FROM entries WHERE session = sessions.sid AND kind = 'item' AND NOT (
		CASE WHEN instr(payload, x'00') = 0 AND json_valid(CAST(payload AS TEXT))
			THEN json_type(CAST(payload AS TEXT)) = 'object'
			ELSE 0 END));
