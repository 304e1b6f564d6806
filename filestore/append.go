package filestore

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"syscall"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/durable"
	"github.com/recallkit/recall/internal/flock"
	"github.com/recallkit/recall/internal/fsys"
	"github.com/recallkit/recall/storekit"
)

// writer is a log held for writing: the in-process lock and the file lock
// are taken, the torn tail (if any) is set aside, and rec describes the log
// exactly as it is. f is nil when the log does not exist yet; the first
// batch then creates it in one step (see create).
type writer struct {
	s      *Store
	l      loc
	p      *projectIndex
	f      *os.File
	rec    *record // nil once a change left the log in a state not known
	unlock func()

	// intent says the intent line is in the journal: close must say how
	// the change ended (see the crash argument in index.go).
	intent bool
}

// begin tells the index, before the locked log's first change, that it is
// about to change: the intent line is in the journal when begin returns. A
// journal that cannot be written stops the change: a change the index did
// not hear of could be listed stale.
func (w *writer) begin() error {
	if w.intent {
		return nil
	}
	if w.f == nil { // a new log, maybe in a new project: the journal goes beside it
		if err := mkdirDurable(w.p.dir, 0o700); err != nil {
			if errors.Is(err, errNotDir) {
				return fmt.Errorf("%w: a log occupies a directory name on the way to %s", recall.ErrConflict, w.l.path)
			}
			return err
		}
	}
	if err := w.p.appendJournal(appendMark(nil, w.l.rel, lineIntent)); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	w.intent = true
	return nil
}

// finish appends, after the log's changes and still under its locks, the
// log's record. Without a record (a change whose outcome is unknown) the
// intent stays the last word, and readers derive the log.
func (p *projectIndex) finish(rec *record) {
	if rec != nil {
		p.appendJournal(appendRecord(nil, rec)) // when it fails, the intent stays the last word
	}
}

// lockLog takes the write locks of l and brings its record up to date.
func (s *Store) lockLog(ctx context.Context, l loc) (*writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	unlock, err := s.locks.lock(ctx, l.key.Project+"\x00"+l.rel)
	if err != nil {
		return nil, err
	}
	w := &writer{s: s, l: l, p: s.project(l.key.Project), unlock: unlock}
	if err := w.open(ctx); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// open opens and flocks the log, then checks that the path still names the
// file locked: a log removed or replaced while this writer waited must not
// receive the batch (it would be lost with the unlinked file).
func (w *writer) open(ctx context.Context) error {
	for {
		f, err := os.OpenFile(w.l.path, os.O_RDWR|os.O_APPEND, 0)
		if isNotExist(err) {
			return nil
		}
		if errors.Is(err, syscall.EISDIR) {
			return fmt.Errorf("%w: %s is the directory of session %s.jsonl's records", recall.ErrConflict, w.l.path, w.l.rel)
		}
		if err != nil {
			return err
		}
		if err := flock.Lock(ctx, f); err != nil {
			f.Close()
			return err
		}
		st, err := fsys.Fstat(f)
		if err != nil {
			f.Close()
			return err
		}
		pst, err := fsys.StatPath(w.l.path)
		if err != nil && !isNotExist(err) {
			f.Close()
			return err
		}
		if err != nil || pst.Ino != st.Ino {
			f.Close()
			continue // removed or replaced: start over with what is there now
		}
		w.f = f
		return w.sync(ctx, st)
	}
}

// sync makes w.rec describe the locked log whose stat is st: the cached
// record when it matches, else one derived from the log (reading only the
// bytes added since the record, when possible). A torn tail is then moved
// aside. It gives up with ctx's error, before any repair, when ctx ends.
func (w *writer) sync(ctx context.Context, st fsys.Stat) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rec := w.s.cachedRecord(w.p, w.l.rel, st.Size)
	fresh := rec == nil || rec.st != st
	if fresh {
		var err error
		if rec, err = derive(ctx, w.f, w.l.key, w.l.rel, st, rec); err != nil {
			return err
		}
	}
	if rec.off < st.Size {
		fresh = true
		if err := w.begin(); err != nil {
			return err
		}
		w.rec = nil // until the repair is known to be done
		if err := repairTorn(w.f, w.l.path, rec.off, st.Size); err != nil {
			return err
		}
		nst, err := fsys.Fstat(w.f)
		if err != nil {
			return err
		}
		m, err := rec.Meta()
		if err != nil {
			return err
		}
		rec = newRecord(rec.key, rec.rel, logEnd{nst, rec.off, rec.check, rec.unterminated}, m, rec.ctl)
	}
	if fresh {
		w.p.put(rec) // even if no batch follows (a refused one, a Pop of nothing)
	}
	w.rec = rec
	return nil
}

// maxCheapJournal is the journal size below which cachedRecord reads the
// journal whatever the log's size.
const maxCheapJournal = 64 << 10

// cachedRecord returns the record of rel known to the process, loading the
// project's journal first when the process has none and the journal is
// smaller than the log or cheap to read anyway (either read gives a
// starting point; the smaller one is cheaper). Reading a small journal
// also means a refused write finds its record there and writes nothing.
func (s *Store) cachedRecord(p *projectIndex, rel string, logSize int64) *record {
	if r := p.get(rel); r != nil {
		return r
	}
	if js := p.journalSize(); js == 0 || js > logSize && js > maxCheapJournal {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refresh() != nil {
		return nil
	}
	return p.recs[rel]
}

func (w *writer) close() {
	if w.intent {
		w.p.finish(w.rec)
	}
	if w.f != nil {
		w.f.Close() // releases the flock
		w.f = nil
	}
	w.unlock()
	w.p.maybeCompact()
}

// exists reports whether the locked log holds a session: at least one
// entry or one unreadable line, as Stat sees it.
func (w *writer) exists() bool { return w.rec != nil && !w.rec.empty }

// lastSeq returns the LastSeq of the log as locked, 0 for no log.
func (w *writer) lastSeq() int64 {
	if w.rec == nil {
		return 0
	}
	return w.rec.lastSeq()
}

// meta returns the metadata of the log as locked (a fresh Meta for no log).
func (w *writer) meta() (recall.Meta, error) {
	if w.rec == nil {
		return recall.Meta{Key: w.l.key}, nil
	}
	m, err := w.rec.Meta()
	m.Key = w.l.key
	return m, err
}

// errRaced reports that a log this writer meant to create appeared first.
var errRaced = errors.New("log created concurrently")

// write appends entries, whose Seq and Time are set, as one batch and
// returns the metadata after it.
//
// The crash-safety story: (1) the whole batch is encoded before anything
// is written, so a bad entry writes nothing, and ctx is checked last
// before the write, the commit point: a call whose context ended changes
// nothing; (2) it goes out in one write
// on an O_APPEND file, every line but the last marked "more", so a batch
// cut by a crash is recognisably incomplete and readers ignore it; (3)
// with SyncAlways the file is synced (durable.SyncData: fdatasync on Linux,
// F_FULLFSYNC on macOS) before the call returns; (4) a
// failed write or sync is cut off again, so an error means the batch is
// not in the log; (5) only then is the index told.
func (w *writer) write(ctx context.Context, entries []recall.Entry) (recall.Meta, error) {
	m, err := w.meta()
	if err != nil {
		return recall.Meta{}, err
	}
	buf := make([]byte, 0, batchRoom(entries))
	if w.rec != nil && w.rec.unterminated {
		buf = append(buf, '\n') // the last line lost only its newline
	}
	// A new log is created whole in one step (create), so its lines need
	// no batch marks: there is no torn batch to tell apart.
	whole := w.f == nil
	// The batch goes at the log's end, its committed end since sync: the
	// record learns where its control lines are.
	ctl, base := noControls(), int64(0)
	if !whole {
		ctl, base = w.rec.ctl, w.rec.st.Size
	}
	for i, e := range entries {
		at := len(buf)
		if buf, err = appendLine(buf, e, !whole && i < len(entries)-1); err != nil {
			return recall.Meta{}, fmt.Errorf("entry %d: %w", i, err)
		}
		ctl = ctl.see(e, base+int64(at), int64(len(buf)-at-1))
	}
	for _, e := range entries {
		m.Apply(e)
	}
	if err := ctx.Err(); err != nil {
		return recall.Meta{}, err
	}
	if err := w.begin(); err != nil {
		return recall.Meta{}, err
	}
	if w.f == nil {
		return m, w.create(buf, m, ctl)
	}
	pre := w.rec.st.Size
	if _, err := w.f.Write(buf); err != nil {
		w.cut(pre)
		w.rec = nil
		return recall.Meta{}, err
	}
	if w.s.opts.Sync == SyncAlways {
		if err := durable.SyncData(w.f); err != nil {
			w.cut(pre)
			w.rec = nil
			return recall.Meta{}, err
		}
	}
	// The batch is in the log. What follows only caches its metadata; if
	// it fails, the next reader derives it from the log.
	w.rec = nil
	st, err := fsys.Fstat(w.f)
	if err != nil {
		return m, nil
	}
	var check uint32
	if len(buf) >= checkLen {
		check = crc32.ChecksumIEEE(buf[len(buf)-checkLen:])
	} else if check, err = tailCheck(w.f, st.Size); err != nil {
		return m, nil
	}
	if st.Size != pre+int64(len(buf)) {
		ctl = controlLines{} // not where it was written: unknown
	}
	w.rec = newRecord(w.l.key, w.l.rel, logEnd{st: st, off: st.Size, check: check}, m, ctl)
	w.p.put(w.rec)
	return m, nil
}

// cut removes a failed write's bytes. If even that fails, the batch may
// remain; it is then either whole or, missing its last line, ignored.
func (w *writer) cut(size int64) {
	if w.f.Truncate(size) == nil && w.s.opts.Sync == SyncAlways {
		w.f.Sync()
	}
}

// create makes the log with its first batch in one step (temp file, fsync,
// link, fsync of the directory), so no reader ever sees an empty or half
// written new session. The fsyncs do not depend on the sync policy: a
// fork (recall.StoreSession.Fork appends its whole log with IfNew) and a created
// session (recall.StoreSession.Create) are durable once Append returns, as a native
// fork was. It returns errRaced when another writer created the log
// first.
func (w *writer) create(buf []byte, m recall.Meta, ctl controlLines) error {
	f, st, err := createAtomic(w.l.path, buf)
	if f != nil {
		w.f = f // its flock is held until the writer closes
	}
	if errors.Is(err, os.ErrExist) {
		w.rec = nil // another writer's log: its record is its writer's to tell
		return errRaced
	}
	if errors.Is(err, errNotDir) {
		return fmt.Errorf("%w: a log occupies a directory name on the way to %s", recall.ErrConflict, w.l.path)
	}
	if err != nil {
		return err
	}
	check := crc32.ChecksumIEEE(buf[max(0, len(buf)-checkLen):])
	w.rec = newRecord(w.l.key, w.l.rel, logEnd{st: st, off: st.Size, check: check}, m, ctl)
	w.p.put(w.rec)
	w.s.settleDir(w.p)
	return nil
}

// withWriter runs fn with the log of l locked, retrying once more when fn
// lost the race to create the log.
func (s *Store) withWriter(ctx context.Context, l loc, fn func(w *writer) error) error {
	owed := false // a raced writer's intent is in the journal: the next one says how it ended
	for {
		w, err := s.lockLog(ctx, l)
		if err != nil {
			if owed {
				return fmt.Errorf("%w (its index entry is left pending)", err)
			}
			return err
		}
		w.intent = w.intent || owed
		err = fn(w)
		owed = w.intent
		w.close()
		if !errors.Is(err, errRaced) {
			return err
		}
	}
}

// Append implements recall.Store. The guard is checked with the log
// locked (in this process and, by flock, in every other), against the
// record the writer has just brought up to date: the same state the seqs
// are assigned from, so no other writer can come in between.
func (s *Store) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	l, err := s.locate(key)
	if err != nil {
		return 0, fmt.Errorf("filestore: append %s: %w", key, err)
	}
	if err := storekit.ValidateEntries(entries, s.opts.MaxItemSize); err != nil {
		return 0, fmt.Errorf("filestore: append %s: %w", key, err)
	}
	var last int64
	err = s.withWriter(ctx, l, func(w *writer) error {
		last = w.lastSeq()
		if err := guard.Check(w.exists(), last); err != nil {
			return err
		}
		if len(entries) == 0 {
			return nil
		}
		batch := make([]recall.Entry, len(entries))
		now := storekit.Now()
		for i, e := range entries {
			e.Seq = last + 1 + int64(i)
			if e.Time.IsZero() {
				e.Time = now
			}
			batch[i] = e
		}
		m, err := w.write(ctx, batch)
		last = m.LastSeq
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("filestore: append %s: %w", key, err)
	}
	return last, nil
}

// Import implements recall.Store.
func (s *Store) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	l, err := s.locate(key)
	if err != nil {
		return 0, fmt.Errorf("filestore: import %s: %w", key, err)
	}
	if err := storekit.ValidateEntries(entries, s.opts.MaxItemSize); err != nil {
		return 0, fmt.Errorf("filestore: import %s: %w", key, err)
	}
	var last int64
	err = s.withWriter(ctx, l, func(w *writer) error {
		// The plan is made from the LastSeq held under the lock: the
		// entries it keeps are guarded by the seq they continue.
		last = w.lastSeq()
		fresh, err := storekit.ImportPlan(last, entries)
		if err != nil || len(fresh) == 0 {
			return err
		}
		m, err := w.write(ctx, fresh)
		last = m.LastSeq
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("filestore: import %s: %w", key, err)
	}
	return last, nil
}

// Pop implements recall.Store: under the write locks, it reads the newest
// item from the end of the log and appends a pop entry naming it.
func (s *Store) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	l, err := s.locate(key)
	if err != nil {
		return nil, fmt.Errorf("filestore: pop %s: %w", key, err)
	}
	var item recall.Item
	err = s.withWriter(ctx, l, func(w *writer) error {
		if w.f == nil {
			return nil
		}
		live, err := storekit.Tail(1, backward(ctx, w.f, w.rec.off))
		if err != nil || len(live) == 0 {
			return err
		}
		pop := recall.NewEntry(recall.KindPop, live[0].Ref)
		pop.Seq, pop.Time = w.lastSeq()+1, storekit.Now()
		if _, err := w.write(ctx, []recall.Entry{pop}); err != nil {
			return err
		}
		item = live[0].Item.Clone()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("filestore: pop %s: %w", key, err)
	}
	return item, nil
}
