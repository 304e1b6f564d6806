package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// TestMetadata sets, merges, deletes and clears metadata pairs whose keys
// look like the hash's own fields or the script's encoding, and checks
// Stat, Load and List against memstore after each step.
func TestMetadata(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	ref := memstore.New(memstore.Options{})
	k := recall.Key{Project: "p", Session: "md"}
	sub := recall.Key{Project: "p", Session: "md", Subpath: "subagents/a"}
	long := strings.Repeat("k", recall.MaxMetadataKeyLen)
	str := func(v string) *string { return &v }
	steps := []func(st recall.Store, key recall.Key) error{
		func(st recall.Store, key recall.Key) error {
			_, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{Title: "t", Metadata: map[string]string{"last": "x", "m:title": "y", "updated": ""}})
			return err
		},
		func(st recall.Store, key recall.Key) error {
			_, err := recall.NewSession(st, key).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{
				"3:abc": str("=4:~"), "~": str("\n\x01 é"), long: str(strings.Repeat("v", recall.MaxMetadataValueLen)), "clé": str("valeur"),
			}})

			return err
		},
		func(st recall.Store, key recall.Key) error {
			_, err := recall.NewSession(st, key).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{"last": nil, "updated": str("now set"), "absent": nil}})
			return err
		},
		func(st recall.Store, key recall.Key) error {
			_, err := recall.NewSession(st, key).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}) // no metadata change
			return err
		},
		func(st recall.Store, key recall.Key) error {
			_, err := recall.NewSession(st, key).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"only": new("one"), "m:": new(":")}})
			return err
		},
		func(st recall.Store, key recall.Key) error {
			_, err := recall.NewSession(st, key).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true})
			return err
		},
		func(st recall.Store, key recall.Key) error {
			_, err := recall.NewSession(st, key).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{"again": str("1")}})
			return err
		},
	}
	for i, step := range steps {
		for _, key := range []recall.Key{k, sub} {
			for _, st := range []recall.Store{s, ref} {
				if err := step(st, key); err != nil {
					t.Fatalf("step %d on %s: %v", i, key, err)
				}
			}
			want, _ := ref.Stat(ctx, key)
			got, err := s.Stat(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got.Metadata, want.Metadata) || (got.Metadata == nil) != (want.Metadata == nil) {
				t.Fatalf("step %d: Stat(%s).Metadata = %q, want %q", i, key, got.Metadata, want.Metadata)
			}
			if d := storetest.MetaDiff(got, want, false); d != "" { // the two stores stamp their own times
				t.Errorf("step %d: Stat(%s): %s", i, key, d)
			}
			lm, _, err := s.Load(ctx, key)
			if err != nil || !maps.Equal(lm.Metadata, want.Metadata) {
				t.Errorf("step %d: Load(%s).Metadata = %q, %v; want %q", i, key, lm.Metadata, err, want.Metadata)
			}
			opts := recall.ListOptions{IncludeArchived: true}
			if !key.IsMain() {
				opts.Parent = key.Session
			}
			p, err := s.List(ctx, key.Project, opts)
			if err != nil || !slices.ContainsFunc(p.Sessions, func(m recall.Meta) bool { return m.Key == key && maps.Equal(m.Metadata, want.Metadata) }) {
				t.Errorf("step %d: List does not return %s with metadata %q: %+v, %v", i, key, want.Metadata, p.Sessions, err)
			}
		}
	}
	// The pairs live in fields of their own, beside the hash's fields.
	h := adminClient(t).HGetAll(ctx, s.k.meta(k)).Val()
	if h["m:again"] != "1" || h["last"] == "" || h["title"] != "t" {
		t.Errorf("metadata hash = %q", h)
	}
	verify(t, s)
}

// TestMetaFollowsApply writes random logs, through Append and through
// Import, with times out of order and every kind (an unknown one too), and
// demands memstore's metadata (recall.Meta.Apply) after every batch:
// Updated moves for conversation activity only, in the hash and in the
// List order.
func TestMetaFollowsApply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	ref := memstore.New(memstore.Options{})
	rng := rand.New(rand.NewPCG(11, 12))
	base := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	yes, no := true, false
	entryOf := func(n int) recall.Entry {
		var e recall.Entry
		switch rng.IntN(12) {
		case 0, 1, 2:
			e = item(fmt.Sprint("i", n)).Entry()
		case 3:
			e = recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: fmt.Sprint("t", n), Source: recall.TitleAuto})
		case 4:
			e = recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes, Archived: &no, Labels: []string{"l"}})
		case 5:
			v := fmt.Sprint(n)
			e = recall.NewEntry(recall.KindMeta, recall.MetaChange{Metadata: map[string]*string{"n": &v}})
		case 6:
			e = recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 1})
		case 7:
			e = recall.NewEntry(recall.KindRemove, recall.ItemRef{Seq: 2})
		case 8:
			e = recall.Entry{Kind: recall.KindClear}
		case 9:
			e = recall.Entry{Kind: recall.KindCreate}
		case 10:
			e = recall.NewEntry(recall.KindCompaction, recall.Compaction{Items: []recall.Item{item("sum")}})
		default:
			e = recall.Entry{Kind: "future", Data: json.RawMessage(`{}`)}
		}
		// mostly forward, sometimes back in time
		e.Time = base.Add(time.Duration(n*10-rng.IntN(25)) * time.Second)
		return e
	}
	keys := []recall.Key{{Project: "a", Session: "1"}, {Project: "a", Session: "2"}, {Project: "b", Session: "3"}, {Project: "a", Session: "1", Subpath: "subagents/x"}}
	n := 0
	for round := range 40 {
		key := keys[rng.IntN(len(keys))]
		batch := make([]recall.Entry, 1+rng.IntN(4))
		for i := range batch {
			n++
			batch[i] = entryOf(n)
		}
		if round%3 == 0 {
			m, err := ref.Stat(ctx, key)
			if err != nil {
				m.LastSeq = 0
			}
			for i := range batch {
				batch[i].Seq = m.LastSeq + 1 + int64(i)
			}
			for _, st := range []recall.Store{s, ref} {
				if _, err := st.Import(ctx, key, batch...); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			for _, st := range []recall.Store{s, ref} {
				if _, err := st.Append(ctx, key, recall.Guard{}, batch...); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, key := range keys {
			want, werr := ref.Stat(ctx, key)
			got, err := s.Stat(ctx, key)
			if (werr == nil) != (err == nil) {
				t.Fatalf("Stat(%s) = %v, memstore %v", key, err, werr)
			}
			if d := storetest.MetaDiff(got, want, true); werr == nil && d != "" {
				t.Fatalf("round %d: Stat(%s): %s", round, key, d)
			}
			if werr == nil {
				score, _ := adminClient(t).ZScore(ctx, s.k.indexes(key)[0], member(key)).Result()
				if int64(score) != -want.Updated.UnixMicro() {
					t.Fatalf("round %d: %s's index score %v, want -%d", round, key, score, want.Updated.UnixMicro())
				}
			}
		}
		for _, opts := range []recall.ListOptions{{IncludeArchived: true}, {}} {
			got, _ := s.List(ctx, "", opts)
			want, _ := ref.List(ctx, "", opts)
			if fmt.Sprint(keysOf(got.Sessions)) != fmt.Sprint(keysOf(want.Sessions)) {
				t.Fatalf("round %d: List(%+v) = %v, want %v", round, opts, keysOf(got.Sessions), keysOf(want.Sessions))
			}
		}
	}
	// (No Verify: the random pops and removals name refs that are not in
	// the view, which Meta.Apply counts and Replay's view does not.)
}

// TestUpdatedIgnoresTitleAndMeta is the user's scenario: pinning,
// renaming, archiving, labelling or tagging a session changes neither its
// Updated, nor the List order, nor Cleanup's idea of its age.
func TestUpdatedIgnoresTitleAndMeta(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	old, recent := recall.Key{Project: "p", Session: "old"}, recall.Key{Project: "p", Session: "recent"}
	t0 := storekit.Now().Add(-time.Hour)
	e := item("talk").Entry()
	e.Time = t0
	mustAppend(t, s, old, e)
	e.Time = t0.Add(time.Minute)
	mustAppend(t, s, recent, e)
	if _, err := recall.NewSession(s, old).SetTitle(ctx, "renamed", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	for _, op := range []func() (recall.Meta, error){
		func() (recall.Meta, error) {
			return recall.NewSession(s, old).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)})
		},
		func() (recall.Meta, error) {
			return recall.NewSession(s, old).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)})
		},
		func() (recall.Meta, error) {
			return recall.NewSession(s, old).ChangeMeta(ctx, recall.MetaChange{Archived: new(false)})
		},
		func() (recall.Meta, error) {
			return recall.NewSession(s, old).ChangeMeta(ctx, recall.MetaChange{Labels: []string{"x"}, SetLabels: true})
		},
		func() (recall.Meta, error) {
			return recall.NewSession(s, old).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"k": new("v")}})
		},
		func() (recall.Meta, error) {
			return recall.NewSession(s, old).ChangeMeta(ctx, recall.MetaChange{Pinned: new(false)})
		},
	} {
		m, err := op()
		if err != nil {
			t.Fatal(err)
		}
		if !m.Updated.Equal(t0) {
			t.Fatalf("Updated moved to %s, want %s", m.Updated, t0)
		}
	}
	p, err := s.List(ctx, "p", recall.ListOptions{})
	if err != nil || len(p.Sessions) != 2 || p.Sessions[0].Key != recent {
		t.Fatalf("List = %v, %v; want %s first", keysOf(p.Sessions), err, recent)
	}
	rep, err := recall.Cleanup(ctx, s, recall.CleanupOptions{OlderThan: t0.Add(time.Second)})
	if err != nil || len(rep.Removed) != 1 || rep.Removed[0].Key != old {
		t.Fatalf("Cleanup = %+v, %v; want %s removed", rep, err, old)
	}
	verify(t, s)
}
