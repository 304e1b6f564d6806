-- recall sqlstore schema, version 12 (PostgreSQL): the trash.
--
-- trashed_at is recall.Meta.Trashed: NULL for a session that is not in
-- the trash. List and Search leave the rows that have one out
-- (trashed_at IS NULL); a listing
-- of the trash (recall.ListOptions.Trashed) reads sessions_trashed, which
-- holds only them, so it costs about the size of the trash. listQuery
-- (list.go) repeats its predicate word for word. No session is in the
-- trash before this version, so existing rows need no backfill.
ALTER TABLE sessions ADD COLUMN trashed_at timestamptz;
CREATE INDEX sessions_trashed ON sessions (updated_at DESC, project, id) WHERE subpath = '' AND trashed_at IS NOT NULL;
