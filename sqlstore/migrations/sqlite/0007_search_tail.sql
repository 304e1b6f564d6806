-- recall sqlstore schema, version 7 (SQLite): nothing changes. Version 7
-- of PostgreSQL moves its GIN indexes' upkeep off the append's path, as
-- SQLite's trigram index already is (its tail, see ftsBatch).
SELECT 1;
