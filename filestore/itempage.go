package filestore

import (
	"context"
	"fmt"
	"io"
	"iter"
	"sync/atomic"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// ReadItems implements storekit.ItemPager. It reads one snapshot of the log,
// its bytes up to its size when opened, in three parts (see
// storekit.ReadPage): the view's control entries, line by line where the
// log's record says they are (see controls.go); and the page's items,
// found by seq with a search over the file (seeker) and read from there,
// backwards or forwards. So a page of a long session costs what the page
// weighs and a few small reads, plus the lines of the pops and removes
// since the view's last clear or compaction.
//
// The record must describe the snapshot: one the process or the journal
// holds for the log's exact stat, else one derived from the log (from the
// record it has, reading only the bytes added since, when it can; see
// derive), kept as a reader's record is (remember). A log with more than
// maxControls controls in its view is read backwards from the end for
// them, back to its last clear or compaction.
func (s *Store) ReadItems(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	l, err := s.locate(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return recall.ItemPage{}, fmt.Errorf("filestore: read items %s: %w", key, err)
	}
	var page recall.ItemPage
	err = retryShrunk(func() (err error) {
		page, err = s.readItems(ctx, l, opts)
		return err
	})
	if err != nil {
		return recall.ItemPage{}, fmt.Errorf("filestore: read items %s: %w", key, err)
	}
	return page, nil
}

func (s *Store) readItems(ctx context.Context, l loc, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	f, st, ok, err := openLog(l)
	if err != nil || !ok {
		return recall.ItemPage{}, err
	}
	defer f.Close()
	rec := s.cachedRecord(s.project(l.key.Project), l.rel, st.Size)
	if rec == nil || rec.st != st {
		if rec, err = derive(ctx, f, l.key, l.rel, st, rec); err != nil {
			return recall.ItemPage{}, err
		}
		s.remember(l, rec)
	}
	// The snapshot is the log up to its committed end: a torn tail after
	// it (which may hold seqs out of order) is never searched or read.
	snap, err := newSnapshot(ctx, f, rec.off, rec.lastSeq(), opts.Limit)
	if err != nil {
		return recall.ItemPage{}, err
	}
	if snap.last != rec.lastSeq() {
		// Read from the end, the newest committed entry is not the one
		// the scan from the start found (a damaged tail the two readings
		// judge apart): the page is cut from the log as Load reads it.
		entries, rec, err := readAll(ctx, f, l, st)
		if err != nil || rec.empty {
			return recall.ItemPage{}, err
		}
		items, more, err := storekit.ReadPage(storekit.SlicePages(entries), opts)
		return recall.ItemPage{Items: items, More: more, LastSeq: rec.lastSeq()}, err
	}
	if snap.last == 0 {
		return recall.ItemPage{}, nil // no committed entry: no session yet
	}
	items, more, err := storekit.ReadPage(storekit.PageReader{
		Controls: snap.controls(rec.ctl),
		Backward: snap.backward,
		Forward:  snap.forward,
	}, opts)
	if err != nil {
		return recall.ItemPage{}, err
	}
	return recall.ItemPage{Items: items, More: more, LastSeq: snap.last}, nil
}

// snapshot reads r[0:size), a log as it was when opened, by seq.
type snapshot struct {
	ctx   context.Context
	r     io.ReaderAt
	size  int64
	last  int64 // the seq of its newest committed entry; 0 for none
	block int   // the first read of a range, sized for a page
	seek  *seeker
}

// newSnapshot reads the newest committed entry of r[0:size) for its seq.
// known, the log's last seq by the index (0 if unknown), and limit size
// the reads.
func newSnapshot(ctx context.Context, r io.ReaderAt, size, known int64, limit int) (*snapshot, error) {
	sn := &snapshot{ctx: ctx, r: r, size: size, block: tailBlock(size, known, limit)}
	first := 4 << 10 // two lines of the log's average, when known
	if known > 0 {
		first = int(min(max(2*(size/known+1), int64(first)), maxTailBlock))
	}
	for _, err := range backwardBlocks(ctx, r, size, first, &sn.last) {
		if err != nil {
			return nil, err
		}
		break // the first entry met is the newest (seqs grow along the log)
	}
	sn.seek = newSeeker(ctx, r, size, sn.last)
	return sn, nil
}

// controls yields the control entries of the view newest first: the lines
// c holds, c being the record's of this snapshot; when c is not known, or
// a line no longer holds a control entry (the log was edited in place
// under an unchanged stat), the entries read backwards from the end.
func (sn *snapshot) controls(c controlLines) iter.Seq2[recall.Entry, error] {
	return func(yield func(recall.Entry, error) bool) {
		es, ok, err := sn.readControls(c)
		if err != nil {
			yield(recall.Entry{}, err)
			return
		}
		if !ok {
			controlScans.Add(1)
			for e, err := range backwardBlocks(sn.ctx, sn.r, sn.size, sn.block, nil) {
				if !yield(e, err) || err != nil {
					return
				}
			}
			return
		}
		for i := len(es) - 1; i >= 0; i-- {
			if !yield(es[i], nil) {
				return
			}
		}
	}
}

// controlScans counts the pages whose controls were read backwards from
// the end of the log, for the tests.
var controlScans atomic.Int64

// readControls reads the entries of c's lines; ok is false when c is not
// known or a line does not hold what it should.
func (sn *snapshot) readControls(c controlLines) (es []recall.Entry, ok bool, err error) {
	if !c.known {
		return nil, false, nil
	}
	for _, l := range c.lines {
		if err := sn.ctx.Err(); err != nil {
			return nil, false, err
		}
		if l.off+l.n > sn.size {
			return nil, false, nil
		}
		buf := make([]byte, l.n)
		if _, err := sn.r.ReadAt(buf, l.off); err != nil {
			return nil, false, err
		}
		e, _, err := decodeLine(buf)
		if err != nil || !isControl(e.Kind) {
			return nil, false, nil
		}
		es = append(es, e)
	}
	return es, true, nil
}

// backward yields the committed entries with seqs up to atMost, newest
// first.
func (sn *snapshot) backward(atMost int64) iter.Seq2[recall.Entry, error] {
	if atMost >= sn.last {
		return backwardBlocks(sn.ctx, sn.r, sn.size, sn.block, nil)
	}
	return func(yield func(recall.Entry, error) bool) {
		// The line of atMost+1, or a later one: a committed line, as the
		// newest entry's line follows it.
		off, err := sn.seek.seek(atMost + 1)
		if err != nil {
			yield(recall.Entry{}, err)
			return
		}
		for e, err := range backwardFrom(sn.ctx, sn.r, off, sn.block) {
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// forward yields the committed entries with seqs from atLeast on, in seq
// order.
func (sn *snapshot) forward(atLeast int64) iter.Seq2[recall.Entry, error] {
	return func(yield func(recall.Entry, error) bool) {
		if atLeast > sn.last {
			return
		}
		off := int64(0)
		if atLeast > 1 {
			var err error
			if off, err = sn.seek.seek(atLeast); err != nil {
				yield(recall.Entry{}, err)
				return
			}
		}
		stopped := false
		sc := scanner{chunk: sn.block, lastSeq: sn.last}
		sc.emit = func(e recall.Entry) {
			if !stopped && e.Seq >= atLeast {
				stopped = !yield(e, nil)
			}
			// The snapshot ends at its newest committed entry: what
			// follows it is a torn tail, whose lines the scanner, told
			// the last seq, would not wait to see committed.
			stopped = stopped || e.Seq >= sn.last
		}
		sc.done = func() bool { return stopped }
		if err := sc.scanFile(sn.ctx, sn.r, off, sn.size); err != nil && !stopped {
			yield(recall.Entry{}, err)
		}
	}
}
