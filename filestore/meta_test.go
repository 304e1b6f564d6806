package filestore_test

import (
	"context"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/storekit"
)

// The metadata map is kept in the index with the rest of the Meta: Stat,
// Load and List return it, from the process that wrote it, from a new
// store reading the index, and from one deriving it from the log alone.
// Title and meta entries leave Updated, the List order and Cleanup's age
// where the last conversation activity put them.
func TestMetadataAndUpdatedInTheIndex(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s := openStore(t, home)
	older := recall.Key{Project: "p", Session: "older"}
	newer := recall.Key{Project: "p", Session: "newer"}
	t0 := storekit.Now().Add(-time.Hour)
	at := func(e recall.Entry, d time.Duration) recall.Entry {
		e.Time = t0.Add(d)
		return e
	}
	if _, err := s.Append(ctx, older, recall.Guard{}, at(recall.Message("user", "a").Entry(), 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, newer, recall.Guard{}, at(recall.Message("user", "b").Entry(), time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Everything but conversation happens to the older one, now.
	if _, err := recall.NewSession(s, older).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"topic": new("billing"), "ticket": new("42")}}); err != nil {
		t.Fatal(err)
	}
	v := "7"
	if _, err := recall.NewSession(s, older).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{"ticket": nil, "priority": &v}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() error{
		func() error {
			_, err := recall.NewSession(s, older).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)})
			return err
		},
		func() error {
			_, err := recall.NewSession(s, older).ChangeMeta(ctx, recall.MetaChange{Pinned: new(false)})
			return err
		},
		func() error {
			_, err := recall.NewSession(s, older).SetTitle(ctx, "Billing", recall.TitleUser)
			return err
		},
		func() error {
			_, err := recall.NewSession(s, older).ChangeMeta(ctx, recall.MetaChange{Labels: []string{"x"}, SetLabels: true})
			return err
		},
		func() error {
			_, err := recall.NewSession(s, older).ChangeMeta(ctx, recall.MetaChange{Archived: new(false)})
			return err
		},
	} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	wantMD := map[string]string{"topic": "billing", "priority": "7"}
	check := func(s *filestore.Store, what string) {
		t.Helper()
		m, err := s.Stat(ctx, older)
		if err != nil || !maps.Equal(m.Metadata, wantMD) || !m.Updated.Equal(t0) || m.Title != "Billing" {
			t.Errorf("%s: Stat = %+v, %v; want metadata %v, updated %v", what, m, err, wantMD, t0)
		}
		if lm, _, err := s.Load(ctx, older); err != nil || !maps.Equal(lm.Metadata, wantMD) || !lm.Updated.Equal(t0) {
			t.Errorf("%s: Load = %+v, %v", what, lm, err)
		}
		page, err := s.List(ctx, "p", recall.ListOptions{})
		if err != nil || len(page.Sessions) != 2 || page.Sessions[0].Key != newer || page.Sessions[1].Key != older {
			t.Fatalf("%s: List = %+v, %v; want newer, then older (the talk, not the changes, orders them)", what, page.Sessions, err)
		}
		if got := page.Sessions[1]; !maps.Equal(got.Metadata, wantMD) || !got.Updated.Equal(t0) {
			t.Errorf("%s: List's older = %+v", what, got)
		}
		if page.Sessions[0].Metadata != nil {
			t.Errorf("%s: List's newer has metadata %v", what, page.Sessions[0].Metadata)
		}
		rep, err := s.Cleanup(ctx, recall.CleanupOptions{OlderThan: t0.Add(30 * time.Second), DryRun: true})
		if err != nil || len(rep.Removed) != 1 || rep.Removed[0].Key != older || !maps.Equal(rep.Removed[0].Metadata, wantMD) {
			t.Errorf("%s: Cleanup dry run = %+v, %v; want the older session, by its last talk", what, rep, err)
		}
	}
	check(s, "the writing store")
	s.Close()
	check(openStore(t, home), "a new store over the index")
	dropIndexes(t, home, "p")
	check(openStore(t, home), "a new store without an index")
}

// dropIndexes removes the index journals of projects.
func dropIndexes(t *testing.T, home string, projects ...string) {
	t.Helper()
	for _, p := range projects {
		if err := os.Remove(indexPath(t, home, p)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}
