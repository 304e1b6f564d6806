-- recall sqlstore schema, version 1 (SQLite).
--
-- Times are integers: microseconds since the Unix epoch, UTC. Text
-- compares bytewise (BINARY), the order recall.Paginate uses.

-- One row per session record; subpath '' is a main session. The metadata
-- columns are kept in step with the log by the transaction that appends
-- to it, so List never reads entries. (No AUTOINCREMENT: it would rewrite
-- sqlite_sequence on every append. A sid can then be reused after the
-- newest session is removed, which is harmless: no sid is kept beyond the
-- transaction that read it.)
CREATE TABLE sessions (
	sid           INTEGER PRIMARY KEY,
	project       TEXT NOT NULL,
	id            TEXT NOT NULL,
	subpath       TEXT NOT NULL DEFAULT '',
	title         TEXT NOT NULL DEFAULT '',
	title_source  TEXT NOT NULL DEFAULT '',
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL,
	item_count    INTEGER NOT NULL DEFAULT 0,
	last_seq      INTEGER NOT NULL DEFAULT 0,  -- seqs are assigned from here, under the write lock
	archived      INTEGER NOT NULL DEFAULT 0,
	pinned        INTEGER NOT NULL DEFAULT 0,
	labels        TEXT,                        -- JSON array of strings, NULL for none
	forked_from   TEXT,                        -- recall.Key of the fork's source as JSON, NULL if not a fork
	fork_seq      INTEGER,
	input_tokens  INTEGER NOT NULL DEFAULT 0,  -- usage sums
	output_tokens INTEGER NOT NULL DEFAULT 0,
	total_tokens  INTEGER NOT NULL DEFAULT 0,
	UNIQUE (project, id, subpath)
);

-- List order (updated_at DESC, project, id) over main sessions: every
-- project, and one project.
CREATE INDEX sessions_updated ON sessions (updated_at DESC, project, id) WHERE subpath = '';
CREATE INDEX sessions_project_updated ON sessions (project, updated_at DESC, id) WHERE subpath = '';

-- Each session's append-only log. The primary key's index serves Items
-- (ORDER BY seq DESC LIMIT n) and makes a duplicate seq impossible.
CREATE TABLE entries (
	session       INTEGER NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
	seq           INTEGER NOT NULL,
	kind          TEXT NOT NULL,
	payload       BLOB,                        -- the entry's data, verbatim
	time          INTEGER NOT NULL,
	input_tokens  INTEGER,                     -- usage, NULL when the entry has none
	output_tokens INTEGER,
	total_tokens  INTEGER,
	PRIMARY KEY (session, seq)
);
