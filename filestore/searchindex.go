package filestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fsys"
)

// The search index is a cache of the text of every main session, kept
// beside the logs in <home>/#search-v1.db, an SQLite database with an FTS5
// trigram index. The logs stay the only truth:
//
//   - Nothing writes the index in the append path. Search brings it up to
//     date before it answers (catchUp): it takes the project indexes' up
//     to date records (the List index's: no stat when its journal is
//     believed, see Store.records) and compares
//     each log's inode, committed end and tail checksum with those the
//     index recorded. A log that grew is read from the end the index
//     reached; one that was rewritten (a purge renames a new file into
//     place) or replaced is read whole; a log that is gone, or holds no
//     entry, loses its rows. So a stale index never hides a hit nor shows
//     a removed session.
//   - Each log is brought up to date in one transaction with its row in
//     logs, so a process killed mid-update (SIGKILL, power loss) leaves
//     the index as it was before that log or after it. Processes share the
//     file: SQLite's locks order their transactions (WAL mode, so readers
//     do not wait for a writer), and a writer re-reads a log's row inside
//     its transaction, so two catching up at once do the work once.
//   - A file that is not a database, or a damaged one, is removed and
//     built again from the logs (see Store.Search); an index that cannot
//     be opened or written at all (a read-only home) is not used: Search
//     scans the logs instead (search.Scan).
//
// The index keeps, per item, the normalized text it is searched by and
// where its entry's line lies in the log; the text of a hit's snippet is
// read back from the log, which also confirms the hit. Its trigram index
// serves terms of two characters too (see searchSchema): only a query of
// one-character terms reads the items' text, newest first, until a page
// is full.
const searchIndexName = "#search-v1.db"

// searchMmapSize is how much of the index's file its connection maps into
// memory (PRAGMA mmap_size; SQLite caps it just under 2 GiB). A search
// reads the rows of its candidates, scattered over the file: through the
// mapping each is a read of a page the OS already caches, where SQLite's
// 2 MB page cache would copy it in with a system call (docs/BENCHMARKS.md,
// "Search: the index files mapped into memory": the queries with a
// thousand candidates or more took half the time). SQLite writes through
// write(2) still, and reads no page past the file's end: an index cut
// short under the mapping is found damaged and built anew
// (TestSearchIndexMapped). What the mapping gives up, as SQLite documents,
// is the error of a failed disk read, which faults the process instead
// (SIGBUS).
const searchMmapSize int64 = 2 << 30

// searchSchemaVersion is the database's user_version. A file of version
// 2 gains the logs' head column (see prepare); one with another
// version is removed and built anew.
const searchSchemaVersion = 3

const searchSchema = `
CREATE TABLE logs(
	id       INTEGER PRIMARY KEY,
	project  TEXT NOT NULL,
	session  TEXT NOT NULL,
	ino      INTEGER NOT NULL,
	off      INTEGER NOT NULL, -- committed end indexed
	chk      INTEGER NOT NULL, -- crc32 of the checkLen bytes before off
	head     INTEGER NOT NULL DEFAULT -1, -- crc32 of the first checkLen bytes; -1 unknown
	meta     TEXT NOT NULL,    -- recall.Meta JSON at off
	title    TEXT NOT NULL,
	ntitle   TEXT NOT NULL,    -- search.Normalize(title)
	upd_s    INTEGER NOT NULL, -- Meta.Updated
	upd_n    INTEGER NOT NULL,
	archived INTEGER NOT NULL, -- 0 listed, 1 archived, 2 in the trash (hiddenState)
	UNIQUE(project, session)
);
CREATE TABLE items(
	id   INTEGER PRIMARY KEY, -- the rowid in items_fts
	log  INTEGER NOT NULL,
	seq  INTEGER NOT NULL,    -- recall.ItemRef
	idx  INTEGER NOT NULL,
	pos  INTEGER NOT NULL,    -- the entry's line in the log: offset, length
	len  INTEGER NOT NULL,
	ts   INTEGER NOT NULL,    -- the entry's time: Unix seconds, nanoseconds
	tn   INTEGER NOT NULL,
	role INTEGER NOT NULL,    -- see searchRoles
	live INTEGER NOT NULL,    -- in the live view (recall.Replay)
	text TEXT NOT NULL        -- search.Normalize(search.Text(item))
);
CREATE INDEX items_ref ON items(log, seq, idx);
CREATE INDEX items_time ON items(ts, tn);
-- The trigrams of each item's text and a space (so that every two
-- characters of the text begin a trigram: a term of two characters, a CJK
-- name, is looked up as the OR of the trigrams items_vocab lists with it
-- as their prefix). The text is normalized already, so the tokenizer
-- keeps case. It stores no text and no positions: a term is looked up as
-- the AND of its trigrams, and its candidates checked with instr().
CREATE VIRTUAL TABLE items_fts USING fts5(text, content='', contentless_delete=1,
	tokenize='trigram case_sensitive 1', detail=none);
CREATE VIRTUAL TABLE items_vocab USING fts5vocab(items_fts, 'row');
`

// searchRoles are the roles in items.role, by number.
var searchRoles = []string{recall.RoleUser, recall.RoleAssistant, recall.RoleSystem, recall.RoleTool}

func roleNumber(role string) int {
	for i, r := range searchRoles {
		if r == role {
			return i
		}
	}
	return -1
}

// catchUpBatch is about how many items one catch-up transaction writes
// before it commits and starts the next: a rebuild does not hold the
// write lock for minutes, and a crash loses at most one batch of work.
const catchUpBatch = 20000

// errIndexDamaged marks an index the database reports as damaged or not a
// database at all; the index is then built again.
var errIndexDamaged = errors.New("search index damaged")

// searchIndex is the process's handle on the index file.
type searchIndex struct {
	path string
	// testWindow, when above 0, stands for search.Window (window and candidates)
	// (a test's, so that small stores take every path).
	testWindow int

	mu   sync.Mutex // held through a catch-up and the query after it
	db   *sql.DB    // nil until opened
	conn *sql.Conn  // the one connection of db, held (see logs)
	ino  uint64     // the file db has open

	// logs caches the rows of the logs table, of every project, as read
	// when the connection's data_version was version. SQLite changes the
	// data_version a connection sees whenever another connection commits,
	// so the cache is current while it is unchanged and this process
	// wrote nothing since (update clears it).
	logs    map[recall.Key]*indexedLog
	version int64

	// last is the answer of the last catch-up that found the index
	// current, kept while logs is (see catchUp), or nil.
	last *caughtUp
}

// caughtUp is a catch-up's answer: the rows of the sessions of project
// listed, by id, and the record each had when it was found current. A
// record is immutable (a log that changes gets a new one), so a listing
// of the same records finds the same rows current without comparing.
type caughtUp struct {
	project string
	rows    map[*record]*indexedLog
	byID    map[int64]*indexedLog
	// gen is the project's generation (projectIndex.generation) before
	// its records were listed, when it had one (genOK): while it stays,
	// and the index's rows too, nothing needs a look.
	gen   uint64
	genOK bool
}

// indexErr wraps an error of the index (not of the logs): Search rebuilds
// a damaged index and otherwise answers by scanning the logs.
type indexErr struct{ err error }

func (e *indexErr) Error() string { return "search index: " + e.err.Error() }
func (e *indexErr) Unwrap() error { return e.err }

// ixErr wraps err as an error of the index, marking damage.
func ixErr(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			err = fmt.Errorf("%w: %w", errIndexDamaged, err)
		}
	}
	return &indexErr{err}
}

// open opens the index file, creating it, or reopens it when the file was
// removed or replaced since. The caller holds x.mu.
func (x *searchIndex) open(ctx context.Context) error {
	if x.db != nil {
		st, err := fsys.StatPath(x.path)
		if err == nil && st.Ino == x.ino {
			return nil
		}
		x.closeLocked()
	}
	// secure_delete zeroes what a delete frees, so the text of a
	// rewritten log (a redaction) does not stay in free pages.
	dsn := fmt.Sprintf("%s?_pragma=busy_timeout(30000)&_pragma=synchronous(NORMAL)&_pragma=mmap_size(%d)&_pragma=secure_delete(ON)&_txlock=immediate",
		sqliteURI(x.path), searchMmapSize)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return ixErr(err)
	}
	db.SetMaxOpenConns(1)
	if err := x.prepare(ctx, db); err != nil {
		db.Close()
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return ixErr(err)
	}
	st, err := fsys.StatPath(x.path)
	if err != nil {
		conn.Close()
		db.Close()
		return ixErr(err)
	}
	x.db, x.conn, x.ino = db, conn, st.Ino
	return nil
}

// prepare checks the database's version and creates its tables when it
// is new. A file of another version is damaged for this store.
func (x *searchIndex) prepare(ctx context.Context, db *sql.DB) error {
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
		return ixErr(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return ixErr(err)
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return ixErr(err)
	}
	switch version {
	case searchSchemaVersion:
		// Touch every table, so a file whose schema was damaged says so now.
		for _, t := range []string{"logs", "items", "items_fts"} {
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM "+t+" LIMIT 1)").Scan(&n); err != nil {
				return ixErr(fmt.Errorf("%w: %w", errIndexDamaged, err))
			}
		}
		return nil
	case 2:
		// The head column: unknown (-1) until a log is indexed again.
		if _, err := tx.ExecContext(ctx, "ALTER TABLE logs ADD COLUMN head INTEGER NOT NULL DEFAULT -1"); err != nil {
			return ixErr(err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", searchSchemaVersion)); err != nil {
			return ixErr(err)
		}
		return ixErr(tx.Commit())
	case 0:
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
			return ixErr(err)
		}
		if n != 0 {
			return ixErr(fmt.Errorf("%w: unknown tables", errIndexDamaged))
		}
	default:
		return ixErr(fmt.Errorf("%w: version %d, want %d", errIndexDamaged, version, searchSchemaVersion))
	}
	if _, err := tx.ExecContext(ctx, searchSchema); err != nil {
		return ixErr(err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", searchSchemaVersion)); err != nil {
		return ixErr(err)
	}
	return ixErr(tx.Commit())
}

func (x *searchIndex) closeLocked() {
	if x.db != nil {
		x.conn.Close()
		x.db.Close()
		x.db, x.conn, x.ino, x.logs, x.last = nil, nil, 0, nil, nil
	}
}

func (x *searchIndex) close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closeLocked()
}

// reset removes the index file (a damaged one) so the next open builds it
// afresh. The caller holds x.mu.
func (x *searchIndex) reset() {
	x.closeLocked()
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		os.Remove(x.path + suffix)
	}
}

// indexedLog is a log's row in logs.
type indexedLog struct {
	id       int64
	key      recall.Key
	ino      uint64
	off      int64
	chk      uint32
	head     int64 // crc32 of the log's first checkLen bytes; -1 unknown
	title    string
	ntitle   string
	updated  time.Time
	archived int // hiddenState
}

// hiddenState is the logs.archived value of a session with metadata m: 2
// in the trash (Search never finds it), 1 archived (found when the
// search includes archived sessions), else 0. An index written before
// the trash existed holds 0 and 1 only, which mean the same.
func hiddenState(m recall.Meta) int {
	switch {
	case !m.Trashed.IsZero():
		return 2
	case m.Archived:
		return 1
	}
	return 0
}

// hidden reports whether a search with opts leaves the session out.
func (r *indexedLog) hidden(opts recall.SearchOptions) bool {
	return r.archived == 2 || r.archived == 1 && !opts.IncludeArchived
}

// current reports whether the row describes the log as rec found it:
// the same inode, committed end and bytes before it, and the same Updated
// (a session removed and made again may get the inode back, and end in
// the same bytes, but its entries have other times).
func (r *indexedLog) current(rec *record) bool {
	return r != nil && r.ino == rec.st.Ino && r.off == rec.off && r.chk == rec.check && r.updated.Equal(rec.updated)
}

const logColumns = "id, project, session, ino, off, chk, head, title, ntitle, upd_s, upd_n, archived"

func scanLog(row interface{ Scan(...any) error }) (*indexedLog, error) {
	var r indexedLog
	var ino, chk, us, un int64
	if err := row.Scan(&r.id, &r.key.Project, &r.key.Session, &ino, &r.off, &chk, &r.head, &r.title, &r.ntitle, &us, &un, &r.archived); err != nil {
		return nil, err
	}
	r.ino, r.chk, r.updated = uint64(ino), uint32(chk), time.Unix(us, un).UTC()
	return &r, nil
}

// indexedLogs returns the rows of logs, of every project, from the cache
// when it is current. The caller holds x.mu.
func (x *searchIndex) indexedLogs(ctx context.Context) (map[recall.Key]*indexedLog, error) {
	var version int64
	if err := x.conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&version); err != nil {
		return nil, err
	}
	if x.logs != nil && version == x.version {
		return x.logs, nil
	}
	rows, err := x.conn.QueryContext(ctx, "SELECT "+logColumns+" FROM logs")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[recall.Key]*indexedLog{}
	for rows.Next() {
		r, err := scanLog(rows)
		if err != nil {
			return nil, err
		}
		out[r.key] = r
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	x.logs, x.version, x.last = out, version, nil
	return out, nil
}

// sqliteURI returns the file: URI of path, with the bytes a URI gives a
// meaning escaped (the index's own name holds a '#').
func sqliteURI(path string) string {
	return "file:" + strings.NewReplacer("%", "%25", "#", "%23", "?", "%3f").Replace(filepath.ToSlash(path))
}

// searchIndexPath returns where the store keeps its search index.
func (s *Store) searchIndexPath() string { return filepath.Join(s.home, searchIndexName) }
