package sqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// TestCleanupBatches purges (the store's own Cleanup) more sessions than one batch holds, with
// subagent records, pinned sessions and recent ones among them, and checks
// the report and what is left against memstore.
func TestCleanupBatches(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		ctx := context.Background()
		s := newStore(t)
		ref := memstore.New(memstore.Options{})
		old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		cutoff := old.Add(time.Hour)
		n := 2*cleanupBatch + 37
		for i := range n {
			k := recall.Key{Project: fmt.Sprint("p", i%2), Session: fmt.Sprintf("s%04d", i)}
			at := old.Add(time.Duration(i) * time.Millisecond)
			if i%9 == 0 {
				at = cutoff.Add(time.Minute) // recent
			}
			log := []recall.Entry{{Seq: 1, Kind: recall.KindItem, Time: at, Data: []byte(msg("x"))}}
			if i%10 == 3 {
				yes := true
				log = append(log, recall.Entry{Seq: 2, Kind: recall.KindMeta, Time: at, Data: mustJSON(recall.MetaChange{Pinned: &yes})})
			}
			for _, st := range []recall.Store{s, ref} {
				if _, err := st.Import(ctx, k, log...); err != nil {
					t.Fatal(err)
				}
				if i%7 == 0 {
					sk := k
					sk.Subpath = "subagents/a"
					// a recent record under an old session goes with it
					if _, err := st.Import(ctx, sk, recall.Entry{Seq: 1, Kind: recall.KindItem, Time: cutoff.Add(time.Hour), Data: []byte(msg("sub"))}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		for _, opts := range []recall.CleanupOptions{
			{OlderThan: cutoff, DryRun: true, Purge: true},
			{OlderThan: cutoff, Project: "p1", Purge: true},
			{OlderThan: cutoff, Purge: true},
			{OlderThan: cutoff, Purge: true},
		} {
			got, err1 := recall.Cleanup(ctx, s, opts)
			want, err2 := recall.Cleanup(ctx, ref, opts)
			if err1 != nil || err2 != nil {
				t.Fatalf("%+v: %v / memstore %v", opts, err1, err2)
			}
			if a, b := metaKeys(got.Removed), metaKeys(want.Removed); a != b || got.Kept != want.Kept {
				t.Fatalf("%+v: removed %d (%s) kept %d\nmemstore removed %d (%s) kept %d", opts,
					len(got.Removed), a, got.Kept, len(want.Removed), b, want.Kept)
			}
			t.Logf("%+v: removed %d, kept %d pinned", opts, len(got.Removed), got.Kept)
		}
		left, err := s.List(ctx, "", recall.ListOptions{Limit: -1, IncludeArchived: true})
		if err != nil {
			t.Fatal(err)
		}
		refLeft, _ := ref.List(ctx, "", recall.ListOptions{Limit: -1, IncludeArchived: true})
		if a, b := keys(left), keys(refLeft); a != b {
			t.Fatalf("left:\n %s\nmemstore\n %s", a, b)
		}
		// the subagent records of removed sessions are gone too
		var subs int
		if err := s.db.q().queryRow(ctx, `SELECT count(*) FROM sessions WHERE subpath <> ''`).Scan(&subs); err != nil {
			t.Fatal(err)
		}
		wantSubs := 0
		for _, m := range refLeft.Sessions {
			p, _ := ref.List(ctx, m.Key.Project, recall.ListOptions{Limit: -1, Parent: m.Key.Session, IncludeArchived: true})
			wantSubs += len(p.Sessions)
		}
		if subs != wantSubs {
			t.Errorf("%d subagent records left, want %d", subs, wantSubs)
		}
		var orphans int
		if err := s.db.q().queryRow(ctx, `SELECT count(*) FROM entries WHERE session NOT IN (SELECT sid FROM sessions)`).Scan(&orphans); err != nil || orphans != 0 {
			t.Errorf("%d entries of removed sessions left (%v)", orphans, err)
		}
		verify(t, s)
	})
}

func metaKeys(ms []recall.Meta) string {
	var s string
	for _, m := range ms {
		s += m.Key.String() + " "
	}
	return s
}
