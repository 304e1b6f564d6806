-- recall sqlstore schema, version 11 (SQLite): a search row joins the
-- trigram index when it is written.
--
-- Since version 8 an append's search rows trail its log (search_behind):
-- they are written later, a few dozen entries at a time, off the append's
-- path. Until now they then waited a second time, out of the trigram index
-- (indexed = 0, search_tail) until a search found 256 of them, and every
-- search read that tail without the index: two layers of deferral for one
-- index. The first is enough: the rows it writes share one commit, so
-- FTS5's segment for them costs that commit, not an append. A trigger now
-- puts every row into search_fts as it is written (and the trigger of
-- version 3 takes a deleted row out of it); the rows an older version left
-- out are indexed here, and the tail's column and index go.
INSERT INTO search_fts (rowid, fts) SELECT id, fts FROM search WHERE NOT indexed;
DROP TRIGGER search_fts_delete;
DROP INDEX search_tail;
ALTER TABLE search DROP COLUMN indexed;
CREATE TRIGGER search_fts_insert AFTER INSERT ON search BEGIN
	INSERT INTO search_fts (rowid, fts) VALUES (new.id, new.fts);
END;
CREATE TRIGGER search_fts_delete AFTER DELETE ON search BEGIN
	INSERT INTO search_fts (search_fts, rowid, fts) VALUES ('delete', old.id, old.fts);
END;
