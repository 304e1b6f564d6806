package opencode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
)

// walSuffix ends the name of a database's write-ahead log. opencode
// writes its database in WAL mode, so the log is the file that grows as
// a session does; the database itself changes at checkpoints.
const walSuffix = "-wal"

// Find returns the databases in dir and the write-ahead log beside each
// one that has it, for recall import --watch (package watch): a change
// of either is a change of the database's sessions, which ImportFile
// imports. The JSON files of versions before the database are not
// followed (opencode copies them into its database once). dir may be a
// database itself ($OPENCODE_DB).
func Find(dir string) ([]string, error) {
	if fi, err := os.Stat(dir); err == nil && fi.Mode().IsRegular() {
		return withLog(nil, dir), nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() || !dbName.MatchString(e.Name()) {
			continue
		}
		out = withLog(out, filepath.Join(dir, e.Name()))
	}
	return out, nil
}

// withLog appends db, and its write-ahead log when there is one, to out.
func withLog(out []string, db string) []string {
	out = append(out, db)
	if fi, err := os.Stat(db + walSuffix); err == nil && fi.Mode().IsRegular() {
		out = append(out, db+walSuffix)
	}
	return out
}

// Follower imports the databases Find returns again and again, as
// recall import --watch does. Its first import of a database reads every
// session; each later one reads only the sessions whose messages, parts,
// title or pending undo changed since it imported them, found by one
// query that reads no message (opencode writes to its database several
// times a second while it answers, and a database holds hundreds of
// sessions). A session whose import failed is read again by the next
// import. The zero Follower is ready; it is for one goroutine at a
// time.
type Follower struct {
	seen map[string]string // session name → the version imported
}

// ImportFile imports the sessions of the database at path, or of the
// database whose write-ahead log path is (a path Find returned), that
// changed since f last imported them: those that grew add what is new.
// A database that holds no session yet is an import of nothing, not an
// error.
func (f *Follower) ImportFile(ctx context.Context, st recall.Store, path string, opts importer.Options) (importer.Summary, error) {
	if db, ok := strings.CutSuffix(path, walSuffix); ok && dbName.MatchString(filepath.Base(db)) {
		path = db
	}
	sum, err := importPaths(ctx, st, []string{path}, opts, f)
	if errors.Is(err, ErrNoSessions) {
		return sum, nil
	}
	return sum, err
}

// unchanged reports whether f imported the session name at version v,
// or failed to.
func (f *Follower) unchanged(name, v string) bool {
	seen, ok := f.seen[name]
	return ok && seen == v
}

// imported records the versions of the sessions an import read and
// wrote; those that failed are read again by the next import.
func (f *Follower) imported(versions map[string]string, names []string, failures []importer.Failure) {
	if f.seen == nil {
		f.seen = map[string]string{}
	}
	failed := map[string]bool{}
	for _, fl := range failures {
		failed[fl.File] = true
	}
	for _, n := range names {
		if !failed[n] {
			f.seen[n] = versions[n]
		}
	}
}
