package retention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

const day = 24 * time.Hour

func TestKeepText(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Keep
		out  string
	}{{"never", Never, "never"}, {"90d", Keep(90 * day), "90d"}, {"1y", Keep(365 * day), "1y"}, {"12h", Keep(12 * time.Hour), "12h"}} {
		k, err := ParseKeep(tt.in)
		if err != nil || k != tt.want || k.String() != tt.out {
			t.Errorf("ParseKeep(%q) = %v (%s), %v", tt.in, time.Duration(k), k, err)
		}
	}
	for _, bad := range []string{"", "0d", "-1d", "forever", "101y"} {
		if _, err := ParseKeep(bad); err == nil {
			t.Errorf("ParseKeep(%q) accepted it", bad)
		}
	}
	p := Policy{Default: Keep(90 * day), Projects: map[string]Keep{"p": Never}, Labels: map[string]Keep{"scratch": Keep(7 * day)}}
	b, err := json.Marshal(p)
	if err != nil || string(b) != `{"default":"90d","projects":{"p":"never"},"labels":{"scratch":"1w"}}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var back Policy
	if err := json.Unmarshal(b, &back); err != nil || back.String() != p.String() {
		t.Errorf("round trip: %s, %v; want %s", back, err, p)
	}
	if err := json.Unmarshal([]byte(`{"default":"soon"}`), &back); err == nil {
		t.Error("a bad keep was read")
	}
}

func TestKeepFor(t *testing.T) {
	p := Policy{
		Default:  Keep(90 * day),
		Projects: map[string]Keep{"work": Keep(365 * day), "forever": Never},
		Labels:   map[string]Keep{"scratch": Keep(7 * day), "keep": Never, "month": Keep(30 * day)},
		Users:    map[string]Keep{"alice": Keep(10 * day)},
	}
	meta := func(project string, labels ...string) recall.Meta {
		return recall.Meta{Key: recall.Key{Project: project, Session: "s"}, Labels: labels}
	}
	for _, tt := range []struct {
		m    recall.Meta
		user string
		want Keep
	}{
		{meta("other"), "", Keep(90 * day)},
		{meta("work"), "", Keep(365 * day)},
		{meta("forever"), "", Never},
		{meta("other"), "alice", Keep(10 * day)},
		{meta("work"), "alice", Keep(365 * day)},               // the project's rule before the user's
		{meta("work", "scratch"), "", Keep(7 * day)},           // a label's before the project's
		{meta("work", "scratch", "month"), "", Keep(30 * day)}, // the longest label
		{meta("other", "scratch", "keep"), "", Never},          // never wins
		{meta("other", "unknown"), "", Keep(90 * day)},
	} {
		if got := p.KeepFor(tt.m, tt.user); got != tt.want {
			t.Errorf("KeepFor(%s %v, user %q) = %s, want %s", tt.m.Key.Project, tt.m.Labels, tt.user, got, tt.want)
		}
	}
	if (Policy{}).IsZero() != true || (Policy{Projects: map[string]Keep{"x": Never}}).IsZero() != true || p.IsZero() {
		t.Error("IsZero")
	}
}

// TestApply: the expired sessions go to the trash, once; pinned ones are
// held, and reported; a session written to since it was listed stays; the
// reserved projects are never looked at; a dry run moves nothing.
func TestApply(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	ctx := context.Background()
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	add := func(project, id string, ago time.Duration, labels ...string) recall.Key {
		k := recall.Key{Project: project, Session: id}
		e := recall.ItemEntries(recall.Message("user", id))
		e[0].Seq, e[0].Time = 1, now.Add(-ago)
		if _, err := st.Import(ctx, k, e...); err != nil {
			t.Fatal(err)
		}
		if labels != nil {
			if _, err := recall.NewSession(st, k).ChangeMeta(ctx, recall.MetaChange{Labels: labels, SetLabels: true}); err != nil {
				t.Fatal(err)
			}
		}
		return k
	}
	old := add("p", "old", 10*day)
	add("p", "new", 1*day)
	pinned := add("p", "pinned", 10*day)
	if _, err := recall.NewSession(st, pinned).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
		t.Fatal(err)
	}
	kept := add("p", "kept", 10*day, "keep")
	scratch := add("q", "scratch", 3*day, "scratch")
	add("_server.tokens", "tok", 100*day)
	p := Policy{Default: Keep(5 * day), Labels: map[string]Keep{"keep": Never, "scratch": Keep(2 * day)}}

	dry, err := Apply(ctx, st, p, Options{Now: now, DryRun: true})
	if err != nil || len(dry.Trashed) != 2 || dry.Held != 1 || dry.Scanned != 5 {
		t.Fatalf("dry run: %+v, %v; want 2 to trash, 1 held, 5 scanned", dry, err)
	}
	if m, _ := st.Stat(ctx, old); !m.Trashed.IsZero() {
		t.Fatal("a dry run moved a session")
	}
	rep, err := Apply(ctx, st, p, Options{Now: now})
	if err != nil || len(rep.Trashed) != 2 {
		t.Fatalf("Apply = %+v, %v", rep, err)
	}
	for _, k := range []recall.Key{old, scratch} {
		if m, err := st.Stat(ctx, k); err != nil || m.Trashed.IsZero() {
			t.Errorf("%s is not in the trash: %+v, %v", k, m, err)
		}
	}
	for _, k := range []recall.Key{pinned, kept, {Project: "p", Session: "new"}, {Project: "_server.tokens", Session: "tok"}} {
		if m, err := st.Stat(ctx, k); err != nil || !m.Trashed.IsZero() {
			t.Errorf("%s went to the trash: %+v, %v", k, m, err)
		}
	}
	again, err := Apply(ctx, st, p, Options{Now: now})
	if err != nil || len(again.Trashed) != 0 {
		t.Errorf("a second run: %+v, %v; want nothing moved twice", again, err)
	}
	if rep, err := Apply(ctx, st, Policy{}, Options{Now: now.Add(1000 * day)}); err != nil || len(rep.Trashed) != 0 || rep.Scanned != 0 {
		t.Errorf("the zero policy: %+v, %v", rep, err)
	}
}

func TestLoadSave(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	ctx := context.Background()
	if p, err := Load(ctx, st); err != nil || !p.IsZero() {
		t.Fatalf("Load of a store without a policy: %+v, %v", p, err)
	}
	for _, p := range []Policy{{Default: Keep(30 * day)}, {Default: Never, Users: map[string]Keep{"bob": Keep(day)}}} {
		if err := Save(ctx, st, p); err != nil {
			t.Fatal(err)
		}
		if got, err := Load(ctx, st); err != nil || got.String() != p.String() {
			t.Errorf("Load = %s, %v; want %s", got, err, p)
		}
	}
	if err := Save(ctx, st, Policy{Projects: map[string]Keep{"": Never}}); !errors.Is(err, ErrBadPolicy) {
		t.Errorf("a rule without a name: %v", err)
	}
	if _, err := st.Append(ctx, key, recall.Guard{}, recall.ItemEntries(recall.Message("user", "not a policy"))...); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, st); !errors.Is(err, recall.ErrCorrupt) {
		t.Errorf("Load of a damaged policy: %v", err)
	}
}

// TestLease: one holder at a time; the holder extends it; it runs out;
// of many claiming at once, exactly one wins.
func TestLease(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	ctx := context.Background()
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	must := func(holder string, at time.Time, want bool) {
		t.Helper()
		if got, err := Lease(ctx, st, "job", holder, at, time.Hour); err != nil || got != want {
			t.Fatalf("Lease(%s at %s) = %v, %v; want %v", holder, at.Format(time.TimeOnly), got, err, want)
		}
	}
	must("a", now, true)
	must("b", now.Add(time.Minute), false)
	must("a", now.Add(30*time.Minute), true) // extends to 13:30
	must("b", now.Add(65*time.Minute), false)
	must("b", now.Add(91*time.Minute), true)
	must("a", now.Add(92*time.Minute), false)

	for round := range 5 {
		at := now.Add(time.Duration(10+round*2) * time.Hour)
		var wg sync.WaitGroup
		wins := make(chan string, 8)
		for i := range 8 {
			wg.Go(func() {
				holder := fmt.Sprintf("r%d", i)
				if ok, err := Lease(ctx, st, "race", holder, at, time.Hour); err != nil {
					t.Error(err)
				} else if ok {
					wins <- holder
				}
			})
		}
		wg.Wait()
		close(wins)
		if n := len(wins); n != 1 {
			t.Errorf("round %d: %d holders won the lease, want 1", round, n)
		}
	}
}
