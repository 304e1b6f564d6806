package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fsys"
	"github.com/recallkit/recall/storekit"
)

// Reads take no lock. They see the committed batches of a log (see
// scan.go): a batch being written by another process is either entirely
// visible or not at all.

// openLog opens l's log for reading; ok is false when it does not exist.
func openLog(l loc) (f *os.File, st fsys.Stat, ok bool, err error) {
	f, err = os.Open(l.path)
	if isNotExist(err) {
		return nil, fsys.Stat{}, false, nil
	}
	if err != nil {
		return nil, fsys.Stat{}, false, err
	}
	if st, err = fsys.Fstat(f); err != nil {
		f.Close()
		if isNotExist(err) {
			return nil, fsys.Stat{}, false, nil
		}
		return nil, fsys.Stat{}, false, err
	}
	return f, st, true, nil
}

// readChunk is how much readAll reads between two looks at its context.
const readChunk = 1 << 20

// readAll reads the whole log f of the given size into one allocation, and
// returns its committed entries (aliasing that buffer) and its record: the
// entries and the metadata are one snapshot, the log's first st.Size
// bytes. It reads in chunks and stops with ctx's error when ctx ends.
func readAll(ctx context.Context, f *os.File, l loc, st fsys.Stat) ([]recall.Entry, *record, error) {
	buf := make([]byte, st.Size)
	n := 0
	for n < len(buf) {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		m, err := f.ReadAt(buf[n:min(len(buf), n+readChunk)], int64(n))
		n += m
		if err == io.EOF {
			break // a log never shrinks below a committed end; a short read only loses a torn tail
		}
		if err != nil {
			return nil, nil, err
		}
	}
	buf = buf[:n]
	entries := make([]recall.Entry, 0, bytes.Count(buf, []byte{'\n'})+1)
	ctl := noControls()
	var at, size int64 // the place of the line of the entry emitted next
	sc := scanner{stable: true, at: func(pos, n int64) { at, size = pos, n }, emit: func(e recall.Entry) {
		entries = append(entries, e)
		ctl = ctl.see(e, at, size)
	}}
	if err := sc.scanBytes(ctx, buf, 0); err != nil {
		return nil, nil, err
	}
	m := recall.Meta{Key: l.key}
	for _, e := range entries {
		m.Apply(e) // counts item entries whose item is unusable in Corrupt
	}
	m.Corrupt += sc.corrupt
	check := crc32.ChecksumIEEE(buf[max(0, sc.end-checkLen):sc.end])
	st.Size = int64(n)
	return entries, newRecord(l.key, l.rel, logEnd{st, sc.end, check, sc.unterminated}, m, ctl), nil
}

// Stat implements recall.Store. It costs one stat of the log when the
// process or the index has its metadata, and otherwise a read of the bytes
// the log gained since they were derived.
func (s *Store) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	l, err := s.locate(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return recall.Meta{}, fmt.Errorf("filestore: stat %s: %w", key, err)
	}
	rec, err := s.currentRecord(ctx, l)
	if err != nil {
		return recall.Meta{}, fmt.Errorf("filestore: stat %s: %w", key, err)
	}
	if rec == nil || rec.empty {
		return recall.Meta{}, fmt.Errorf("filestore: stat %s: %w", key, recall.ErrNotFound)
	}
	m, err := rec.Meta()
	if err != nil {
		return recall.Meta{}, fmt.Errorf("filestore: stat %s: %w", key, err)
	}
	m.Key = key
	return m, nil
}

// currentRecord returns an up-to-date record of l's log, or nil when it
// does not exist.
func (s *Store) currentRecord(ctx context.Context, l loc) (*record, error) {
	p := s.project(l.key.Project)
	st, err := fsys.StatPath(l.path)
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec := s.cachedRecord(p, l.rel, st.Size)
	if rec != nil && rec.st == st {
		return rec, nil
	}
	f, st, ok, err := openLog(l)
	if err != nil || !ok {
		return nil, err
	}
	defer f.Close()
	rec, err = derive(ctx, f, l.key, l.rel, st, rec)
	if err != nil {
		return nil, err
	}
	p.remember(rec)
	return rec, nil
}

// Load implements recall.Store. The metadata and the entries come from
// one read of the log, up to its size when it was opened, so they agree.
func (s *Store) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	l, err := s.locate(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return recall.Meta{}, nil, fmt.Errorf("filestore: load %s: %w", key, err)
	}
	f, st, ok, err := openLog(l)
	if err != nil {
		return recall.Meta{}, nil, fmt.Errorf("filestore: load %s: %w", key, err)
	}
	if !ok {
		return recall.Meta{}, nil, fmt.Errorf("filestore: load %s: %w", key, recall.ErrNotFound)
	}
	defer f.Close()
	entries, rec, err := readAll(ctx, f, l, st)
	if err != nil {
		return recall.Meta{}, nil, fmt.Errorf("filestore: load %s: %w", key, err)
	}
	if rec.empty {
		return recall.Meta{}, nil, fmt.Errorf("filestore: load %s: %w", key, recall.ErrNotFound)
	}
	s.remember(l, rec)
	m, _ := rec.Meta()
	if entries == nil {
		entries = []recall.Entry{}
	}
	return m, entries, nil
}

// remember caches a record derived by a reader, unless the process already
// holds the same one (so a loop of reads does not grow the journal).
func (s *Store) remember(l loc, rec *record) {
	p := s.project(l.key.Project)
	if old := p.get(l.rel); old != nil && old.st == rec.st {
		return
	}
	p.remember(rec)
}

// Items implements recall.Store. With a limit it reads the log backwards
// from its end and stops once it has limit items (or reaches a clear or a
// compaction), so its cost does not grow with the session.
//
// The view and the LastSeq returned are one snapshot: both come from the
// log's bytes up to its size when it was opened. The LastSeq is that of
// the newest committed entry in those bytes, the first one the backward
// read meets (seqs grow along the log), so it is never newer or older
// than the view.
func (s *Store) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	l, err := s.locate(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, 0, fmt.Errorf("filestore: items %s: %w", key, err)
	}
	var live []recall.LiveItem
	var last int64
	err = retryShrunk(func() (err error) {
		live, last, err = s.items(ctx, l, limit)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("filestore: items %s: %w", key, err)
	}
	return live, last, nil
}

// retryShrunk runs a read that reads from the end of a log again when the
// log shrank under it (io.EOF): a writer cut a torn tail off meanwhile.
// Committed bytes never go, so the second try sees a stable end.
func retryShrunk(read func() error) error {
	for range 2 {
		if err := read(); !errors.Is(err, io.EOF) {
			return err
		}
	}
	return read()
}

func (s *Store) items(ctx context.Context, l loc, limit int) ([]recall.LiveItem, int64, error) {
	key := l.key
	f, st, ok, err := openLog(l)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, nil
	}
	defer f.Close()
	if limit <= 0 {
		entries, rec, err := readAll(ctx, f, l, st)
		if err != nil {
			return nil, 0, err
		}
		_, live := recall.Replay(key, entries)
		return live, rec.lastSeq(), nil // the items alias a buffer this call allocated
	}
	var known int64 // the index's last seq sizes the first read, when current
	if rec := s.project(key.Project).get(l.rel); rec != nil && rec.st == st && !rec.empty {
		known = rec.lastSeq()
	}
	var last int64
	live, err := storekit.Tail(limit, backwardBlocks(ctx, f, st.Size, tailBlock(st.Size, known, limit), &last))
	if err != nil {
		return nil, 0, err
	}
	// Copy the items out of the read blocks (so those can go) into one
	// buffer: one allocation instead of one per item. Each item is capped,
	// so appending to one never writes over the next.
	n := 0
	for _, l := range live {
		n += len(l.Item)
	}
	buf := make([]byte, 0, n)
	for i := range live {
		at := len(buf)
		buf = append(buf, live[i].Item...)
		live[i].Item = recall.Item(buf[at:len(buf):len(buf)])
	}
	return live, last, nil
}

// Entries implements recall.Store. After a seq, it finds that seq's line
// by a search over the file and reads the page forwards from there, so a
// page costs O(limit) wherever it starts: a replica catching up on the
// newest entries, or an export paging through a long log, reads only
// those.
func (s *Store) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	l, err := s.locate(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("filestore: entries %s: %w", key, err)
	}
	var es []recall.Entry
	err = retryShrunk(func() (err error) {
		es, err = s.entries(ctx, l, after, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("filestore: entries %s: %w", key, err)
	}
	return es, nil
}

func (s *Store) entries(ctx context.Context, l loc, after int64, limit int) ([]recall.Entry, error) {
	f, st, ok, err := openLog(l)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, recall.ErrNotFound
	}
	defer f.Close()
	var last, end int64 // the log's last seq and committed end, when the index knows them
	if rec := s.project(l.key.Project).get(l.rel); rec != nil && rec.st == st {
		if rec.empty {
			return nil, recall.ErrNotFound
		}
		last, end = rec.lastSeq(), rec.off
	}
	var out []recall.Entry
	var snap *snapshot
	if after > 0 && last > 0 {
		if snap, err = newSnapshot(ctx, f, end, last, limit); err != nil {
			return nil, err
		}
		if snap.last != last {
			// Read from the end, the log's newest committed entry is not
			// the one the scan from the start found (a damaged tail the
			// two readings judge apart): the scan from the start decides,
			// as Load's does.
			snap = nil
		}
	}
	if snap != nil {
		// The line after the one of seq after is found by a search over
		// the file (seeker), and the page read forwards from there.
		for e, err := range snap.forward(after + 1) {
			if err != nil {
				return nil, err
			}
			out = append(out, e.Clone())
			if limit > 0 && len(out) >= limit {
				break
			}
		}
	} else {
		sc := scanner{}
		sc.emit = func(e recall.Entry) {
			if e.Seq > after && (limit <= 0 || len(out) < limit) {
				out = append(out, e.Clone())
			}
		}
		sc.done = func() bool { return limit > 0 && len(out) >= limit }
		if err := sc.scanFile(ctx, f, 0, st.Size); err != nil {
			return nil, err
		}
		if len(out) == 0 && after <= 0 && sc.corrupt == 0 { // no entry at all
			return nil, recall.ErrNotFound
		}
	}
	if out == nil {
		out = []recall.Entry{}
	}
	return out, nil
}
