package storekit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/recallkit/recall"
)

// Verify checks the invariants of every session in a store (every project,
// archived sessions and subagent records included) and returns every
// violation joined, or nil. See VerifySession for what is checked.
//
// It is the consistency checker that tests run after every test and that
// `recall check` runs. It reads every log, so it is not cheap. It is safe
// to run beside writers: a session that changes while it is checked is
// read again, so a healthy live session is never reported.
func Verify(ctx context.Context, s recall.Store) error {
	var errs []error
	var keys []recall.Key
	cursor, trash := "", false
	for {
		p, err := s.List(ctx, "", recall.ListOptions{Limit: 500, Cursor: cursor, IncludeArchived: true, Trashed: trash})
		if err != nil {
			return fmt.Errorf("recall: verify: list: %w", err)
		}
		for _, m := range p.Sessions {
			keys = append(keys, m.Key)
			subs, err := s.List(ctx, m.Key.Project, recall.ListOptions{Limit: -1, IncludeArchived: true, Parent: m.Key.Session})
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: list subagent records: %w", m.Key, err))
				continue
			}
			for _, sm := range subs.Sessions {
				keys = append(keys, sm.Key)
			}
		}
		if p.Next == "" && trash {
			break
		}
		if cursor = p.Next; cursor == "" {
			trash = true // then the sessions in the trash
		}
	}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("recall: verify: %w", err)
		}
		if err := VerifySession(ctx, s, k); err != nil && !errors.Is(err, recall.ErrNotFound) {
			errs = append(errs, err) // a session removed since the list is not a problem
		}
	}
	return errors.Join(errs...)
}

// verifyRereads bounds how often VerifySession reads a session again when
// it changed, other than by appends, while it was being read.
const verifyRereads = 20

// VerifySession checks one session's invariants:
//
//   - seqs are dense and strictly increasing, from 1 or from the
//     compaction entry a purge kept;
//   - the stored metadata equals the metadata recall.Replay derives from the log;
//   - Items(0) equals the view recall.Replay derives from the log;
//   - nothing stored is unreadable (recall.Meta.Corrupt is 0).
//
// It reads the log (Load) and then the view (Items, with the LastSeq it
// was read at). When a writer appended in between, the entries past the
// log's end are read too (Entries), so the view is compared with the log
// as it stood at the view's LastSeq; only a session that changed in other
// ways (removed, purged) is read again. Every error wraps recall.ErrCorrupt and
// names the session, except a session that does not exist (recall.ErrNotFound).
func VerifySession(ctx context.Context, s recall.Store, key recall.Key) error {
	for range verifyRereads {
		meta, entries, err := s.Load(ctx, key)
		if err != nil {
			return fmt.Errorf("%s: load: %w", key, err)
		}
		items, last, err := s.Items(ctx, key, 0)
		if err != nil {
			return fmt.Errorf("%s: items: %w", key, err)
		}
		viewLog, ok := logAt(ctx, s, key, meta.LastSeq, entries, last)
		if !ok {
			continue // removed, purged or re-created in between: read again
		}
		if err := verifySnapshot(key, meta, entries, items, viewLog); err != nil {
			// Before reporting, confirm the log held still: a session
			// removed and created anew between the reads, or a store
			// whose Load is not one snapshot, would show a problem that
			// is not in the data.
			if _, again, lerr := s.Load(ctx, key); lerr == nil && !extends(again, viewLog) {
				continue
			}
			return err
		}
		return nil
	}
	return fmt.Errorf("%s: %w: the session changed on each of %d reads", key, recall.ErrConflict, verifyRereads)
}

// logAt returns the log as it stood at seq last, given the log loaded at
// seq loaded: entries itself, or entries extended by those appended since,
// read with Entries. It reports false when that log cannot be had (the
// view is older than the load, or the log changed other than by appends).
func logAt(ctx context.Context, s recall.Store, key recall.Key, loaded int64, entries []recall.Entry, last int64) ([]recall.Entry, bool) {
	switch {
	case last == loaded:
		return entries, true
	case last < loaded:
		return nil, false
	}
	more, err := s.Entries(ctx, key, loaded, int(last-loaded))
	if err != nil || len(more) == 0 || more[0].Seq != loaded+1 || more[len(more)-1].Seq != last {
		return nil, false
	}
	return append(slices.Clip(entries), more...), true
}

// extends reports whether log begins with exactly the entries of prefix.
func extends(log, prefix []recall.Entry) bool {
	if len(log) < len(prefix) {
		return false
	}
	for i, p := range prefix {
		e := log[i]
		if e.Seq != p.Seq || e.Kind != p.Kind || !e.Time.Equal(p.Time) || !bytes.Equal(e.Data, p.Data) {
			return false
		}
	}
	return true
}

// verifySnapshot checks one consistent reading of a session: meta and
// entries were read together, items at the end of viewLog (entries, or
// entries and what was appended after them).
func verifySnapshot(key recall.Key, meta recall.Meta, entries []recall.Entry, items []recall.LiveItem, viewLog []recall.Entry) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %w: %s", key, recall.ErrCorrupt, fmt.Sprintf(format, args...)))
	}
	if meta.Corrupt > 0 {
		records := "records"
		if meta.Corrupt == 1 {
			records = "record"
		}
		bad("%d unreadable stored %s (kept, skipped by readers)", meta.Corrupt, records)
	}
	for i, e := range viewLog {
		switch {
		case i == 0 && e.Seq != 1 && e.Kind != recall.KindCompaction:
			bad("log starts at seq %d", e.Seq)
		case i > 0 && e.Seq != viewLog[i-1].Seq+1:
			bad("seq %d follows seq %d", e.Seq, viewLog[i-1].Seq)
		}
	}
	want, live := recall.Replay(key, entries)
	if len(entries) > 0 && entries[0].Seq > 1 {
		// a purged log: the counts before the kept compaction are gone
		want.Usage = meta.Usage
		want.Created = meta.Created
	}
	if got := metaKey(meta); got != metaKey(want) {
		bad("stored metadata %s, log says %s", got, metaKey(want))
	}
	if meta.ItemCount != len(live) {
		bad("item count %d, view has %d", meta.ItemCount, len(live))
	}
	if len(viewLog) != len(entries) {
		_, live = recall.Replay(key, viewLog)
	}
	if !slices.EqualFunc(items, live, func(a, b recall.LiveItem) bool { return a.Ref == b.Ref && bytes.Equal(a.Item, b.Item) }) {
		bad("Items returns %d items, the log's view has %d (or they differ)", len(items), len(live))
	}
	return errors.Join(errs...)
}

// metaKey renders the fields Verify compares.
func metaKey(m recall.Meta) string {
	const micros = "2006-01-02T15:04:05.999999Z"
	trashed := "-"
	if !m.Trashed.IsZero() {
		trashed = m.Trashed.UTC().Format(micros)
	}
	return fmt.Sprintf("{title %q/%s created %s updated %s items %d last %d archived %t pinned %t trashed %s labels %q metadata %v fork %v usage %v}",
		m.Title, m.TitleSource, m.Created.UTC().Format(micros), m.Updated.UTC().Format(micros),
		m.ItemCount, m.LastSeq, m.Archived, m.Pinned, trashed, m.Labels, m.Metadata, forkString(m.ForkedFrom), m.Usage)
}

func forkString(f *recall.ForkOrigin) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%s@%d", f.Key, f.Seq)
}
