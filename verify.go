package recall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
)

// Verify checks the invariants of every session in a store (every project,
// archived sessions and subagent records included) and returns every
// violation joined, or nil. See VerifySession for what is checked.
//
// It is the consistency checker that tests run after every test and that
// `recall check` runs. It reads every log, so it is not cheap. It is safe
// to run beside writers: a session that changes while it is checked is
// read again, so a healthy live session is never reported.
func Verify(ctx context.Context, s Store) error {
	var errs []error
	var keys []Key
	cursor := ""
	for {
		p, err := s.List(ctx, "", ListOptions{Limit: 500, Cursor: cursor, IncludeArchived: true})
		if err != nil {
			return fmt.Errorf("recall: verify: list: %w", err)
		}
		for _, m := range p.Sessions {
			keys = append(keys, m.Key)
			subs, err := s.List(ctx, m.Key.Project, ListOptions{Limit: -1, IncludeArchived: true, Parent: m.Key.Session})
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: list subagent records: %w", m.Key, err))
				continue
			}
			for _, sm := range subs.Sessions {
				keys = append(keys, sm.Key)
			}
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("recall: verify: %w", err)
		}
		if err := VerifySession(ctx, s, k); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err) // a session removed since the list is not a problem
		}
	}
	return errors.Join(errs...)
}

// verifyRereads bounds how often VerifySession reads a session again when
// its LastSeq moved while it was being read.
const verifyRereads = 20

// VerifySession checks one session's invariants:
//
//   - seqs are dense and strictly increasing, from 1 or from the
//     compaction entry a purge kept;
//   - the stored metadata equals the metadata Replay derives from the log;
//   - Items(0) equals the view Replay derives from the log;
//   - nothing stored is unreadable (Meta.Corrupt is 0).
//
// The log (Load) and the view (Items) are compared only when both were
// read at the same LastSeq; when a writer moved it in between, both are
// read again. Every error wraps ErrCorrupt and names the session, except
// a session that does not exist (ErrNotFound).
func VerifySession(ctx context.Context, s Store, key Key) error {
	for range verifyRereads {
		meta, entries, err := s.Load(ctx, key)
		if err != nil {
			return fmt.Errorf("%s: load: %w", key, err)
		}
		items, last, err := s.Items(ctx, key, 0)
		if err != nil {
			return fmt.Errorf("%s: items: %w", key, err)
		}
		if last != meta.LastSeq {
			continue // appended to (or removed) in between: read again
		}
		if err := verifySnapshot(key, meta, entries, items); err != nil {
			// A store whose Load is not one snapshot would show a
			// writer's half-done batch as a problem: confirm it holds
			// still before reporting it.
			if m, serr := s.Stat(ctx, key); serr == nil && m.LastSeq != last {
				continue
			}
			return err
		}
		return nil
	}
	return fmt.Errorf("%s: %w: the session changed on each of %d reads", key, ErrConflict, verifyRereads)
}

// verifySnapshot checks one consistent reading of a session.
func verifySnapshot(key Key, meta Meta, entries []Entry, items []LiveItem) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %w: %s", key, ErrCorrupt, fmt.Sprintf(format, args...)))
	}
	if meta.Corrupt > 0 {
		bad("%d unreadable stored records (kept, skipped by readers)", meta.Corrupt)
	}
	for i, e := range entries {
		switch {
		case i == 0 && e.Seq != 1 && e.Kind != KindCompaction:
			bad("log starts at seq %d", e.Seq)
		case i > 0 && e.Seq != entries[i-1].Seq+1:
			bad("seq %d follows seq %d", e.Seq, entries[i-1].Seq)
		}
	}
	want, live := Replay(key, entries)
	if len(entries) > 0 && entries[0].Seq > 1 {
		// a purged log: the counts before the kept compaction are gone
		want.Usage = meta.Usage
		want.Created = meta.Created
	}
	if got := metaKey(meta); got != metaKey(want) {
		bad("stored metadata %s, log says %s", got, metaKey(want))
	}
	if !slices.EqualFunc(items, live, func(a, b LiveItem) bool { return a.Ref == b.Ref && bytes.Equal(a.Item, b.Item) }) {
		bad("Items returns %d items, the log's view has %d (or they differ)", len(items), len(live))
	}
	if meta.ItemCount != len(live) {
		bad("item count %d, view has %d", meta.ItemCount, len(live))
	}
	return errors.Join(errs...)
}

// metaKey renders the fields Verify compares.
func metaKey(m Meta) string {
	return fmt.Sprintf("{title %q/%s created %s updated %s items %d last %d archived %t pinned %t labels %q metadata %v fork %v usage %v}",
		m.Title, m.TitleSource, m.Created.UTC().Format("2006-01-02T15:04:05.999999Z"), m.Updated.UTC().Format("2006-01-02T15:04:05.999999Z"),
		m.ItemCount, m.LastSeq, m.Archived, m.Pinned, m.Labels, m.Metadata, forkString(m.ForkedFrom), m.Usage)
}

func forkString(f *ForkOrigin) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%s@%d", f.Key, f.Seq)
}
