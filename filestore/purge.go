package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/durable"
	"github.com/recallkit/recall/internal/flock"
	"github.com/recallkit/recall/internal/fsys"
	"github.com/recallkit/recall/storekit"
)

// Purge implements storekit.Purger: it rewrites key's log without the
// entries before its latest compaction entry (see storekit.PurgeLog).
//
// It is the one operation that rewrites a log, and it keeps the promises
// of the package documentation:
//
//   - Lines that do not decode are never destroyed: those before the cut
//     are carried into the new log, verbatim, ahead of the compaction
//     entry. The compaction entry is written anew (PurgeLog changes its
//     time and usage); every line after it is copied byte for byte.
//   - The crash-safety story: (1) the new log is written to a temporary
//     file beside the log and fsynced; (2) the temporary file is flocked
//     before it is renamed over the log, so a writer that opens the new
//     log at once waits until (3) the directory is fsynced, and never
//     appends a batch that a power loss could take back with the rename;
//     (4) only then are the locks released. Before the rename the old log
//     is whole, after it the new one is: after SIGKILL or a power loss at
//     any instant the session is as it was before or as it is after.
//   - The old log stays flocked throughout, so no batch can be appended to
//     it meanwhile; writers that waited for it find it replaced and open
//     the new one (see writer.open).
//
// A temporary file left by a crash is named <log>#tmp-<pid>-<n>; the store
// never reads it.
func (s *Store) Purge(ctx context.Context, key recall.Key) (storekit.PurgeResult, error) {
	res, _, err := replaceLog(ctx, s, key, "purge", func(w *writer) (storekit.PurgeResult, error) {
		return w.purge(ctx)
	})
	return res, err
}

// logLine is one line of a log being purged.
type logLine struct {
	raw     []byte // without its '\n'
	entry   recall.Entry
	more    bool
	corrupt bool // non-blank and undecodable
	blank   bool
}

// purge rewrites the locked log; see Purge.
func (w *writer) purge(ctx context.Context) (storekit.PurgeResult, error) {
	buf := make([]byte, w.rec.off)
	if _, err := w.f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return storekit.PurgeResult{}, fmt.Errorf("read log: %w", err)
	}
	lines := splitLog(buf)
	var entries []recall.Entry
	var at []int // line index of each entry
	for i, ln := range lines {
		if !ln.corrupt && !ln.blank {
			entries = append(entries, ln.entry)
			at = append(at, i)
		}
	}
	out, dropped, err := storekit.PurgeLog(w.l.key, entries)
	if err != nil || dropped == 0 {
		return storekit.PurgeResult{}, err
	}
	cut := at[dropped] // the line of the compaction entry kept
	kept := len(entries) - dropped

	var nb []byte
	for _, ln := range lines[:cut] {
		if ln.corrupt {
			nb = append(append(nb, ln.raw...), '\n')
		}
	}
	if nb, err = appendLine(nb, out[0], lines[cut].more); err != nil {
		return storekit.PurgeResult{}, err
	}
	for _, ln := range lines[cut+1:] {
		nb = append(append(nb, ln.raw...), '\n')
	}
	restore := out[kept:]
	for i, e := range restore {
		if nb, err = appendLine(nb, e, i < len(restore)-1); err != nil {
			return storekit.PurgeResult{}, err
		}
	}
	if err := w.replace(ctx, nb); err != nil {
		return storekit.PurgeResult{}, err
	}
	return storekit.PurgeResult{Dropped: dropped, From: out[0].Seq, Restored: len(restore)}, nil
}

// splitLog splits the committed bytes of a log into lines; a last line
// without '\n' (only its newline was lost) is a line too.
func splitLog(buf []byte) []logLine {
	var lines []logLine
	for len(buf) > 0 {
		raw := buf
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			raw, buf = buf[:i], buf[i+1:]
		} else {
			buf = nil
		}
		ln := logLine{raw: raw}
		if len(bytes.TrimSpace(raw)) == 0 {
			ln.blank = true
		} else if e, more, err := decodeLine(raw); err != nil {
			ln.corrupt = true
		} else {
			ln.entry, ln.more = e, more
		}
		lines = append(lines, ln)
	}
	return lines
}

// replace puts data in place of the locked log, by the steps Purge
// describes, and caches the new log's record. The rename is the commit:
// when ctx has ended before it, nothing changes.
func (w *writer) replace(ctx context.Context, data []byte) error {
	path := w.l.path
	tmp := tempName(path)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		f.Close() // releases the new log's flock
		if !renamed {
			os.Remove(tmp)
		}
	}()
	// Nobody else knows the file yet, so the lock is free; it is taken
	// now so that it is held the moment the rename publishes the file.
	if err := flock.Lock(context.Background(), f); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := w.begin(); err != nil {
		return err
	}
	w.rec = nil // until the new log's record is known
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	renamed = true
	if err := durable.SyncDir(filepath.Dir(path)); err != nil {
		return err
	}
	// The purge is done. What follows only caches the new log's metadata;
	// if it fails, the next reader derives it from the log.
	if st, err := fsys.Fstat(f); err == nil {
		if rec, err := derive(context.Background(), f, w.l.key, w.l.rel, st, nil); err == nil {
			// told the index while the new log's flock is held: a writer
			// waiting for it must not get its line in first
			w.rec = rec
			w.p.put(rec)
			w.p.finish(rec)
			w.intent = false
		}
	}
	return nil
}
