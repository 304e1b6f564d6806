-- recall sqlstore schema, version 6 (SQLite): nothing changes. Version 6
-- of PostgreSQL adds an index for terms of two CJK characters; on SQLite
-- the trigram index already serves them (search_vocab, version 3).
SELECT 1;
