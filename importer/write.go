package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"maps"
	"strconv"
	"strings"

	"github.com/recallkit/recall"
)

// Outcome says what an import did to one recall record.
type Outcome string

// The outcomes of Write.
const (
	New       Outcome = "new"       // the record did not exist and was created
	Updated   Outcome = "updated"   // entries of new lines were appended
	Unchanged Outcome = "unchanged" // every line was imported before
)

// Result is what Write did (or, in a dry run, would do) to one record.
type Result struct {
	Key     recall.Key `json:"key"`
	Outcome Outcome    `json:"outcome"`
	// Entries counts the entries written (or to write), Items the item
	// entries among them.
	Entries int `json:"entries"`
	Items   int `json:"items"`
}

// The size of one atomic batch: a long transcript is written in several,
// each with the metadata that records how far it reached, so a batch
// stays a size every store takes in one transaction.
const (
	batchRecords = 2000
	batchBytes   = 8 << 20
)

// maxConflicts bounds how often Write reads the record again after a
// concurrent writer moved it.
const maxConflicts = 16

// Write imports one target of t into st: it creates the record, appends
// the entries of lines an earlier import has not consumed, or does
// nothing when there are none (see the package doc). With dryRun it only
// reports what it would write. The errors wrap ErrForeign, ErrChanged or
// the store's own.
func Write(ctx context.Context, st recall.Store, t *Transcript, tg *Target, dryRun bool) (Result, error) {
	res := Result{Key: tg.Key, Outcome: Unchanged}
	w := writer{st: st, t: t, tg: tg}
	for conflicts := 0; ; {
		m, err := st.Stat(ctx, tg.Key)
		exists := err == nil
		if err != nil && !errors.Is(err, recall.ErrNotFound) {
			return res, err
		}
		if !exists && res.Outcome == Unchanged {
			res.Outcome = New
		}
		var offset int64
		if exists {
			if offset, err = w.resume(m); err != nil {
				return res, err
			}
		}
		batch, items, end := w.batch(m, exists, offset)
		if len(batch) == 0 {
			return res, nil
		}
		if dryRun {
			// Count everything left without writing: the batches a real
			// run writes hold these entries and their metadata.
			for len(batch) > 0 {
				res.Entries += len(batch)
				res.Items += items
				m.LastSeq += int64(len(batch))
				batch, items, end = w.batch(m, true, end)
			}
			return res, nil
		}
		if err := checkMetadata(m, batch[len(batch)-1]); err != nil {
			return res, fmt.Errorf("importer: write %s: %w", tg.Key, err)
		}
		guard := recall.IfLastSeq(m.LastSeq)
		if !exists {
			guard = recall.IfNew()
		}
		if _, err := st.Append(ctx, tg.Key, guard, batch...); err != nil {
			if errors.Is(err, recall.ErrConflict) && conflicts < maxConflicts {
				conflicts++
				w.sum = nil // read again from what the record holds now
				continue
			}
			return res, fmt.Errorf("importer: write %s: %w", tg.Key, err)
		}
		conflicts = 0
		res.Entries += len(batch)
		res.Items += items
		if res.Outcome == Unchanged {
			res.Outcome = Updated
		}
	}
}

// checkMetadata refuses a batch whose metadata, merged into what the
// record holds, would be over recall's limits (a person may have added
// pairs of their own since the last import).
func checkMetadata(m recall.Meta, meta recall.Entry) error {
	var c recall.MetaChange
	if err := json.Unmarshal(meta.Data, &c); err != nil {
		return err
	}
	merged := maps.Clone(m.Metadata)
	if merged == nil {
		merged = map[string]string{}
	}
	for k, v := range c.Metadata {
		merged[k] = *v
	}
	return recall.ValidateMetadata(merged)
}

// writer carries the running digest of the bytes consumed across the
// batches of one Write.
type writer struct {
	st     recall.Store
	t      *Transcript
	tg     *Target
	sum    hash.Hash // SHA-256 of t.Data[:summed]
	summed int64
}

// resume checks that a stored record came from this transcript and that
// the transcript still starts with the bytes it consumed, and returns how
// many that is.
func (w *writer) resume(m recall.Meta) (int64, error) {
	md := m.Metadata
	if md[MetaSource] != metaValue(w.t.Tool) || md[MetaSession] != metaValue(w.t.SessionID) || md[MetaAgent] != metaValue(w.tg.Agent) {
		return 0, fmt.Errorf("%w: %s (source %q, session %q)", ErrForeign, w.tg.Key, md[MetaSource], md[MetaSession])
	}
	offset, err := strconv.ParseInt(md[MetaOffset], 10, 64)
	if err != nil || offset < 0 {
		return 0, fmt.Errorf("%w: %s has no valid %s", ErrChanged, w.tg.Key, MetaOffset)
	}
	if offset > int64(len(w.t.Data)) {
		return 0, fmt.Errorf("%w: %s: %d bytes were imported, the transcript has %d", ErrChanged, w.tg.Key, offset, len(w.t.Data))
	}
	if w.digest(offset) != md[MetaDigest] {
		return 0, fmt.Errorf("%w: %s: its first %d bytes differ from those imported", ErrChanged, w.tg.Key, offset)
	}
	return offset, nil
}

// digest returns the SHA-256 of the transcript's first n bytes. Calls
// with growing n, as the batches of one Write make, hash each byte once.
func (w *writer) digest(n int64) string {
	if w.sum == nil || n < w.summed {
		w.sum, w.summed = sha256.New(), 0
	}
	w.sum.Write(w.t.Data[w.summed:n])
	w.summed = n
	return hex.EncodeToString(w.sum.Sum(nil))
}

// batch returns the next batch to append to a record in state m that has
// consumed offset bytes: the entries of the following lines (at most one
// batch's worth, never splitting a line), then one meta entry recording
// the offset they reach. A new record's batch starts with its create entry
// and source metadata. A batch ends between two lines, and never inside a
// turn (Record.Turn). It returns no entries when nothing is left, and
// how many item entries the batch holds and the offset it reaches.
func (w *writer) batch(m recall.Meta, exists bool, offset int64) ([]recall.Entry, int, int64) {
	recs := w.tg.Records
	i := 0
	for i < len(recs) && recs[i].End <= offset {
		i++
	}
	// A record that has every record of the transcript is up to date,
	// even when lines that give no record (bookkeeping) followed.
	if i == len(recs) {
		return nil, 0, offset
	}
	var out []recall.Entry
	if !exists {
		out = append(out, recall.Entry{Kind: recall.KindCreate, Time: w.tg.Created})
	}
	seq := m.LastSeq + int64(len(out)) // the seq of the last entry of out
	view, items, size := m.ItemCount, 0, 0
	end := offset
	for j := i; j < len(recs); j++ {
		r := recs[j]
		if j > i && r.End != end && (j-i >= batchRecords || size >= batchBytes) && (r.Turn == "" || r.Turn != recs[j-1].Turn) {
			break // a full batch ends between two lines, never inside a turn
		}
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
			items++
		}
		out = append(out, e)
		seq++
		size += len(e.Data)
		end = r.End
	}
	// Lines after the last record that give no entry are consumed with
	// it when this batch reaches the end of the records.
	if end == recs[len(recs)-1].End {
		end = int64(len(w.t.Data))
	}
	last := w.tg.Created
	if n := len(out); n > 0 {
		last = out[n-1].Time
	}
	meta := recall.NewEntry(recall.KindMeta, recall.MetaChange{Metadata: w.metadata(m, exists, end)})
	meta.Time = last
	return append(out, meta), items, end
}

// metadata is the change that records a batch reaching end.
func (w *writer) metadata(m recall.Meta, exists bool, end int64) map[string]*string {
	md := map[string]string{
		MetaOffset: strconv.FormatInt(end, 10),
		MetaDigest: w.digest(end),
		MetaFile:   metaValue(w.t.File),
	}
	if !exists {
		md[MetaSource] = metaValue(w.t.Tool)
		md[MetaSession] = metaValue(w.t.SessionID)
		if w.tg.Agent != "" {
			md[MetaAgent] = metaValue(w.tg.Agent)
		}
	}
	if w.tg.Model != "" {
		md[MetaModel] = metaValue(w.tg.Model)
	}
	// A folder is recorded only as it is: one cut to the length metadata
	// takes, or with its bytes replaced, would name another folder.
	if c := w.tg.Cwd; c != "" && metaValue(c) == c {
		md[MetaCwd] = c
	}
	out := make(map[string]*string, len(md))
	for k, v := range maps.All(md) {
		out[k] = &v
	}
	return out
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
