package filestore

import (
	"context"
	"database/sql"
	"path/filepath"

	_ "modernc.org/sqlite"

	"github.com/recallkit/recall"
)

// SetSearchWindow makes s search with windows of n items, and sort the
// trigram index's candidates only when they are n or fewer, so that a
// small store takes the paths of a large one.
func SetSearchWindow(s *Store, n int) {
	s.search.mu.Lock()
	s.search.testWindow = n
	s.search.mu.Unlock()
}

// SearchIndexPath returns the path of the search index in home.
func SearchIndexPath(home string) string { return filepath.Join(home, searchIndexName) }

// SearchIndexedLogs opens the search index in home on its own and returns
// its sessions with the seq-free state it recorded: "project/session" →
// the committed end indexed. It fails when the file is not a usable index.
func SearchIndexedLogs(home string) (map[string]int64, error) {
	db, err := sql.Open("sqlite", sqliteURI(SearchIndexPath(home))+"?mode=ro&_pragma=busy_timeout(30000)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), "SELECT project, session, off FROM logs")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var p, s string
		var off int64
		if err := rows.Scan(&p, &s, &off); err != nil {
			return nil, err
		}
		out[p+"/"+s] = off
	}
	return out, rows.Err()
}

// SearchIndexOnly is Store.Search without its fallback to the scan, so
// a test sees the index's own errors.
func SearchIndexOnly(ctx context.Context, s *Store, opts recall.SearchOptions) (recall.SearchPage, error) {
	return s.searchIndexed(ctx, opts)
}

// CheckpointSearchIndex moves the pages of the index's write-ahead log
// into the database file.
func CheckpointSearchIndex(home string) error {
	db, err := sql.Open("sqlite", sqliteURI(SearchIndexPath(home))+"?_pragma=busy_timeout(30000)")
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

// SearchIndexExec runs a statement on the search index in home, to damage
// it in ways SQLite cannot see.
func SearchIndexExec(home, stmt string) error {
	db, err := sql.Open("sqlite", sqliteURI(SearchIndexPath(home))+"?_pragma=busy_timeout(30000)")
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(stmt)
	return err
}

// SearchIndexMmapSize returns the mmap_size of the search index's own
// connection, -1 when it is not open.
func SearchIndexMmapSize(ctx context.Context, s *Store) (int64, error) {
	s.search.mu.Lock()
	defer s.search.mu.Unlock()
	if s.search.conn == nil {
		return -1, nil
	}
	var n int64
	err := s.search.conn.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&n)
	return n, err
}
