-- recall sqlstore schema, version 8 (SQLite): search rows follow the log
-- in batches.
--
-- Writing a search row cost a durable append more than the row: the row
-- goes into the search table and its three B-tree indexes, four pages the
-- commit writes to the WAL besides the five of the append itself, and
-- about 13% of its time (docs/BENCHMARKS.md). Now an append leaves the
-- rows of its entries to later: it records the session here, with the
-- first seq its rows do not reflect yet (a row that exists already is
-- left as it is, so an append to a session already behind writes nothing
-- more). The rows are written from the log, by the rule the append used
-- (searchChangesOf), in one of two ways (see searchbehind.go): by the
-- append that leaves the session searchLag entries or more behind, and by
-- a search, which first brings every session listed here up to date, in
-- a write transaction, before it reads. (An import or a fork writes its
-- rows at once, as before.) So a search still sees every entry
-- acknowledged before it began, and the entries and their mark are
-- written by one commit: no crash leaves an entry the rows never get.
--
-- The rows of a database written before this version reflect every entry
-- already: the table starts empty. A row goes with its session.
CREATE TABLE search_behind (
	sid      INTEGER PRIMARY KEY REFERENCES sessions (sid) ON DELETE CASCADE,
	from_seq INTEGER NOT NULL
);
