-- recall sqlstore schema, version 11 (PostgreSQL): the tail is the one
-- list of search rows waiting for the GIN indexes.
--
-- Since version 7 an append's search rows wait in the tail (indexed =
-- false, search_tail) until a store's batch sets indexed, off the append's
-- path (see tailIndexer in postgres.go). That put them into the pending
-- lists of both GIN indexes (fastupdate, 256 kB since versions 5 and 6),
-- which the batch then merged into the indexes proper: two lists of rows
-- not yet indexed for one index, and every search read both. Now the
-- indexes keep no pending list: the batch's update writes the rows into
-- the indexes proper, as a write of many rows (an import) does at once,
-- and a search reads the indexes and the tail, nothing else. What the
-- pending lists hold is merged here, once.
ALTER INDEX search_body SET (fastupdate = off);
ALTER INDEX search_body RESET (gin_pending_list_limit);
ALTER INDEX search_grams SET (fastupdate = off);
ALTER INDEX search_grams RESET (gin_pending_list_limit);
SELECT gin_clean_pending_list('search_body'::regclass), gin_clean_pending_list('search_grams'::regclass);
