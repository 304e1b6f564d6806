package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
)

// TestPolicy: recall policy set says what a policy would move before it
// is saved; recall gc with no --older-than applies it (labels and pins
// keep sessions), and with --older-than does not; a bad rule is a usage
// error.
func TestPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	proj, err := recall.ProjectKey(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	old := importOld(t, e.home, proj, "old", 10*day, false)
	importOld(t, e.home, proj, "pinned", 10*day, true)
	kept := importOld(t, e.home, proj, "labelled", 10*day, false)
	importOld(t, e.home, proj, "recent", 2*day, false)
	// Labels come from the service's API (PATCH labels); here, through the store.
	st, err := filestore.Open(filestore.Options{Dir: e.home})
	if err != nil {
		t.Fatal(err)
	}
	_, err = recall.NewSession(st, kept).ChangeMeta(context.Background(), recall.MetaChange{Labels: []string{"keep"}, SetLabels: true})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	contains(t, "policy", e.ok("", "policy").stdout, "no retention policy")
	r := e.ok("", "policy", "set", "--default", "5d", "--label", "keep=never", "--dry-run", "--json")
	var plan struct {
		WouldTrash int `json:"would_trash"`
		Held       int `json:"held_pinned"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil || plan.WouldTrash != 1 || plan.Held != 1 {
		t.Fatalf("policy set --dry-run --json: %v\n%s", err, r.stdout)
	}
	contains(t, "policy after a dry run", e.ok("", "policy").stdout, "no retention policy")
	e.fails(2, "--yes", "policy", "set", "--default", "5d", "--label", "keep=never")
	e.ok("", "policy", "set", "--default", "5d", "--label", "keep=never", "--yes")
	contains(t, "policy", e.ok("", "policy").stdout, "label keep never")

	// --older-than overrides the policy: 30d moves nothing.
	e.ok("", "gc", "--older-than", "30d", "--yes")
	if got := e.trash(); len(got) != 0 {
		t.Fatalf("gc --older-than 30d moved %d sessions", len(got))
	}
	r = e.ok("", "gc", "--yes")
	contains(t, "gc", r.stdout, "past the retention policy (default 5d; label keep never)")
	if got := e.trash(); len(got) != 1 || got[0].Key != old {
		t.Errorf("gc with the policy moved %v, want only %s", got, old.Session)
	}
	e.fails(2, "NAME=KEEP", "policy", "set", "--label", "keep")
	e.fails(2, "--default", "policy", "set", "--default", "soon")
}
