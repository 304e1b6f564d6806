package importer

import (
	"errors"
	"fmt"
	"github.com/recallkit/recall/internal/gitremote"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// outcome says what an import did to one recall record.
type outcome string

// The outcomes of a record's import.
const (
	outcomeNew       outcome = "new"       // the record did not exist and was created
	outcomeUpdated   outcome = "updated"   // entries of new lines were appended
	outcomeUnchanged outcome = "unchanged" // every line was imported before
)

// result is what an import did (or, in a dry run, would do) to one
// record: its outcome, the entries written (or to write), and the item
// entries among them. A record with no outcome was not written.
type result struct {
	Outcome outcome
	Entries int
	Items   int
}

// add merges what an earlier pass over the same file did.
func (r *result) add(prior result) {
	r.Entries += prior.Entries
	r.Items += prior.Items
	if prior.Outcome == outcomeNew || prior.Outcome == outcomeUpdated && r.Outcome == outcomeUnchanged {
		r.Outcome = prior.Outcome
	}
}

// The size of one atomic batch: a long transcript is written in several,
// each with the metadata that records how far it reached, so a batch
// stays a size every store takes in one transaction.
const (
	batchRecords = 2000
	batchBytes   = 8 << 20
)

// A record's lines are held back (while what keys it is not known) up to
// half a batch: no batch can end among them, so whatever the lines then
// say, the batches are those of a file read with everything known.
const (
	holdRecords = batchRecords / 2
	holdBytes   = batchBytes / 2
)

// turnBatches bounds a batch that a turn keeps open (Record.Turn): a turn
// of more batches than this is cut, so a hostile transcript whose lines
// are all one turn is still written in bounded batches.
const turnBatches = 4

// maxConflicts bounds how often a writer reads the record again after a
// concurrent writer moved it.
const maxConflicts = 16

// writer writes the records of one target in batches as the lines give
// them. Its pending records are, in order: the skip first ones, which it
// does not write (lines an earlier import consumed, or every record of a
// target that writes nothing), kept until a line of another turn so that
// the Mapper may still change them; then the batch under way.
type writer struct {
	key recall.Key
	cwd string

	pending   []pend
	first     int // the number (Target.Add) of pending[0]
	added     int
	skip      int
	size      int // bytes of the entries of the batch
	held      int // bytes of the records' data while they are held
	conv      bool
	firstTime time.Time
	prev      time.Time // the time of the last record, once ready

	// ready: the key and the times are known, and the record's state in
	// the store; until then records are held.
	ready    bool
	nowrite  bool // the target writes nothing (off)
	exists   bool
	lastSeq  int64
	items    int
	meta     map[string]string // the record's metadata as written
	offset   int64             // bytes of the transcript the record has consumed
	checking bool              // the digest at offset is not checked yet
	seq      int64             // the seq of the batch's last entry
	view     int               // the items in view after the batch
	// snap is the digest at snapAt, the end of the last line that added
	// to a full batch: the end of the batch, once the next line shows it.
	snap      string
	snapAt    int64
	conflicts int

	res result
	err error
}

// pend is a pending record and the size of its entry in the batch.
type pend struct {
	rec  Record
	size int
}

// add adds the next record; see Target.Add.
func (w *writer) add(r Record) int {
	n := w.added
	w.added++
	if r.Entry.Kind == recall.KindItem || r.Compaction != nil {
		w.conv = true
	}
	if w.firstTime.IsZero() {
		w.firstTime = r.Entry.Time
	}
	if !w.ready {
		w.held += len(r.Entry.Data)
		if r.Compaction != nil {
			for _, it := range r.Compaction.Items {
				w.held += len(it)
			}
		}
		w.pending = append(w.pending, pend{rec: r})
		return n
	}
	if r.Entry.Time.IsZero() {
		r.Entry.Time = w.prev
	}
	w.prev = r.Entry.Time
	w.pending = append(w.pending, pend{rec: r})
	if r.end <= w.offset {
		w.skip++ // every record before it ends before it too
	} else {
		w.accept(len(w.pending) - 1)
	}
	return n
}

// accept counts pending[i] into the batch: the size of its entry, with
// the seq and view it is written at.
func (w *writer) accept(i int) {
	var e recall.Entry
	e, w.view = entry(w.pending[i].rec, w.seq, w.view)
	w.seq++
	w.pending[i].size = len(e.Data)
	w.size += len(e.Data)
}

// entry returns the entry of r, written after the entry at seq in a log
// whose view holds view items, and the view after it.
func entry(r Record, seq int64, view int) (recall.Entry, int) {
	e := r.Entry
	if r.Compaction != nil {
		c := *r.Compaction
		c.Through, c.Replaced = seq, view
		e = recall.NewEntry(recall.KindCompaction, c)
		e.Time = r.Entry.Time
		view = len(c.Items)
	}
	if e.Kind == recall.KindItem {
		view++
	}
	return e, view
}

// partition splits the pending records at the offset consumed (see
// writer) and sizes the batch from the record's state.
func (w *writer) partition() {
	w.skip = 0
	for w.skip < len(w.pending) && w.pending[w.skip].rec.end <= w.offset {
		w.skip++
	}
	w.seq, w.view, w.size = w.lastSeq, w.items, 0
	if !w.exists {
		w.seq++ // the create entry
	}
	for i := w.skip; i < len(w.pending); i++ {
		w.accept(i)
	}
}

// drop lets go of the first n pending records.
func (w *writer) drop(n int) {
	if n == 0 {
		return
	}
	k := copy(w.pending, w.pending[n:])
	clear(w.pending[k:])
	w.pending = w.pending[:k]
	w.first += n
	w.skip = max(w.skip-n, 0)
}

// off makes the target write nothing: its records are kept only while the
// Mapper may change them.
func (w *writer) off() {
	w.ready, w.nowrite, w.checking, w.offset = true, true, false, math.MaxInt64
	w.partition()
}

// fail stops the target's writes with err, which the summary lists.
func (w *writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
	w.off()
}

// afterLine writes what the line just mapped makes ready: it readies the
// target once its key and times are known, and ends the batch before the
// line's first record when the batch is full.
func (w *writer) afterLine(f *fileImport, tg *Target) error {
	if !w.ready {
		ok, err := w.tryReady(f, tg, false)
		if err != nil {
			return err
		}
		if !ok {
			if f.known == nil && (len(w.pending) >= holdRecords || w.held >= holdBytes) {
				return errHeld
			}
			return nil
		}
	}
	end := f.t.line.End
	i := len(w.pending)
	for i > 0 && w.pending[i-1].rec.end == end {
		i--
	}
	if i == len(w.pending) {
		return nil // the line gave this target nothing
	}
	w.cut(f, tg, i)
	if len(w.pending) > w.skip && w.full(len(w.pending)) {
		w.snap, w.snapAt = f.d.sum(), end
	}
	return nil
}

// full reports whether the batch records before pending[n] fill a batch.
func (w *writer) full(n int) bool {
	return n-w.skip >= batchRecords || w.sizeBefore(n) >= batchBytes
}

// sizeBefore returns the bytes of the batch's entries before pending[n].
func (w *writer) sizeBefore(n int) int {
	s := w.size
	for _, p := range w.pending[max(n, w.skip):] {
		s -= p.size
	}
	return s
}

// cut ends the batch before pending[i], the first record of the line just
// read, when the batch is full and the line starts another turn (or the
// turn has run too long); at another turn it lets go of the skipped
// records before the line, which no later line can change.
func (w *writer) cut(f *fileImport, tg *Target, i int) {
	if i == 0 {
		return
	}
	prev, next := w.pending[i-1].rec, w.pending[i].rec
	n, size := i-w.skip, w.sizeBefore(i)
	long := n >= turnBatches*batchRecords || size >= turnBatches*batchBytes || w.skip >= turnBatches*batchRecords
	if next.Turn != "" && next.Turn == prev.Turn && !long {
		return
	}
	if n <= 0 || !w.full(i) {
		w.drop(min(w.skip, i))
		return
	}
	sum := w.snap
	if w.snapAt != prev.end { // never so: the line that filled the batch took it
		var err error
		if sum, _, err = prefixDigest(f.reopen, prev.end); err != nil {
			w.fail(fmt.Errorf("importer: write %s: %w", w.key, err))
			return
		}
	}
	w.flush(f, tg, i, prev.end, sum)
}

// end writes the last batch at the end of the file: it records every byte
// consumed, the lines after the last record included.
func (w *writer) end(f *fileImport, tg *Target) error {
	if !w.ready {
		if !w.conv {
			return nil // titles alone make no session
		}
		if _, err := w.tryReady(f, tg, true); err != nil {
			return err
		}
	}
	switch {
	case w.nowrite:
	case w.checking:
		w.fail(fmt.Errorf("%w: %s: %d bytes were imported, the transcript has %d", ErrChanged, w.key, w.offset, f.d.n))
	case len(w.pending) > w.skip:
		w.flush(f, tg, len(w.pending), f.d.n, f.d.sum())
	}
	return nil
}

// tryReady readies the target once its key and creation time are known
// (at the end of the file, the file's time stands in for a missing one):
// it gives the held records their times and reads the record's state in
// the store. It reports whether the target is ready; the error is the
// file's.
func (w *writer) tryReady(f *fileImport, tg *Target, eof bool) (bool, error) {
	if !w.conv && f.known == nil {
		return false, nil
	}
	created := f.created(tg, eof)
	if created.IsZero() {
		return false, nil
	}
	key, ok, err := f.key(tg)
	if err != nil || !ok {
		return false, err
	}
	w.key, w.cwd, tg.Created = key, f.cwd(tg), created
	w.ready, w.held, w.res.Outcome = true, 0, outcomeUnchanged
	w.prev = created
	for i := range w.pending {
		if e := &w.pending[i].rec.Entry; e.Time.IsZero() {
			e.Time = w.prev
		}
		w.prev = w.pending[i].rec.Entry.Time
	}
	m, err := f.st.Stat(f.ctx, key)
	switch {
	case errors.Is(err, recall.ErrNotFound):
		w.res.Outcome = outcomeNew
		w.partition()
	case err != nil:
		w.fail(err)
	default:
		if err := w.sync(f, tg, m); err != nil {
			w.fail(err)
		}
	}
	return true, nil
}

// sync takes the record's state from m: it checks that the record came
// from this transcript and that the transcript still starts with the
// bytes the record consumed, now if they are read already (reading them
// again), else as the reading passes them (a checkpoint).
func (w *writer) sync(f *fileImport, tg *Target, m recall.Meta) error {
	md := m.Metadata
	if md[MetaSource] != metaValue(f.tool) || md[MetaSession] != metaValue(f.id.SessionID) || md[MetaAgent] != metaValue(tg.Agent) {
		return fmt.Errorf("%w: %s (source %q, session %q)", ErrForeign, w.key, md[MetaSource], md[MetaSession])
	}
	offset, err := strconv.ParseInt(md[MetaOffset], 10, 64)
	if err != nil || offset < 0 {
		return fmt.Errorf("%w: %s has no valid %s", ErrChanged, w.key, MetaOffset)
	}
	moved := !w.exists || offset != w.offset || md[MetaDigest] != w.meta[MetaDigest]
	w.exists, w.lastSeq, w.items, w.meta = true, m.LastSeq, m.ItemCount, maps.Clone(md)
	if moved {
		w.offset = offset
		if offset >= f.d.n {
			w.checking = true
			f.d.check(checkpoint{at: offset, want: md[MetaDigest], w: w})
		} else {
			sum, ok, err := prefixDigest(f.reopen, offset)
			switch {
			case err != nil:
				return err
			case !ok:
				return fmt.Errorf("%w: %s: %d bytes were imported, the transcript has fewer", ErrChanged, w.key, offset)
			case sum != md[MetaDigest]:
				return fmt.Errorf("%w: %s: its first %d bytes differ from those imported", ErrChanged, w.key, offset)
			}
		}
	}
	if w.err == nil {
		w.partition()
	}
	return w.err
}

// checked takes the result of the checkpoint at the record's offset.
func (w *writer) checked(at int64, ok bool) {
	if w.nowrite || at != w.offset {
		return // a checkpoint of a target that failed, or moved since
	}
	w.checking = false
	if !ok {
		w.fail(fmt.Errorf("%w: %s: its first %d bytes differ from those imported", ErrChanged, w.key, at))
	}
}

// flush writes the batch records before pending[n], with the metadata
// that records end bytes consumed (their digest sum), in one Append. A
// concurrent writer that moved the record (ErrConflict) makes it read the
// record again and write what is still missing.
func (w *writer) flush(f *fileImport, tg *Target, n int, end int64, sum string) {
	for {
		entries, md, items, view := w.batch(f, tg, n, end, sum)
		if err := checkMetadata(w.meta, md); err != nil {
			w.fail(fmt.Errorf("importer: write %s: %w", w.key, err))
			return
		}
		if !f.opts.DryRun {
			guard := recall.IfLastSeq(w.lastSeq)
			if !w.exists {
				guard = recall.IfNew()
			}
			if _, err := f.st.Append(f.ctx, w.key, guard, entries...); err != nil {
				if errors.Is(err, recall.ErrConflict) && w.conflicts < maxConflicts {
					w.conflicts++
					if err := w.resync(f, tg); err != nil {
						w.fail(err)
						return
					}
					if n > w.skip {
						continue // write what the other writer did not
					}
					w.drop(n)
					return
				}
				w.fail(fmt.Errorf("importer: write %s: %w", w.key, err))
				return
			}
		}
		w.conflicts = 0
		w.lastSeq += int64(len(entries))
		w.items, w.offset, w.exists = view, end, true
		if w.meta == nil {
			w.meta = map[string]string{}
		}
		maps.Copy(w.meta, md)
		w.res.Entries += len(entries)
		w.res.Items += items
		if w.res.Outcome == outcomeUnchanged {
			w.res.Outcome = outcomeUpdated
		}
		w.drop(n)
		w.partition()
		return
	}
}

// resync reads the record again after a conflict.
func (w *writer) resync(f *fileImport, tg *Target) error {
	m, err := f.st.Stat(f.ctx, w.key)
	if errors.Is(err, recall.ErrNotFound) {
		return fmt.Errorf("importer: write %s: %w: the record was removed during the import", w.key, recall.ErrConflict)
	}
	if err != nil {
		return err
	}
	return w.sync(f, tg, m)
}

// batch returns the entries of the batch records before pending[n], then
// one meta entry with the metadata md that records end bytes consumed;
// a new record's batch starts with its create entry. It also returns how
// many item entries it holds and the view after it.
func (w *writer) batch(f *fileImport, tg *Target, n int, end int64, sum string) ([]recall.Entry, map[string]string, int, int) {
	var out []recall.Entry
	if !w.exists {
		out = append(out, recall.Entry{Kind: recall.KindCreate, Time: tg.Created})
	}
	seq := w.lastSeq + int64(len(out)) // the seq of the last entry of out
	view, items := w.items, 0
	for _, p := range w.pending[w.skip:n] {
		var e recall.Entry
		e, view = entry(p.rec, seq, view)
		if e.Kind == recall.KindItem {
			items++
		}
		out = append(out, e)
		seq++
	}
	md := w.metadata(f, tg, end, sum)
	change := make(map[string]*string, len(md))
	for k, v := range md {
		change[k] = &v
	}
	meta := recall.NewEntry(recall.KindMeta, recall.MetaChange{Metadata: change})
	meta.Time = tg.Created
	if len(out) > 0 {
		meta.Time = out[len(out)-1].Time
	}
	return append(out, meta), md, items, view
}

// metadata is what a batch reaching end records.
func (w *writer) metadata(f *fileImport, tg *Target, end int64, sum string) map[string]string {
	md := map[string]string{
		MetaOffset: strconv.FormatInt(end, 10),
		MetaDigest: sum,
		MetaFile:   metaValue(f.t.File),
	}
	if !w.exists {
		md[MetaSource] = metaValue(f.tool)
		md[MetaSession] = metaValue(f.id.SessionID)
		if tg.Agent != "" {
			md[MetaAgent] = metaValue(tg.Agent)
		}
	}
	if tg.Model != "" {
		md[MetaModel] = metaValue(tg.Model)
	}
	// A folder is recorded only as it is: one cut to the length metadata
	// takes, or with its bytes replaced, would name another folder.
	if c := w.cwd; c != "" && metaValue(c) == c {
		md[MetaCwd] = c
		if r := gitremote.Of(c); r != "" && metaValue(r) == r {
			md[MetaGitRemote] = r
		}
	}
	return md
}

// checkMetadata refuses a batch whose metadata md, merged into what the
// record holds, would be over recall's limits (a person may have added
// pairs of their own since the last import).
func checkMetadata(have, md map[string]string) error {
	merged := maps.Clone(have)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, md)
	return recall.ValidateMetadata(merged)
}

// metaValue makes s a value recall's metadata takes: valid UTF-8 without
// NUL bytes, at most MaxMetadataValueLen bytes (the end of a long one).
func metaValue(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	return cutLeft(s, recall.MaxMetadataValueLen)
}

// cutLeft keeps the last max bytes of s, starting on a character: a long
// path keeps its file name.
func cutLeft(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	for i := 0; i < len(s) && i < 4; i++ {
		if s[i]&0xC0 != 0x80 {
			return s[i:]
		}
	}
	return s
}
