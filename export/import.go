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

// KindDamaged is the kind Import gives an entry that a store would refuse
// as it is, so the log can still be imported whole with every seq in its
// place:
//
//   - an entry whose payload does not validate (storekit.ValidateEntries):
//     an item that is not a JSON object, a title that does not decode,
//     damaged or written by another program. Readers left it out of the
//     view and the metadata already; they skip the unknown kind likewise.
//   - a seq the exported log lacks: a line the source store could not
//     decode (recall.Meta.Corrupt counted it) and so could not export.
//
// Its payload is a [Damaged] holding the original bytes, for a person to
// look at. Readers skip kinds they do not know, so the imported session's
// view is the original's; its Meta differs only in Corrupt (0: nothing
// damaged is left in the log) and, when a damaged entry was the newest
// activity, in Updated.
const KindDamaged recall.Kind = "damaged"

// Damaged is the payload of a KindDamaged entry.
type Damaged struct {
	// Kind is the original entry's kind; empty for a seq the log lacked.
	Kind recall.Kind `json:"kind,omitempty"`
	// Text is the original payload when it is UTF-8; B64 when it is not.
	Text *string `json:"data_text,omitempty"`
	B64  []byte  `json:"data_b64,omitempty"`
	// Missing is true for a seq the exported log lacked.
	Missing bool `json:"missing,omitempty"`
}

// ImportOptions say where Import writes. The zero value imports into the
// key the export names.
type ImportOptions struct {
	// Project, when set, is the project the session is imported into.
	// Default: the project the export names.
	Project string
	// Session, when set, is the session ID to import into; if it holds
	// another log, Import fails with ErrConflict rather than choose
	// another. Default: the exported session's own ID, or a new one (see
	// Import).
	Session string
}

// Import status values (ImportResult.Status).
const (
	StatusNew       = "new"       // the session was created
	StatusUpdated   = "updated"   // the session held the start of the log; the rest was appended
	StatusUnchanged = "unchanged" // the session held the whole log already
)

// ImportResult reports what Import did for one session or record.
type ImportResult struct {
	// Key is where the session was imported.
	Key recall.Key `json:"key"`
	// From is the key the export named.
	From recall.Key `json:"from"`
	// Status is StatusNew, StatusUpdated or StatusUnchanged.
	Status string `json:"status"`
	// Entries counts the entries written.
	Entries int `json:"entries"`
	// Damaged counts the entries written as KindDamaged.
	Damaged int `json:"damaged,omitempty"`
	// Subagents are the results for the subagent records.
	Subagents []ImportResult `json:"subagents,omitempty"`
}

// Import writes s (as ReadJSONL returns it) into st with recall.Store.Import,
// which keeps every entry's seq, kind, time, payload bytes and usage, and
// then each of its subagent records under the session. The items of the
// imported session are the exported ones byte for byte, and so is its
// metadata (title, labels, metadata, archived, pinned, fork origin,
// created, updated, usage), with the exceptions KindDamaged names.
//
// Where it goes: the key the export names, with opts applied. A session
// already there is never overwritten:
//
//   - if its log is the exported log, or its start (the same session,
//     exported again after it grew), the entries it lacks are appended:
//     importing a file twice changes nothing;
//   - otherwise the session is imported under a new ID (recall.NewSessionID)
//     in the same project, unless opts.Session names the ID, which is then
//     an error wrapping recall.ErrConflict.
//
// After writing, Import reads the log back and compares it with the
// export; a session changed by another writer meanwhile is reported as
// ErrConflict.
func Import(ctx context.Context, st recall.Store, s *Session, opts ImportOptions) (ImportResult, error) {
	from := s.Meta.Key
	key := from
	if opts.Project != "" {
		key.Project = opts.Project
	}
	if opts.Session != "" {
		key.Session = opts.Session
	}
	if err := key.Validate(); err != nil {
		return ImportResult{}, fmt.Errorf("export: import into: %w", err)
	}
	if len(s.Entries) == 0 {
		return ImportResult{}, fmt.Errorf("%w: session %s has no entries", ErrInvalidLog, from)
	}
	entries, damaged := importable(s.Entries)
	status, err := plan(ctx, st, key, entries)
	if errors.Is(err, recall.ErrConflict) && opts.Session == "" && key.IsMain() {
		key.Session = recall.NewSessionID()
		status, err = plan(ctx, st, key, entries)
	}
	if err != nil {
		return ImportResult{}, err
	}
	res := ImportResult{Key: key, From: from, Status: status, Damaged: damaged}
	if status != StatusUnchanged {
		n, err := write(ctx, st, key, entries)
		if err != nil {
			return ImportResult{}, err
		}
		res.Entries = n
	}
	for _, sub := range s.Subagents {
		if sub.Meta.Key.Subpath == "" {
			return res, fmt.Errorf("%w: subagent record of %s without a subpath", ErrInvalidLog, from)
		}
		r, err := Import(ctx, st, sub, ImportOptions{Project: key.Project, Session: key.Session})
		if err != nil {
			return res, err
		}
		res.Subagents = append(res.Subagents, r)
	}
	return res, nil
}

// plan decides what importing entries into key does: StatusNew when key
// is free, StatusUpdated or StatusUnchanged when key holds a start of
// entries, and ErrConflict when it holds another log.
func plan(ctx context.Context, st recall.Store, key recall.Key, entries []recall.Entry) (string, error) {
	_, have, err := st.Load(ctx, key)
	if errors.Is(err, recall.ErrNotFound) {
		return StatusNew, nil
	}
	if err != nil {
		return "", fmt.Errorf("export: import into %s: %w", key, err)
	}
	if len(have) > len(entries) || !sameEntries(have, entries[:len(have)]) {
		return "", fmt.Errorf("export: import into %s: %w: the session exists and holds another log", key, recall.ErrConflict)
	}
	if len(have) == len(entries) {
		return StatusUnchanged, nil
	}
	return StatusUpdated, nil
}

// write imports entries into key and checks that the log now is entries.
func write(ctx context.Context, st recall.Store, key recall.Key, entries []recall.Entry) (int, error) {
	before := int64(0)
	if m, err := st.Stat(ctx, key); err == nil {
		before = m.LastSeq
	}
	if _, err := st.Import(ctx, key, entries...); err != nil {
		return 0, fmt.Errorf("export: import into %s: %w", key, err)
	}
	_, got, err := st.Load(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("export: import into %s: read back: %w", key, err)
	}
	if !sameEntries(got, entries) {
		return 0, fmt.Errorf("export: import into %s: %w: the log read back differs from the export (written to meanwhile?)", key, recall.ErrConflict)
	}
	n := 0
	for _, e := range entries {
		if e.Seq > before {
			n++
		}
	}
	return n, nil
}

// importable returns the entries as a store's Import takes them: an entry
// the store would refuse becomes a KindDamaged entry holding it, and a
// missing seq a KindDamaged entry marked Missing (see KindDamaged). It
// returns how many it made.
func importable(entries []recall.Entry) ([]recall.Entry, int) {
	out := make([]recall.Entry, 0, len(entries))
	damaged := 0
	next := int64(1)
	if len(entries) > 0 && purgedStart(entries[0]) {
		next = entries[0].Seq
	}
	for _, e := range entries {
		for ; next < e.Seq; next++ {
			out = append(out, recall.NewEntry(KindDamaged, Damaged{Missing: true}))
			out[len(out)-1].Seq, out[len(out)-1].Time = next, e.Time
			damaged++
		}
		next = e.Seq + 1
		err := storekit.ValidateEntries([]recall.Entry{e}, math.MaxInt)
		if err == nil || !(errors.Is(err, recall.ErrInvalidItem) || errors.Is(err, recall.ErrInvalidMetadata)) {
			// valid, or refused for a reason that is not the entry's
			// damage (its size): the store says why
			out = append(out, e)
			continue
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
		out = append(out, de)
		damaged++
	}
	return out, damaged
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
