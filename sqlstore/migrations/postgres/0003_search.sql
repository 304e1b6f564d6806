-- recall sqlstore schema, version 3 (PostgreSQL): search (recall.Searcher).
--
-- search holds one row per searchable item of a main session's log: the
-- item entries whose item has text (recall.SearchText), and the items of
-- compaction entries (seq of the compaction, idx the item's index). body is
-- that text normalized (recall.NormalizeText); live says whether the item
-- is in the session's view (recall.Replay): a pop or remove entry clears
-- it for the item it names, a clear for every row, a compaction for every
-- earlier row. The rows are written by the transaction (or the statement)
-- that appends the entries (see searchindex.go), so search never lags the
-- logs; they go with their session (ON DELETE CASCADE). The rows of a
-- database written before this version are computed by the Go step of
-- this migration.
CREATE TABLE search (
	sid   bigint NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
	seq   bigint NOT NULL,
	idx   integer NOT NULL,
	role  text NOT NULL,
	time  timestamptz NOT NULL,       -- the entry's time, as entries.time
	live  boolean NOT NULL,
	body  text NOT NULL,
	PRIMARY KEY (sid, seq, idx)
);

-- Newest first: the order of hits, and the window a common term is
-- looked for in (see search.go).
CREATE INDEX search_time ON search (time);

-- Substrings of body, by trigram (pg_trgm): the index serves
-- body LIKE '%term%' for a term of three characters or more. pg_trgm is
-- one per database, so it is created (once, under a lock every schema
-- shares) in public, or used wherever it already is.
SELECT pg_advisory_xact_lock(7310588412236571137);
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
DO $$
DECLARE
	ext text;
BEGIN
	SELECT n.nspname INTO ext FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'pg_trgm';
	EXECUTE format('CREATE INDEX search_body ON search USING gin (body %I.gin_trgm_ops)', ext);
END $$;

-- The session's title, normalized: titles are hits too.
ALTER TABLE sessions ADD COLUMN search_title text NOT NULL DEFAULT '';
