-- recall sqlstore schema, version 3 (SQLite): search (recall.Searcher).
--
-- search holds one row per searchable item of a main session's log: the
-- item entries whose item has text (recall.SearchText), and the items of
-- compaction entries (seq of the compaction, idx the item's index). body is
-- that text normalized (recall.NormalizeText); live says whether the item
-- is in the session's view (recall.Replay): a pop or remove entry clears
-- it for the item it names, a clear for every row, a compaction for every
-- earlier row. The rows are written by the transaction that appends the
-- entries (see searchindex.go), so search never lags the logs; they go
-- with their session (ON DELETE CASCADE). The rows of a database written
-- before this version are computed by the Go step of this migration.
CREATE TABLE search (
	id    INTEGER PRIMARY KEY,
	sid   INTEGER NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
	seq   INTEGER NOT NULL,
	idx   INTEGER NOT NULL,
	role  TEXT NOT NULL,
	time  INTEGER NOT NULL,          -- the entry's time, as entries.time
	live  INTEGER NOT NULL,
	body  TEXT NOT NULL,
	-- What the trigram index indexes (see search_fts), and whether it
	-- holds it yet.
	fts     TEXT GENERATED ALWAYS AS (body || ' ') VIRTUAL,
	indexed INTEGER NOT NULL DEFAULT 0,
	UNIQUE (sid, seq, idx)
);

-- Newest first: the order of hits, and the window a common term is
-- looked for in (see search.go).
CREATE INDEX search_time ON search (time);

-- Substrings of body, by trigram (FTS5's trigram tokenizer): the
-- candidates of a term of three characters or more, which search.go then
-- checks with instr(), since trigrams found in any order are no
-- substring. The index stores no text (external content) and no
-- positions (detail=none) nor sizes (columnsize=0; bm25 is not used): a
-- term is looked up as the AND of its trigrams. The text indexed is fts, body and a space, so that every two
-- characters of body begin a trigram: a term of two characters (a CJK
-- name) is looked up as the OR of the trigrams search_vocab lists with
-- it as their prefix.
--
-- FTS5 writes a segment of its index at every commit that added to it,
-- which would cost an append more than the rest of it: rows are therefore
-- added to the index in batches, by the writer whose append makes the
-- rows not yet indexed (the tail, search_tail) a batch (see
-- searchindex.go), in that append's transaction. Search reads the tail
-- itself, with instr(), besides the candidates the index names. A deleted
-- row leaves the index by the trigger, when it was in it. (FTS5's
-- integrity-check, once the tail is indexed, compares index and table.)
CREATE VIRTUAL TABLE search_fts USING fts5(fts, content='search', content_rowid='id',
	tokenize='trigram case_sensitive 1', detail=none, columnsize=0);
CREATE VIRTUAL TABLE search_vocab USING fts5vocab(search_fts, 'row');
CREATE INDEX search_tail ON search (id) WHERE NOT indexed;
CREATE TRIGGER search_fts_delete AFTER DELETE ON search WHEN old.indexed BEGIN
	INSERT INTO search_fts (search_fts, rowid, fts) VALUES ('delete', old.id, old.fts);
END;

-- The session's title, normalized: titles are hits too.
ALTER TABLE sessions ADD COLUMN search_title TEXT NOT NULL DEFAULT '';
