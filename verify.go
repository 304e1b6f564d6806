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
// violation joined, or nil:
//
//   - seqs are dense and strictly increasing, from 1 or from the
//     compaction entry a purge kept;
//   - the stored metadata equals the metadata Replay derives from the log;
//   - Items(0) equals the view Replay derives from the log.
//
// It is the consistency checker that tests run after every test and that
// `recall check` runs. It reads every log, so it is not cheap.
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
		if err := VerifySession(ctx, s, k); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// VerifySession checks one session's invariants; see Verify.
func VerifySession(ctx context.Context, s Store, key Key) error {
	meta, entries, err := s.Load(ctx, key)
	if err != nil {
		return fmt.Errorf("%s: load: %w", key, err)
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %w: %s", key, ErrCorrupt, fmt.Sprintf(format, args...)))
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
	want.Corrupt = meta.Corrupt
	if len(entries) > 0 && entries[0].Seq > 1 {
		// a purged log: the counts before the kept compaction are gone
		want.Usage = meta.Usage
		want.Created = meta.Created
	}
	if got := metaKey(meta); got != metaKey(want) {
		bad("stored metadata %s, log says %s", got, metaKey(want))
	}
	items, err := s.Items(ctx, key, 0)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: items: %w", key, err))
	} else if !slices.EqualFunc(items, live, func(a, b LiveItem) bool { return a.Ref == b.Ref && bytes.Equal(a.Item, b.Item) }) {
		bad("Items returns %d items, the log's view has %d (or they differ)", len(items), len(live))
	}
	if meta.ItemCount != len(live) {
		bad("item count %d, view has %d", meta.ItemCount, len(live))
	}
	return errors.Join(errs...)
}

// metaKey renders the fields Verify compares.
func metaKey(m Meta) string {
	return fmt.Sprintf("{title %q/%s created %s updated %s items %d last %d archived %t pinned %t labels %q fork %v usage %v}",
		m.Title, m.TitleSource, m.Created.UTC().Format("2006-01-02T15:04:05.999999Z"), m.Updated.UTC().Format("2006-01-02T15:04:05.999999Z"),
		m.ItemCount, m.LastSeq, m.Archived, m.Pinned, m.Labels, forkString(m.ForkedFrom), m.Usage)
}

func forkString(f *ForkOrigin) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%s@%d", f.Key, f.Seq)
}
