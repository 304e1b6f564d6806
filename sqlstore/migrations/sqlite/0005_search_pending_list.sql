-- recall sqlstore schema, version 5 (SQLite): nothing to do.
--
-- Version 5 bounds the pending list of PostgreSQL's trigram index; the
-- SQLite store's FTS5 index has none (its rows join it in batches, see
-- ftsBatch). The step keeps the versions of the two dialects the same.
SELECT 1;
