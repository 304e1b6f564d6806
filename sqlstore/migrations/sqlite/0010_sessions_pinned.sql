-- recall sqlstore schema, version 10 (SQLite): indexes of the pinned
-- main sessions, in List order.
--
-- A listing of pinned sessions (recall.ListOptions.Pinned, which the
-- service's first page of a user's sessions starts with) read through
-- sessions_updated or sessions_project_updated would step over every
-- unpinned session of the scope to find the few pinned ones. These hold
-- the pinned rows only, so such a listing costs about the number of
-- pinned sessions, and a pin or an unpin, rare writes, is all that moves
-- a row in or out. listQuery (list.go) repeats the predicate word for
-- word, which is what lets the planners use them.
CREATE INDEX sessions_pinned ON sessions (updated_at DESC, project, id) WHERE subpath = '' AND pinned;
CREATE INDEX sessions_project_pinned ON sessions (project, updated_at DESC, id) WHERE subpath = '' AND pinned;
