-- recall sqlstore schema, version 8 (PostgreSQL): nothing changes.
-- Version 8 of SQLite leaves the search rows of small appends to a later
-- batch; PostgreSQL writes them with the append, into the tail its GIN
-- indexes take in batches (version 7). The step keeps the versions of the
-- two dialects the same.
SELECT 1;
