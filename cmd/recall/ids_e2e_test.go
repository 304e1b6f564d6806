package main

import (
	"context"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
)

// plant creates sessions with the given IDs in the project of dir, each
// with one user message (its ID), straight in the file store under the
// env's home, for tests that need IDs of a chosen form.
func (e *env) plant(dir string, meta map[string]string, ids ...string) {
	e.t.Helper()
	ctx := context.Background()
	project, err := recall.ProjectKey(dir)
	if err != nil {
		e.t.Fatal(err)
	}
	st, err := filestore.Open(filestore.Options{Dir: e.home})
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	for _, id := range ids {
		key := recall.Key{Project: project, Session: id}
		if _, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{Metadata: meta, Items: []recall.Item{recall.Message("user", "planted "+id)}}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestShortIDsOfOneMinute: sessions created in the same minute show
// 8-character short IDs in ls, distinct, and the first 8 characters of
// each full ID resume it. Two IDs that really share their first 8
// characters are refused with both named; an old time-ordered ID still
// resolves in full.
func TestShortIDsOfOneMinute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"one", "two", "three", "four"} {
		e.ok("", "chat", "-p", p)
	}
	ms := e.ls()
	short := e.shortIDs()
	if len(ms) != 4 || len(short) != 4 {
		t.Fatalf("ls = %d sessions, %d short IDs; want 4", len(ms), len(short))
	}
	seen := map[string]bool{}
	for i, m := range ms {
		if short[i] != m.Key.Session[:8] || seen[short[i]] {
			t.Errorf("short ID of %s = %q; want its first 8 characters, distinct", m.Key.Session, short[i])
		}
		seen[short[i]] = true
		r := e.ok("", "chat", "-r", m.Key.Session[:8], "-p", "again")
		contains(t, "stderr", r.stderr, m.Key.Session)
	}

	twinA, twinB := "abcdef01-1111-4111-8111-111111111111", "abcdef01-2222-4222-8222-222222222222"
	old := "019ad1f2-3b4c-7d5e-8f60-718293a4b5c6"
	e.plant(e.dir, nil, twinA, twinB, old)
	r := e.run("", "chat", "-r", "abcdef01", "-p", "x")
	checkFailure(t, r, 1, "matches 2 sessions", nil)
	contains(t, "stderr", r.stderr, twinA)
	contains(t, "stderr", r.stderr, twinB)
	r = e.ok("", "chat", "-r", old, "-p", "old id")
	contains(t, "stderr", r.stderr, old)
	if !strings.Contains(r.stderr, "restored ") {
		t.Errorf("resume of an old ID: %s", r.stderr)
	}
}

// TestLsShortIDsOfItsProject: ls of a project reads only that project, so
// its short IDs are unique among its own sessions; a session of another
// project sharing the first 8 characters does not lengthen them, and the
// short ID still resolves, from this project, to this project's session.
func TestLsShortIDsOfItsProject(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mine, theirs := "abcdef01-1111-4111-8111-111111111111", "abcdef01-2222-4222-8222-222222222222"
	e.plant(e.dir, nil, mine)
	e.plant(t.TempDir(), nil, theirs)
	if short := e.shortIDs(); len(short) != 1 || short[0] != "abcdef01" {
		t.Fatalf("ls short IDs = %q; want [abcdef01]", short)
	}
	if m, _ := e.show("abcdef01"); m.Key.Session != mine {
		t.Errorf("show abcdef01 = %s; want %s", m.Key.Session, mine)
	}
}
