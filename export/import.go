package export

import (
	"context"
	"fmt"
	"io"

	"github.com/recallkit/recall"
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
	// Rewrite, when set, is applied to every exported entry (of the
	// session and of its subagent records) before it is compared with
	// the log at the key and written, as a redaction of secrets
	// (secrets.Redactor.Entries) is: importing the same export twice then
	// still finds the log it wrote. It must keep the entry's seq. Default:
	// entries are imported as they are.
	Rewrite func(recall.Entry) recall.Entry
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
// The log is compared with the session's and written a batch at a time,
// each batch read back and compared with the export; a session changed by
// another writer meanwhile is reported as ErrConflict. A crash midway
// leaves the start of the log, which importing again completes.
func Import(ctx context.Context, st recall.Store, s *Session, opts ImportOptions) (ImportResult, error) {
	im, err := newLogImport(ctx, st, s.Meta.Key, opts)
	if err != nil {
		return ImportResult{}, err
	}
	for _, e := range s.Entries {
		if err := im.entry(e); err != nil {
			return ImportResult{}, err
		}
	}
	res, err := im.finish()
	if err != nil {
		return ImportResult{}, err
	}
	for _, sub := range s.Subagents {
		if sub.Meta.Key.Subpath == "" {
			return res, fmt.Errorf("%w: subagent record of %s without a subpath", ErrInvalidLog, s.Meta.Key)
		}
		r, err := Import(ctx, st, sub, ImportOptions{Project: res.Key.Project, Session: res.Key.Session, Rewrite: opts.Rewrite})
		if err != nil {
			return res, err
		}
		res.Subagents = append(res.Subagents, r)
	}
	return res, nil
}

// ImportJSONL imports every session of a JSONL export read from r, as
// Import does, a line at a time: its memory is bounded by a batch of
// entries, not by the export or a session. Each session's subagent
// records (the headers ScanJSONL marks Nested) go under wherever the
// session went. done, when not nil, is called after each session and its
// records, with the session's header and what was done. It stops at the
// first error: a bad line (ErrInvalidLog) after sessions were imported
// leaves them imported, so a caller that wants nothing written from a
// damaged export scans it first (ScanJSONL).
func ImportJSONL(ctx context.Context, st recall.Store, r io.Reader, opts ImportOptions, done func(recall.Meta, ImportResult) error) error {
	var (
		cur  *logImport
		head recall.Meta // of the session under way
		res  *ImportResult
	)
	// next finishes the log under way: a session's, or a record's under it.
	next := func() error {
		if cur == nil {
			return nil
		}
		r, err := cur.finish()
		cur = nil
		switch {
		case err != nil:
			return err
		case res == nil:
			res = &r
		default:
			res.Subagents = append(res.Subagents, r)
		}
		return nil
	}
	// report hands on the session under way and its records.
	report := func() error {
		if res == nil || done == nil {
			res = nil
			return nil
		}
		r := *res
		res = nil
		return done(head, r)
	}
	for l, err := range ScanJSONL(r) {
		switch {
		case err != nil:
		case l.Header == nil:
			err = cur.entry(l.Entry)
		default:
			err = next()
			if err == nil && l.Nested {
				cur, err = newLogImport(ctx, st, l.Header.Key, ImportOptions{Project: res.Key.Project, Session: res.Key.Session, Rewrite: opts.Rewrite})
			} else if err == nil {
				if err = report(); err == nil {
					head = *l.Header
					cur, err = newLogImport(ctx, st, l.Header.Key, opts)
				}
			}
		}
		if err != nil {
			return err
		}
	}
	if err := next(); err != nil {
		return err
	}
	return report()
}
