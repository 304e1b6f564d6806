-- recall sqlstore schema, version 4 (PostgreSQL): first_prompt.
--
-- first_prompt is recall.Meta.FirstPrompt, the first user message's text
-- as one line, kept by the same code as the other metadata columns so
-- List still reads no entries. Existing sessions are filled in by the Go
-- step of this migration (migrate.go, backfillFirstPrompt), which reads
-- each log up to its first prompt.
ALTER TABLE sessions ADD COLUMN first_prompt TEXT NOT NULL DEFAULT '';
