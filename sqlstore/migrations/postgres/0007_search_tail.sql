-- recall sqlstore schema, version 7 (PostgreSQL): search rows join the
-- GIN indexes in batches, off the append's path.
--
-- Each row an append wrote went into both GIN indexes' pending lists:
-- pg_trgm's trigrams of its body, and its bigrams, or a NULL entry when
-- it has none (most rows). That was most of what search added to a
-- durable append: about 65 µs of the server's time a row for the
-- trigrams and 20 µs for the bigrams, against 40 µs for the row itself
-- (docs/BENCHMARKS.md). Now an append of a few items writes their rows
-- with indexed = false; they are in no GIN index, only in search_tail, a
-- small partial B-tree of the rows not yet indexed (a write of many rows,
-- an import say, still indexes them at once). A store sets indexed in batches,
-- in the background (see ginCleaner in postgres.go), and a search that
-- finds a long tail first does so itself; setting it puts the rows into
-- both indexes, which are partial: WHERE indexed. A search reads the
-- indexed rows through the GIN indexes and the tail through search_tail
-- (see itemQuery in search.go), so every row written is found, indexed
-- or not.
--
-- The bigram index also leaves out the rows without bigrams: a search
-- asks grams @> ..., which no NULL satisfies (the operator is strict), so
-- the planner uses the partial index wherever it used the whole one.
--
-- The rows already written are indexed (the column's default for them);
-- both GIN indexes are built again, partial.
ALTER TABLE search ADD COLUMN indexed boolean NOT NULL DEFAULT true;
CREATE INDEX search_tail ON search (sid) WHERE NOT indexed;
DROP INDEX search_grams;
CREATE INDEX search_grams ON search USING gin (grams) WITH (gin_pending_list_limit = 256)
	WHERE indexed AND grams IS NOT NULL;
DROP INDEX search_body;
DO $$
DECLARE
	ext text;
BEGIN
	SELECT n.nspname INTO ext FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'pg_trgm';
	EXECUTE format('CREATE INDEX search_body ON search USING gin (body %I.gin_trgm_ops) WITH (gin_pending_list_limit = 256) WHERE indexed', ext);
END $$;
