-- recall sqlstore schema, version 1 (PostgreSQL).
--
-- Keys are compared bytewise (COLLATE "C"), the order recall.Paginate
-- uses, whatever the database's default collation.

-- One row per session record; subpath '' is a main session. The metadata
-- columns are kept in step with the log by the transaction that appends
-- to it, so List never reads entries.
CREATE TABLE sessions (
	sid           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	project       text COLLATE "C" NOT NULL,
	id            text COLLATE "C" NOT NULL,
	subpath       text COLLATE "C" NOT NULL DEFAULT '',
	title         text NOT NULL DEFAULT '',
	title_source  text NOT NULL DEFAULT '',
	created_at    timestamptz NOT NULL,
	updated_at    timestamptz NOT NULL,
	item_count    bigint NOT NULL DEFAULT 0,
	last_seq      bigint NOT NULL DEFAULT 0,  -- seqs are assigned from here, under the row lock
	archived      boolean NOT NULL DEFAULT false,
	pinned        boolean NOT NULL DEFAULT false,
	labels        jsonb,                      -- JSON array of strings, NULL for none
	forked_from   jsonb,                      -- recall.Key of the fork's source, NULL if not a fork
	fork_seq      bigint,
	input_tokens  bigint NOT NULL DEFAULT 0,  -- usage sums
	output_tokens bigint NOT NULL DEFAULT 0,
	total_tokens  bigint NOT NULL DEFAULT 0,
	UNIQUE (project, id, subpath)
);

-- List order (updated_at DESC, project, id) over main sessions: every
-- project, and one project.
CREATE INDEX sessions_updated ON sessions (updated_at DESC, project, id) WHERE subpath = '';
CREATE INDEX sessions_project_updated ON sessions (project, updated_at DESC, id) WHERE subpath = '';

-- Each session's append-only log. The primary key serves Items (ORDER BY
-- seq DESC LIMIT n) and makes a duplicate seq impossible.
CREATE TABLE entries (
	session       bigint NOT NULL REFERENCES sessions (sid) ON DELETE CASCADE,
	seq           bigint NOT NULL,
	kind          text NOT NULL,
	payload       bytea,                      -- the entry's data, verbatim
	time          timestamptz NOT NULL,
	input_tokens  bigint,                     -- usage, NULL when the entry has none
	output_tokens bigint,
	total_tokens  bigint,
	PRIMARY KEY (session, seq)
);
