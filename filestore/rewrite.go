package filestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Rewrite implements storekit.Rewriter. The log is rewritten as Purge
// rewrites it (see Purge for the crash-safety story: a temporary file,
// fsynced, renamed over the log, the directory fsynced, the old log
// flocked throughout), so after SIGKILL or a power loss at any instant
// the session is exactly the old bytes or exactly the new. Every line
// that is not replaced is copied byte for byte, undecodable lines too;
// the appended entries follow the last line.
//
// The old bytes live on in two caches, which are rewritten after the
// commit: the project's list index journal, which is compacted to one
// line a record (it holds the session's title and first prompt), and the
// search index, whose rows for the log are rebuilt (the log was renamed,
// so its catch-up reads it whole) with SQLite's secure_delete on, so the
// freed pages are zeroed, and whose write-ahead log is truncated. A
// crash before they are rewritten leaves them stale, as any cache may
// be: the next List or Search notices the new log, and a later Rewrite
// or the next compaction of the journal removes the old lines.
func (s *Store) Rewrite(ctx context.Context, key recall.Key, rw storekit.Rewrite) (recall.Meta, error) {
	meta, p, err := replaceLog(ctx, s, key, "rewrite", func(w *writer) (recall.Meta, error) {
		return w.rewrite(ctx, rw)
	})
	if err != nil {
		return recall.Meta{}, err
	}
	p.compact(true)
	if err := s.forgetSearch(ctx, p.name); err != nil {
		return meta, fmt.Errorf("filestore: rewrite %s: the log is rewritten, but its search index is not yet: %w", key, err)
	}
	return meta, nil
}

// replaceLog runs fn, which writes key's log anew and renames it into
// place (Purge, Rewrite), with the log locked (see withWriter); a missing
// or empty log is recall.ErrNotFound, and op names the operation in the
// error. After fn it settles the log's project folder, which it returns
// with fn's result.
func replaceLog[T any](ctx context.Context, s *Store, key recall.Key, op string, fn func(w *writer) (T, error)) (T, *projectIndex, error) {
	var res T
	l, err := s.locate(key)
	if err == nil {
		err = s.withWriter(ctx, l, func(w *writer) error {
			if w.f == nil || w.rec.empty {
				return recall.ErrNotFound
			}
			var err error
			res, err = fn(w)
			return err
		})
	}
	if err != nil {
		var zero T
		return zero, nil, fmt.Errorf("filestore: %s %s: %w", op, key, err)
	}
	p := s.project(l.key.Project)
	s.settleDir(p) // the rewritten log was renamed into place
	return res, p, nil
}

// rewrite rewrites the locked log; see Rewrite.
func (w *writer) rewrite(ctx context.Context, rw storekit.Rewrite) (recall.Meta, error) {
	buf := make([]byte, w.rec.off)
	if _, err := w.f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return recall.Meta{}, fmt.Errorf("read log: %w", err)
	}
	lines := splitLog(buf)
	var entries []recall.Entry
	for _, ln := range lines {
		if !ln.corrupt && !ln.blank {
			entries = append(entries, ln.entry)
		}
	}
	out, err := storekit.RewriteLog(entries, w.lastSeq(), rw, w.s.opts.MaxItemSize)
	if err != nil {
		return recall.Meta{}, err
	}
	replaced := make(map[int64]bool, len(rw.Replace))
	for _, e := range rw.Replace {
		replaced[e.Seq] = true
	}
	var nb []byte
	i := 0 // the entry of out that line ln holds
	for _, ln := range lines {
		switch {
		case ln.corrupt || ln.blank:
			nb = append(append(nb, ln.raw...), '\n')
			continue
		case replaced[ln.entry.Seq]:
			if nb, err = appendLine(nb, out[i], ln.more); err != nil {
				return recall.Meta{}, err
			}
		default:
			nb = append(append(nb, ln.raw...), '\n')
		}
		i++
	}
	added := out[len(entries):]
	for j, e := range added {
		if nb, err = appendLine(nb, e, j < len(added)-1); err != nil {
			return recall.Meta{}, err
		}
	}
	if err := w.replace(ctx, nb); err != nil {
		return recall.Meta{}, err
	}
	if w.rec != nil {
		return w.meta()
	}
	meta, _ := recall.Replay(w.l.key, out)
	return meta, nil
}

// forgetSearch brings the search index, when there is one, up to date
// with project's logs, so that a rewritten log's old text leaves it, and
// truncates its write-ahead log. Without an index there is nothing to do.
func (s *Store) forgetSearch(ctx context.Context, project string) error {
	x := &s.search
	x.mu.Lock()
	defer x.mu.Unlock()
	x.path = s.searchIndexPath()
	if _, err := os.Stat(x.path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := x.open(ctx); err != nil {
		return err
	}
	if _, err := x.catchUp(ctx, s, project, nil); err != nil {
		return err
	}
	_, err := x.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return ixErr(err)
}
