package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/provider/offline"
)

func TestForkRenameShow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "one")
	e.ok("", "chat", "-c", "-p", "two")
	src := e.ls()[0]
	short := e.shortIDs()[0]

	// The jsonl format is the whole log, one entry a line, seqs dense.
	r := e.ok("", "show", short, "--format", "jsonl")
	var firstReply int64
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for n := int64(1); sc.Scan(); n++ {
		var en recall.Entry
		if err := json.Unmarshal(sc.Bytes(), &en); err != nil {
			t.Fatalf("jsonl line %d: %v: %s", n, err, sc.Text())
		}
		if en.Seq != n {
			t.Fatalf("jsonl line %d has seq %d", n, en.Seq)
		}
		if en.Kind == recall.KindItem && recall.Item(en.Data).Role() == "assistant" && firstReply == 0 {
			firstReply = en.Seq
		}
	}
	if firstReply == 0 {
		t.Fatalf("no assistant item in the log:\n%s", r.stdout)
	}

	// Fork the whole session.
	r = e.ok("", "fork", short)
	contains(t, "fork stdout", r.stdout, "forked "+src.Key.Session+" into ")
	contains(t, "fork stdout", r.stdout, "(4 items)")
	// Fork as it stood after the first reply, with a name.
	e.ok("", "fork", src.Key.Session, "--at", strconv.FormatInt(firstReply, 10), "--name", "Early fork")
	early, items := e.show("Early fork")
	want := []string{"user: one", "assistant: " + offline.Reply(0, "one")}
	if got := texts(items); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("early fork holds %q, want %q", got, want)
	}
	if early.TitleSource != recall.TitleUser || early.ForkedFrom == nil || early.ForkedFrom.Key != src.Key || early.ForkedFrom.Seq != firstReply {
		t.Fatalf("early fork meta: %+v", early)
	}
	if ms := e.ls(); len(ms) != 3 {
		t.Fatalf("ls after two forks: %d sessions", len(ms))
	}
	if orig, _ := e.show(src.Key.Session); orig.ItemCount != 4 || orig.LastSeq != src.LastSeq {
		t.Errorf("forking changed the original: %+v", orig)
	}
	e.fails(1, "not found", "fork", src.Key.Session, "--at", "999")

	// Rename: words join into one title, a user title.
	r = e.ok("", "rename", src.Key.Session, "Renamed", "session")
	contains(t, "rename stdout", r.stdout, `is now "Renamed session"`)
	r = e.ok("", "show", "Renamed session")
	for _, s := range []string{"title    Renamed session (user)", "items    4", "user:\n  one\n", "assistant:\n  " + offline.Reply(0, "one")} {
		contains(t, "show text", r.stdout, s)
	}
	r = e.ok("", "show", "Renamed session", "--format", "markdown")
	if !strings.HasPrefix(r.stdout, "# Renamed session\n\n**User**\n\none\n") {
		t.Errorf("show markdown:\n%s", r.stdout)
	}
	r = e.ok("", "show", "Early fork")
	contains(t, "show of a fork", r.stdout, "forked   from "+src.Key.Session+" at seq "+strconv.FormatInt(firstReply, 10))
}

func TestLsArchivePinRm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if ms := e.ls(); len(ms) != 0 {
		t.Fatalf("ls of an empty store: %+v", ms)
	}
	r := e.ok("", "ls")
	contains(t, "ls stderr", r.stderr, "no sessions in this project")
	for _, p := range []string{"first", "second", "third"} {
		e.ok("", "chat", "-p", p)
	}
	ms := e.ls()
	if len(ms) != 3 || !ms[0].Updated.After(ms[1].Updated) && !ms[0].Updated.Equal(ms[1].Updated) {
		t.Fatalf("ls: %+v", ms)
	}
	for i := 1; i < len(ms); i++ {
		if ms[i].Updated.After(ms[i-1].Updated) {
			t.Errorf("ls is not newest first: %v after %v", ms[i].Updated, ms[i-1].Updated)
		}
	}
	if got := e.ls("--limit", "2"); len(got) != 2 || got[0].Key != ms[0].Key {
		t.Errorf("ls --limit 2: %+v", got)
	}
	r = e.ok("", "ls")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[0], "TITLE") || !strings.Contains(lines[0], "UPDATED") || !strings.Contains(lines[0], "ITEMS") {
		t.Fatalf("ls text:\n%s", r.stdout)
	}
	if !strings.Contains(lines[1], "just now") || !strings.HasSuffix(lines[1], " 2") {
		t.Errorf("ls row %q: want relative time and item count", lines[1])
	}

	oldest := ms[2].Key.Session
	r = e.ok("", "archive", oldest)
	contains(t, "archive", r.stdout, "archived "+oldest)
	if got := e.ls(); len(got) != 2 {
		t.Errorf("ls after archive: %d sessions", len(got))
	}
	got := e.ls("--archived")
	if len(got) != 3 || got[2].Key.Session != oldest || !got[2].Archived || got[0].Archived || !got[2].Updated.Equal(ms[2].Updated) {
		// archiving is not conversation activity: the session keeps its
		// place and its Updated time
		t.Errorf("ls --archived: %+v", got)
	}
	contains(t, "ls --archived", e.ok("", "ls", "--archived").stdout, "[archived]")
	e.ok("", "unarchive", oldest)
	if got := e.ls(); len(got) != 3 {
		t.Errorf("ls after unarchive: %d sessions", len(got))
	}

	e.ok("", "pin", oldest)
	contains(t, "ls after pin", e.ok("", "ls").stdout, "[pinned]")
	if m, _ := e.show(oldest); !m.Pinned {
		t.Error("pin did not pin")
	}
	e.ok("", "unpin", oldest)
	if m, _ := e.show(oldest); m.Pinned {
		t.Error("unpin did not unpin")
	}

	// Labels: added once each, in order, taken off, cleared; printed.
	e.ok("", "label", oldest, "--add", "keep", "--add", "draft", "--add", "keep")
	if m, _ := e.show(oldest); !slices.Equal(m.Labels, []string{"keep", "draft"}) {
		t.Errorf("labels after --add: %q", m.Labels)
	}
	e.ok("", "label", oldest, "--remove", "keep", "--add", "final")
	if m, _ := e.show(oldest); !slices.Equal(m.Labels, []string{"draft", "final"}) {
		t.Errorf("labels after --remove and --add: %q", m.Labels)
	}
	contains(t, "label without a flag", e.ok("", "label", oldest).stdout, "draft, final")
	e.ok("", "label", oldest, "--clear")
	if m, _ := e.show(oldest); len(m.Labels) != 0 {
		t.Errorf("labels after --clear: %q", m.Labels)
	}
	e.fails(2, "invalid", "label", oldest, "--add", "bad\xff")

	// rm resolves every ID first: one typo removes nothing.
	e.fails(1, `no session matches "typo"`, "rm", ms[0].Key.Session, "typo")
	if got := e.ls(); len(got) != 3 {
		t.Fatalf("a failed rm removed sessions: %d left", len(got))
	}
	r = e.ok("", "rm", ms[0].Key.Session, ms[1].Key.Session, "--yes")
	contains(t, "rm", r.stdout, "moved to the trash "+ms[0].Key.Session)
	if got := e.ls(); len(got) != 1 || got[0].Key.Session != oldest {
		t.Fatalf("after rm: %+v", got)
	}
	e.fails(1, "no session matches", "rm", ms[0].Key.Session)

	// Every listing speaks JSON.
	var ps struct {
		Projects []recall.ProjectInfo `json:"projects"`
	}
	// The two sessions rm moved to the trash are still stored, and counted.
	if err := json.Unmarshal([]byte(e.ok("", "projects", "--json").stdout), &ps); err != nil || len(ps.Projects) != 1 || ps.Projects[0].Sessions != 3 {
		t.Errorf("projects --json: %+v, %v", ps, err)
	}
	var pinned struct {
		Sessions []recall.Meta `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(e.ok("", "pin", oldest, "--json").stdout), &pinned); err != nil || len(pinned.Sessions) != 1 || !pinned.Sessions[0].Pinned {
		t.Errorf("pin --json: %+v, %v", pinned, err)
	}
	var check struct {
		Sessions int      `json:"sessions"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal([]byte(e.ok("", "check", "--json").stdout), &check); err != nil || check.Sessions != 1 || len(check.Problems) != 0 {
		t.Errorf("check --json: %+v, %v", check, err)
	}
}

func TestLsAllAndProjects(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := t.TempDir()
	e.ok("", "chat", "-p", "here")
	r := e.runIn(other, "", "chat", "-p", "there")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	all := e.ls("--all")
	if len(all) != 2 || all[0].Key.Project == all[1].Key.Project {
		t.Fatalf("ls --all: %+v", all)
	}
	otherKey, _ := recall.ProjectKey(other)
	if all[0].Key.Project != otherKey {
		t.Errorf("ls --all: newest is in %s, want %s", all[0].Key.Project, otherKey)
	}
	r = e.ok("", "ls", "--all")
	contains(t, "ls --all", r.stdout, "PROJECT")
	contains(t, "ls --all", r.stdout, otherKey)
	r = e.ok("", "projects")
	contains(t, "projects", r.stdout, otherKey)
	// A session of another project resolves by ID from here.
	if m, _ := e.show(all[0].Key.Session); m.Key.Project != otherKey {
		t.Errorf("show across projects: %+v", m.Key)
	}
}

// importOld writes a session whose entries are dated age ago, through the
// file store's Import, as a replica would.
func importOld(t *testing.T, home, project, id string, age time.Duration, pinned bool) recall.Key {
	t.Helper()
	st, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Now().Add(-age).UTC().Truncate(time.Microsecond)
	entries := []recall.Entry{recall.Message("user", "old").Entry(), recall.Message("assistant", "reply").Entry()}
	if pinned {
		entries = append(entries, recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &pinned}))
	}
	for i := range entries {
		entries[i].Seq, entries[i].Time = int64(i+1), at
	}
	key := recall.Key{Project: project, Session: id}
	if _, err := st.Import(context.Background(), key, entries...); err != nil {
		t.Fatal(err)
	}
	return key
}

func TestGc(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "fresh")
	proj, err := recall.ProjectKey(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	importOld(t, e.home, proj, "old-session", 45*24*time.Hour, false)
	importOld(t, e.home, proj, "old-pinned", 45*24*time.Hour, true)
	importOld(t, e.home, "-elsewhere", "week-old", 7*24*time.Hour, false)
	if n := len(e.ls("--all")); n != 4 {
		t.Fatalf("ls --all: %d sessions, want 4", n)
	}

	r := e.ok("", "gc", "--dry-run")
	contains(t, "gc --dry-run", r.stdout, "would move to the trash old-session")
	contains(t, "gc --dry-run", r.stdout, "would move to the trash 1 session in this project not updated for 30d; kept 1 pinned")
	if strings.Contains(r.stdout, "week-old") {
		t.Errorf("gc --dry-run of 30d lists a week-old session:\n%s", r.stdout)
	}
	if n := len(e.ls("--all")); n != 4 {
		t.Fatalf("gc --dry-run removed sessions: %d left", n)
	}

	var rep struct {
		DryRun  bool          `json:"dry_run"`
		Removed []recall.Meta `json:"sessions"`
		Kept    int           `json:"kept_pinned"`
	}
	// gc covers this project; --all every one.
	if err := json.Unmarshal([]byte(e.ok("", "gc", "--older-than", "6d", "--dry-run", "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.DryRun || len(rep.Removed) != 1 || rep.Kept != 1 {
		t.Fatalf("gc --older-than 6d --dry-run --json: %+v", rep)
	}
	if err := json.Unmarshal([]byte(e.ok("", "gc", "--all", "--older-than", "6d", "--dry-run", "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.DryRun || len(rep.Removed) != 2 || rep.Kept != 1 {
		t.Fatalf("gc --all --older-than 6d --dry-run --json: %+v", rep)
	}

	// Without a terminal, deleting needs --yes.
	e.fails(2, "pass --yes", "gc", "--all", "--older-than", "1d12h")
	if n := len(e.ls("--all")); n != 4 {
		t.Fatalf("gc without --yes removed sessions: %d left", n)
	}
	r = e.ok("", "gc", "--all", "--older-than", "1d12h", "--yes")
	contains(t, "gc", r.stdout, "moved to the trash 2 sessions in every project not updated for 1d12h; kept 1 pinned")
	left := e.ls("--all")
	if len(left) != 2 {
		t.Fatalf("after gc: %+v", left)
	}
	for _, m := range left {
		if m.Key.Session == "old-session" || m.Key.Session == "week-old" {
			t.Errorf("gc left %s", m.Key.Session)
		}
	}
	e.fails(2, `bad age "soon"`, "gc", "--older-than", "soon")

	// In the trash until the grace period ends: then gc deletes them.
	if got := e.trash(); len(got) != 2 {
		t.Fatalf("trash after gc: %+v", got)
	}
	r = e.ok("", "gc", "--all", "--yes")
	if got := e.trash(); len(got) != 2 || strings.Contains(r.stdout, "deleted for good") {
		t.Fatalf("gc within the grace period emptied the trash: %+v\n%s", got, r.stdout)
	}
	// A session trashed 40 days ago is past the default grace of 30.
	importTrashed(t, e.home, proj, "trashed-long-ago", 40*24*time.Hour)
	if got := e.trash(); len(got) != 3 {
		t.Fatalf("trash with an old one: %+v", got)
	}
	r = e.ok("", "gc", "--all", "--yes")
	contains(t, "gc", r.stdout, "deleted for good trashed-long-ago")
	contains(t, "gc", r.stdout, "deleted for good 1 session from the trash, there for over 30d")
	if got := e.trash(); len(got) != 2 {
		t.Fatalf("trash after gc: %+v", got)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"lss"}, "did you mean 'ls'?"},
		{[]string{"ls", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"ls", "extra"}, "ls: unknown command"},
		{[]string{"ls", "--limit", "-1"}, "--limit must not be negative"},
		{[]string{"ls", "--limit", "many"}, `--limit takes a whole number, not "many"`},
		{[]string{"show"}, "usage: recall show ID"},
		{[]string{"show", "x", "--format", "pdf"}, `unknown format "pdf"`},
		{[]string{"rename", "x"}, "usage: recall rename ID TITLE"},
		{[]string{"fork"}, "usage: recall fork ID"},
		{[]string{"fork", "x", "--at", "-1"}, "--at must not be negative"},
		{[]string{"rm"}, "usage: recall rm ID..."},
		{[]string{"archive"}, "usage: recall archive ID..."},
		{[]string{"gc", "--older-than", "0d"}, "must be more than zero"},
		{[]string{"chat", "--continue", "--resume", "x"}, "--continue and --resume both choose the session"},
		{[]string{"chat", "--fork"}, "--fork needs --continue or --resume"},
		{[]string{"chat", "stray words"}, `chat takes no argument, got "stray words"`},
		{[]string{"chat", "--history", "-3"}, "--history must not be negative"},
		{[]string{"chat", "-p", ""}, "-p got an empty prompt"},
		{[]string{"chat", "--resume="}, "--resume got an empty value"},
		{[]string{"chat", "--project", "/no/such/dir", "-p", "x"}, "project directory"},
		{[]string{"--store", "file:///x", "--home", "/y", "ls"}, "--store and --home both name a store"},
	}
	for _, tt := range tests {
		code := 2
		if tt.args[0] == "chat" && tt.args[1] == "--project" {
			code = 1 // a missing directory is a failure, not bad syntax
		}
		e.fails(code, tt.want, tt.args...)
	}
	if r := e.ok("", "--help"); !strings.Contains(r.stdout, "Exit codes: 0 ok, 1 failed, 2 bad usage") {
		t.Errorf("--help:\n%s", r.stdout)
	}
}

func TestErrorsAreOneLineWithAHint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fails(1, `no session matches "nosuch"`, "show", "nosuch")
	e.fails(1, `no session matches "bad/id"`, "show", "bad/id")

	// A home that cannot be created: its parent is a file.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.vars = []string{"RECALL_HOME=" + filepath.Join(file, "home")}
	for _, args := range [][]string{{"ls"}, {"chat", "-p", "hi"}} {
		checkFailure(t, e.run("", args...), 1, filepath.Join(file, "home"), args)
	}
	e.vars = nil

	// A read-only home (root ignores permissions, so only as a user).
	if os.Geteuid() == 0 {
		t.Log("running as root: the read-only home case is skipped")
		return
	}
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.MkdirAll(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	e.vars = []string{"RECALL_HOME=" + ro}
	defer func() { e.vars = nil }()
	checkFailure(t, e.run("", "chat", "-p", "hi"), 1, ro, nil)
}

// Pinning, renaming or archiving a session is not talking in it: `chat -c`
// continues the session last talked in, and the list order stays.
func TestMetaChangesDoNotMoveUpdated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "first")
	e.ok("", "chat", "-p", "second")
	ms := e.ls()
	if len(ms) != 2 {
		t.Fatalf("ls: %+v", ms)
	}
	older, newer := ms[1], ms[0]
	e.ok("", "pin", older.Key.Session)
	e.ok("", "rename", older.Key.Session, "Renamed")
	e.ok("", "archive", older.Key.Session)
	e.ok("", "unarchive", older.Key.Session)
	after := e.ls()
	if len(after) != 2 || after[0].Key != newer.Key || !after[1].Updated.Equal(older.Updated) {
		t.Fatalf("ls after pin/rename/archive: %+v, want %s first and %s's Updated unchanged", after, newer.Key.Session, older.Key.Session)
	}
	e.ok("", "chat", "-c", "-p", "third")
	if m, _ := e.show(newer.Key.Session); m.ItemCount != 4 {
		t.Errorf("chat -c went elsewhere: %s has %d items, want 4", newer.Key.Session, m.ItemCount)
	}
	if m, _ := e.show(older.Key.Session); m.ItemCount != 2 {
		t.Errorf("chat -c continued the pinned session: it has %d items", m.ItemCount)
	}
}

// A session whose log holds an unreadable line fails `recall check`, which
// names it, while `show` keeps working.
func TestCheckReportsUnreadableLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "hello")
	ms := e.ls()
	if len(ms) != 1 {
		t.Fatalf("ls: %+v", ms)
	}
	e.ok("", "check")
	logs, err := filepath.Glob(filepath.Join(e.home, "projects", "*", ms[0].Key.Session+".jsonl"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("log of %s: %v %v", ms[0].Key.Session, logs, err)
	}
	f, err := os.OpenFile(logs[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("garbage that is not an entry\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r := e.run("", "check")
	if r.code != 1 || !strings.Contains(r.stdout, ms[0].Key.Session) || !strings.Contains(r.stdout, "unreadable") {
		t.Errorf("check after a garbage line: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	e.ok("", "show", ms[0].Key.Session)
	e.ok("", "rm", "--purge", ms[0].Key.Session) // the check after the test wants a healthy store
}
