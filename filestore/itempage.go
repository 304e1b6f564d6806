package filestore

import (
	"context"
	"fmt"
	"io"
	"iter"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

var _ recall.ItemPager = (*Store)(nil)

// ReadItems implements recall.ItemPager. It reads one snapshot of the log,
// its bytes up to its size when opened, in three parts (see
// storekit.ReadPage): the view's control entries, read backwards from the
// end; and the page's items, found by seq with a search over the file
// (seekSeq) and read from there, backwards or forwards. So a page of a
// long session costs what the page weighs and a few small reads, plus the
// pops and removes since the view's last clear or compaction.
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
	var known int64 // the index's last seq sizes the reads, when current
	if rec := s.project(l.key.Project).get(l.rel); rec != nil && rec.st == st && !rec.empty {
		known = rec.lastSeq()
	}
	snap, err := newSnapshot(ctx, f, st.Size, known, opts.Limit)
	if err != nil || snap.last == 0 {
		return recall.ItemPage{}, err // no committed entry: no session yet
	}
	items, more, err := storekit.ReadPage(storekit.PageReader{
		Controls: backwardBlocks(ctx, f, st.Size, snap.block, nil),
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
	for _, err := range backwardBlocks(ctx, r, size, tailBlock(size, known, 1), &sn.last) {
		if err != nil {
			return nil, err
		}
		break // the first entry met is the newest (seqs grow along the log)
	}
	sn.seek = newSeeker(ctx, r, size, sn.last)
	return sn, nil
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
		sc := scanner{chunk: sn.block}
		sc.emit = func(e recall.Entry) {
			if !stopped && e.Seq >= atLeast {
				stopped = !yield(e, nil)
			}
		}
		sc.done = func() bool { return stopped }
		if err := sc.scanFile(sn.ctx, sn.r, off, sn.size); err != nil && !stopped {
			yield(recall.Entry{}, err)
		}
	}
}
