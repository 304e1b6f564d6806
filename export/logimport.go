package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// The batches an import writes and the pages it compares: a session's log
// is never held whole.
const (
	importBatch      = 1000    // entries
	importBatchBytes = 8 << 20 // of payload
	comparePage      = 256     // entries of the store's log
)

// logImport imports one exported log (a session's, or a subagent
// record's) as its entries come, for Import and ImportJSONL. While the
// entries are those of the log already at the key, it compares them with
// it, a page at a time; past its end, it writes them in batches, reading
// each back. A log that differs from the one at the key moves to a new
// ID, when it may (move), taking the entries that matched from there.
type logImport struct {
	ctx     context.Context
	st      recall.Store
	from    recall.Key
	move    bool
	rewrite func(recall.Entry) recall.Entry // ImportOptions.Rewrite
	res     ImportResult

	n    int   // entries put, damaged ones made included
	next int64 // the seq the next exported entry should have; 0 before the first
	last int64 // the seq of the last entry put

	comparing bool
	page      []recall.Entry // the store's entries not compared yet
	after     int64          // the seq of the last entry of the store's log read

	batch []recall.Entry
	size  int
}

// newLogImport starts the import of the log exported from key from,
// into the key opts make of it.
func newLogImport(ctx context.Context, st recall.Store, from recall.Key, opts ImportOptions) (*logImport, error) {
	key := from
	if opts.Project != "" {
		key.Project = opts.Project
	}
	if opts.Session != "" {
		key.Session = opts.Session
	}
	if err := key.Validate(); err != nil {
		return nil, fmt.Errorf("export: import into: %w", err)
	}
	im := &logImport{ctx: ctx, st: st, from: from, move: opts.Session == "" && key.IsMain(), rewrite: opts.Rewrite,
		res: ImportResult{Key: key, From: from, Status: StatusNew}}
	_, err := st.Stat(ctx, key)
	switch {
	case errors.Is(err, recall.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("export: import into %s: %w", key, err)
	default:
		im.comparing, im.res.Status = true, StatusUpdated
	}
	return im, nil
}

// entry takes the next exported entry, as a store's Import takes it (see
// KindDamaged): a seq the log lacks before it becomes a damaged entry,
// and so does an entry a store would refuse.
func (im *logImport) entry(e recall.Entry) error {
	if im.rewrite != nil {
		e = im.rewrite(e)
	}
	if im.next == 0 {
		im.next = 1
		if purgedStart(e) {
			im.next = e.Seq
		}
	}
	for ; im.next < e.Seq; im.next++ {
		d := recall.NewEntry(KindDamaged, Damaged{Missing: true})
		d.Seq, d.Time = im.next, e.Time
		im.res.Damaged++
		if err := im.put(d); err != nil {
			return err
		}
	}
	im.next = e.Seq + 1
	err := storekit.ValidateEntries([]recall.Entry{e}, math.MaxInt)
	if err == nil || !(errors.Is(err, recall.ErrInvalidItem) || errors.Is(err, recall.ErrInvalidMetadata)) {
		// valid, or refused for a reason that is not the entry's damage
		// (its size): the store says why
		return im.put(e)
	}
	d := Damaged{Kind: e.Kind}
	if utf8.Valid(e.Data) {
		t := string(e.Data)
		d.Text = &t
	} else {
		d.B64 = bytes.Clone(e.Data)
	}
	de := recall.NewEntry(KindDamaged, d)
	de.Seq, de.Time, de.Usage = e.Seq, e.Time, e.Usage
	im.res.Damaged++
	return im.put(de)
}

// put compares e with the store's log while it lasts, and writes it after.
func (im *logImport) put(e recall.Entry) error {
	im.n++
	im.last = e.Seq
	if im.comparing {
		have, ok, err := im.nextHave()
		if err != nil {
			return err
		}
		if ok {
			if !sameEntries([]recall.Entry{have}, []recall.Entry{e}) {
				return im.conflict(e)
			}
			return nil
		}
		im.comparing = false // the log at the key ends here: the rest is new
	}
	return im.write(e)
}

// nextHave returns the next entry of the store's log, reading a page when
// it needs one; ok is false past its end.
func (im *logImport) nextHave() (recall.Entry, bool, error) {
	if len(im.page) == 0 {
		page, err := im.st.Entries(im.ctx, im.res.Key, im.after, comparePage)
		if err != nil {
			return recall.Entry{}, false, fmt.Errorf("export: import into %s: %w", im.res.Key, err)
		}
		im.page = page
	}
	if len(im.page) == 0 {
		return recall.Entry{}, false, nil
	}
	e := im.page[0]
	im.page, im.after = im.page[1:], e.Seq
	return e, true, nil
}

// conflict handles a log at the key that is not the start of the export:
// an error, or (move) the import goes on under a new ID, which gets the
// entries that matched, copied from the log they matched, then pending.
func (im *logImport) conflict(pending ...recall.Entry) error {
	if !im.move {
		return fmt.Errorf("export: import into %s: %w: the session exists and holds another log", im.res.Key, recall.ErrConflict)
	}
	old, matched := im.res.Key, im.n-len(pending)
	im.res.Key.Session = recall.NewSessionID()
	im.res.Status, im.comparing, im.page = StatusNew, false, nil
	for after, copied := int64(0), 0; copied < matched; {
		page, err := im.st.Entries(im.ctx, old, after, min(comparePage, matched-copied))
		if err != nil {
			return fmt.Errorf("export: import into %s: %w", im.res.Key, err)
		}
		if len(page) == 0 {
			return fmt.Errorf("export: import into %s: %w: %s changed during the import", im.res.Key, recall.ErrConflict, old)
		}
		for _, e := range page {
			if err := im.write(e); err != nil {
				return err
			}
		}
		copied += len(page)
		after = page[len(page)-1].Seq
	}
	for _, e := range pending {
		if err := im.write(e); err != nil {
			return err
		}
	}
	return nil
}

// write adds e to the batch, and writes the batch once it is full.
func (im *logImport) write(e recall.Entry) error {
	im.batch = append(im.batch, e)
	im.size += len(e.Data)
	if len(im.batch) >= importBatch || im.size >= importBatchBytes {
		return im.flush()
	}
	return nil
}

// flush writes the batch with the store's Import, and reads it back: a
// writer that moved the log meanwhile is a conflict.
func (im *logImport) flush() error {
	if len(im.batch) == 0 {
		return nil
	}
	key := im.res.Key
	if _, err := im.st.Import(im.ctx, key, im.batch...); err != nil {
		return fmt.Errorf("export: import into %s: %w", key, err)
	}
	got, err := im.st.Entries(im.ctx, key, im.batch[0].Seq-1, len(im.batch))
	if err != nil {
		return fmt.Errorf("export: import into %s: read back: %w", key, err)
	}
	if !sameEntries(got, im.batch) {
		return fmt.Errorf("export: import into %s: %w: the log read back differs from the export (written to meanwhile?)", key, recall.ErrConflict)
	}
	im.res.Entries += len(im.batch)
	clear(im.batch)
	im.batch, im.size = im.batch[:0], 0
	return nil
}

// finish ends the log: it writes the last batch and checks that the log
// at the key ends where the export does.
func (im *logImport) finish() (ImportResult, error) {
	if im.n == 0 {
		return ImportResult{}, fmt.Errorf("%w: session %s has no entries", ErrInvalidLog, im.from)
	}
	if im.comparing {
		_, more, err := im.nextHave()
		if err != nil {
			return ImportResult{}, err
		}
		if !more {
			im.res.Status = StatusUnchanged
			return im.res, nil
		}
		if err := im.conflict(); err != nil { // the log at the key is longer
			return ImportResult{}, err
		}
	}
	if err := im.flush(); err != nil {
		return ImportResult{}, err
	}
	m, err := im.st.Stat(im.ctx, im.res.Key)
	if err != nil {
		return ImportResult{}, fmt.Errorf("export: import into %s: read back: %w", im.res.Key, err)
	}
	if m.LastSeq != im.last {
		return ImportResult{}, fmt.Errorf("export: import into %s: %w: the log read back differs from the export (written to meanwhile?)", im.res.Key, recall.ErrConflict)
	}
	return im.res, nil
}

// purgedStart reports whether e can start a purged log (see
// storekit.PurgeLog): a compaction entry that read the log at the seq
// before its own.
func purgedStart(e recall.Entry) bool {
	if e.Kind != recall.KindCompaction || e.Seq <= 1 {
		return false
	}
	var c recall.Compaction
	return json.Unmarshal(e.Data, &c) == nil && c.Through == e.Seq-1
}

// sameEntries reports whether two logs are the same entries: seq, kind,
// time, payload bytes and usage.
func sameEntries(a, b []recall.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Seq != y.Seq || x.Kind != y.Kind || !x.Time.Equal(y.Time) || !bytes.Equal(x.Data, y.Data) {
			return false
		}
		if (x.Usage == nil) != (y.Usage == nil) || x.Usage != nil && *x.Usage != *y.Usage {
			return false
		}
	}
	return true
}
