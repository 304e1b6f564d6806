package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/importer"
)

// sourceWorld is a home holding sessions of every source: a recall chat
// (with the fake OpenAI server), the Claude Code and Codex fixtures
// imported, and nine sessions written through the store whose sources
// take turns, each holding "needle" twice, interleaved in time so that a
// listing of one source skips runs of the others. want maps each session
// ID to its source.
func sourceWorld(t *testing.T) (e *env, want map[string]string) {
	e = newEnv(t)
	fakeServer(t, e, "responses")
	e.ok("", "chat", "-p", "a needle in a recall chat")
	claude, codex := t.TempDir(), t.TempDir()
	copyTree(t, claudeFixture, claude)
	copyTree(t, codexFixture, codex)
	e.ok("", "import", "claude-code", claude)
	e.ok("", "import", "codex", codex)

	want = map[string]string{claudeSID: "claude-code", codexSID: "codex", archivedSID: "codex"}
	for _, m := range e.ls() {
		want[m.Key.Session] = importer.SourceRecall // the chat, in this project
	}
	st, err := filestore.Open(filestore.Options{Dir: e.home})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i := 1; i <= 9; i++ {
		source := []string{"codex", "claude-code", importer.SourceRecall}[i%3]
		entries := []recall.Entry{recall.Message("user", fmt.Sprintf("needle %d", i)).Entry(), recall.Message("assistant", "one more needle").Entry()}
		if source != importer.SourceRecall {
			entries = append(entries, recall.NewEntry(recall.KindMeta, recall.MetaChange{Metadata: map[string]*string{importer.MetaSource: &source}}))
		}
		for j := range entries {
			entries[j].Seq, entries[j].Time = int64(j+1), now.Add(-time.Duration(i)*time.Hour)
		}
		key := recall.Key{Project: fmt.Sprintf("-srv-p%d", i%2), Session: fmt.Sprintf("0199ffff-0000-7000-8000-00000000000%d", i)}
		if _, err := st.Import(context.Background(), key, entries...); err != nil {
			t.Fatal(err)
		}
		want[key.Session] = source
	}
	return e, want
}

// sourcedJSON is the part of a session or hit in --json output these
// tests read.
type sourcedJSON struct {
	Key    recall.Key     `json:"key"`
	Ref    recall.ItemRef `json:"ref"` // hits only
	Source string         `json:"source"`
}

// sourcedPage is a page of ls --json or search --json.
type sourcedPage struct {
	Sessions []sourcedJSON `json:"sessions"`
	Hits     []sourcedJSON `json:"hits"`
	Next     string        `json:"next"`
}

func (e *env) sourcedJSON(args ...string) sourcedPage {
	e.t.Helper()
	r := e.ok("", append([]string{"--json"}, args...)...)
	var p sourcedPage
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		e.t.Fatalf("recall %q: %v\n%s", args, err, r.stdout)
	}
	return p
}

// pageThrough runs a --json listing limit items a page (--limit), passing
// each page's next as --cursor, and returns the sessions or hits of every
// page.
func (e *env) pageThrough(limit int, args ...string) []sourcedJSON {
	e.t.Helper()
	var all []sourcedJSON
	cursor := ""
	for range 100 {
		a := append(slices.Clone(args), "--limit", strconv.Itoa(limit))
		if cursor != "" {
			a = append(a, "--cursor", cursor)
		}
		p := e.sourcedJSON(a...)
		got := append(p.Sessions, p.Hits...)
		if len(got) > limit || len(got) < limit && p.Next != "" {
			e.t.Fatalf("recall %q: %d on a page of %d, next %q", a, len(got), limit, p.Next)
		}
		all = append(all, got...)
		if p.Next == "" {
			return all
		}
		cursor = p.Next
	}
	e.t.Fatalf("recall %q: the pages never end", args)
	return nil
}

// TestLsSource: ls --all names each session's source (SOURCE column, and
// "source" in --json), --source keeps only one source's sessions, every
// page of one session (--limit 1) follows the last with none skipped or
// repeated, plain ls keeps its columns, and an unknown source is bad usage.
func TestLsSource(t *testing.T) {
	t.Parallel()
	e, want := sourceWorld(t)

	all := e.sourcedJSON("ls", "--all", "--limit", "0").Sessions
	if len(all) != len(want) {
		t.Fatalf("ls --all: %d sessions, want %d", len(all), len(want))
	}
	for _, s := range all {
		if s.Source != want[s.Key.Session] {
			t.Errorf("ls --all --json: %s has source %q, want %q", s.Key.Session, s.Source, want[s.Key.Session])
		}
	}

	rows := strings.Split(strings.TrimSpace(e.ok("", "ls", "--all", "--limit", "0").stdout), "\n")
	if head := strings.Fields(rows[0]); !slices.Equal(head, []string{"ID", "TITLE", "UPDATED", "ITEMS", "SOURCE", "PROJECT"}) {
		t.Fatalf("ls --all header %q", rows[0])
	}
	for i, row := range rows[1:] {
		f := strings.Fields(row)
		if !strings.HasPrefix(all[i].Key.Session, f[0]) || f[len(f)-2] != all[i].Source || f[len(f)-1] != all[i].Key.Project {
			t.Errorf("ls --all row %q, want %s from %s in %s", row, all[i].Key.Session, all[i].Source, all[i].Key.Project)
		}
	}
	if head := strings.Fields(strings.SplitN(e.ok("", "ls").stdout, "\n", 2)[0]); !slices.Equal(head, []string{"ID", "TITLE", "UPDATED", "ITEMS"}) {
		t.Errorf("plain ls header %q", head)
	}
	here := strings.Split(strings.TrimSpace(e.ok("", "ls", "--source", "recall").stdout), "\n")
	if len(here) != 2 || !slices.Equal(strings.Fields(here[0]), []string{"ID", "TITLE", "UPDATED", "ITEMS", "SOURCE"}) || !strings.HasSuffix(here[1], "  recall") {
		t.Errorf("ls --source recall in this project:\n%s", strings.Join(here, "\n"))
	}

	for _, source := range []string{"recall", "claude-code", "codex"} {
		var expect []recall.Key
		for _, s := range all {
			if s.Source == source {
				expect = append(expect, s.Key)
			}
		}
		keys := func(ss []sourcedJSON) []recall.Key {
			var out []recall.Key
			for _, s := range ss {
				if s.Source != source {
					t.Errorf("--source %s listed %s of %s", source, s.Key.Session, s.Source)
				}
				out = append(out, s.Key)
			}
			return out
		}
		if got := keys(e.sourcedJSON("ls", "--all", "--source", source).Sessions); !slices.Equal(got, expect) {
			t.Errorf("ls --all --source %s: %v, want %v", source, got, expect)
		}
		// Pages of one, and longer pages, which a page the store reads can
		// fill before its end.
		for _, limit := range []int{1, 2, 3} {
			if got := keys(e.pageThrough(limit, "ls", "--all", "--source", source)); !slices.Equal(got, expect) {
				t.Errorf("ls --all --source %s --limit %d, paged: %v, want %v", source, limit, got, expect)
			}
		}
	}

	r := e.fails(2, `unknown source "emacs"`, "ls", "--all", "--source", "emacs")
	for _, source := range []string{"claude-code", "codex", "recall"} {
		contains(t, "the usage error", r.stderr, source)
	}
}

// TestSearchSource: search --all names each hit's source (in its line,
// and "source" in --json), --source keeps only the hits in one source's
// sessions, paging a hit at a time skips and repeats none, and an unknown
// source is bad usage.
func TestSearchSource(t *testing.T) {
	t.Parallel()
	e, want := sourceWorld(t)

	all := e.sourcedJSON("search", "needle", "--all", "--limit", "100").Hits
	if len(all) != 2*10 { // two in each of the nine sessions and in the chat
		t.Fatalf("search needle --all: %d hits, want 20", len(all))
	}
	for _, h := range all {
		if h.Source != want[h.Key.Session] {
			t.Errorf("search --json: a hit in %s has source %q, want %q", h.Key.Session, h.Source, want[h.Key.Session])
		}
	}
	lines := strings.Split(strings.TrimRight(e.ok("", "search", "needle", "--all", "--limit", "100").stdout, "\n"), "\n")
	for i := 0; i < len(lines); i += 2 {
		h := all[i/2]
		if !strings.HasSuffix(lines[i], "  "+h.Source+"  "+h.Key.Project) {
			t.Errorf("hit line %q does not end with its source %s and project %s", lines[i], h.Source, h.Key.Project)
		}
	}
	if r := e.ok("", "search", "needle", "--source", "recall"); !strings.Contains(r.stdout, "  recall\n") || strings.Count(r.stdout, "\n") != 4 {
		t.Errorf("search --source recall in this project:\n%s", r.stdout)
	}

	for _, source := range []string{"recall", "claude-code", "codex"} {
		var expect []sourcedJSON
		for _, h := range all {
			if h.Source == source {
				expect = append(expect, h)
			}
		}
		page := e.sourcedJSON("search", "needle", "--all", "--source", source, "--limit", "100")
		if !slices.Equal(page.Hits, expect) {
			t.Errorf("search --source %s: %v, want %v", source, page.Hits, expect)
		}
		for _, limit := range []int{1, 3} {
			if got := e.pageThrough(limit, "search", "needle", "--all", "--source", source); !slices.Equal(got, expect) {
				t.Errorf("search --source %s --limit %d, paged: %v, want %v", source, limit, got, expect)
			}
		}
	}
	e.fails(2, `unknown source "emacs"`, "search", "needle", "--source", "emacs")
}
