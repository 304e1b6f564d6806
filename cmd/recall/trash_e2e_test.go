package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
)

// trash returns the sessions of "recall trash ls --json".
func (e *env) trash() []recall.Meta {
	e.t.Helper()
	r := e.ok("", "trash", "ls", "--json")
	var page struct {
		Sessions []recall.Meta `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || page.Sessions == nil {
		e.t.Fatalf("trash ls --json: %v\n%s", err, r.stdout)
	}
	return page.Sessions
}

// importTrashed writes a session into the file store at home that was
// moved to the trash age ago.
func importTrashed(t *testing.T, home, project, id string, age time.Duration) {
	t.Helper()
	st, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Now().Add(-age).UTC().Truncate(time.Microsecond)
	yes := true
	entries := []recall.Entry{recall.Message("user", "old").Entry(), recall.NewEntry(recall.KindMeta, recall.MetaChange{Trashed: &yes})}
	for i := range entries {
		entries[i].Seq, entries[i].Time = int64(i+1), at
	}
	if _, err := st.Import(context.Background(), recall.Key{Project: project, Session: id}, entries...); err != nil {
		t.Fatal(err)
	}
}

// TestTrash checks the trash through the CLI: rm moves a session there
// (out of ls, show and search) and says how to restore it; trash restore
// brings it back as it was; rm --purge deletes a session in the trash for
// good; a pinned one needs --force; trash empty deletes the rest.
func TestTrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "narwhal one")
	e.ok("", "chat", "-p", "narwhal two")
	ms := e.ls()
	if len(ms) != 2 {
		t.Fatalf("ls: %+v", ms)
	}
	a, b := ms[0].Key.Session, ms[1].Key.Session
	before := e.ok("", "show", a, "--json").stdout

	r := e.ok("", "rm", a)
	contains(t, "rm", r.stdout, "moved to the trash "+a)
	contains(t, "rm", r.stderr, "recall trash restore "+a)
	if got := e.ls(); len(got) != 1 || got[0].Key.Session != b {
		t.Fatalf("ls after rm: %+v", got)
	}
	e.fails(1, "no session matches", "show", a)
	if r := e.ok("", "search", "narwhal", "--json"); strings.Contains(r.stdout, a) {
		t.Errorf("search finds a session in the trash:\n%s", r.stdout)
	}
	got := e.trash()
	if len(got) != 1 || got[0].Key.Session != a || got[0].Trashed.IsZero() {
		t.Fatalf("trash ls after rm: %+v", got)
	}
	contains(t, "trash ls", e.ok("", "trash", "ls").stdout, a[:8])

	e.fails(1, `no session in the trash matches "`+b+`"`, "trash", "restore", b)
	contains(t, "trash restore", e.ok("", "trash", "restore", a[:8]).stdout, "restored "+a)
	after := e.ok("", "show", a, "--json").stdout
	// Restored as it was: only last_seq moved, by the trash and the restore.
	var bm, am map[string]any
	if err := json.Unmarshal([]byte(before), &bm); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(after), &am); err != nil {
		t.Fatal(err)
	}
	bs, as := bm["session"].(map[string]any), am["session"].(map[string]any)
	if bs == nil || as == nil {
		t.Fatalf("show --json has no session:\n%s", after)
	}
	if as["last_seq"].(float64) != bs["last_seq"].(float64)+2 {
		t.Errorf("last_seq after restore %v, before %v", as["last_seq"], bs["last_seq"])
	}
	delete(as, "last_seq")
	delete(bs, "last_seq")
	bj, _ := json.Marshal(bm)
	aj, _ := json.Marshal(am)
	if string(bj) != string(aj) {
		t.Errorf("show --json after a restore differs:\n%s\nwas\n%s", aj, bj)
	}
	if got := e.trash(); len(got) != 0 {
		t.Fatalf("trash after restore: %+v", got)
	}

	// --purge: for good, sessions in the trash too.
	e.ok("", "rm", b)
	contains(t, "rm --purge", e.ok("", "rm", "--purge", b).stdout, "deleted for good "+b)
	if got := e.trash(); len(got) != 0 {
		t.Fatalf("trash after rm --purge: %+v", got)
	}

	// A pinned session goes to the trash only with --force, and trash
	// empty keeps it.
	e.ok("", "pin", a)
	e.fails(2, "is pinned", "rm", a)
	e.ok("", "rm", a, "--force")
	r = e.ok("", "trash", "empty", "--yes")
	contains(t, "trash empty", r.stdout, "deleted for good 0 sessions from the trash; kept 1 pinned")
	e.ok("", "trash", "restore", a)
	e.ok("", "unpin", a)
	e.ok("", "rm", a)
	e.fails(2, "pass --yes", "trash", "empty")
	contains(t, "trash empty", e.ok("", "trash", "empty", "--yes").stdout, "deleted for good 1 session from the trash")
	if got := e.trash(); len(got) != 0 {
		t.Fatalf("trash after trash empty: %+v", got)
	}
	contains(t, "trash ls", e.ok("", "trash", "ls").stderr, "the trash is empty")
}
