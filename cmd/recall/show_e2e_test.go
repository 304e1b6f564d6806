package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
)

// fullSession writes, straight into e's store, a session whose history
// holds every mark show --full prints: an item undo removed, a
// compaction that summarized two items and kept two verbatim, a clear,
// and text that would drive a terminal; then a fork of it and a subagent
// record under it. It returns the session's key and the fork's.
func fullSession(t *testing.T, e *env) (recall.Key, recall.Key) {
	t.Helper()
	st, err := filestore.Open(filestore.Options{Dir: e.home})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	proj, _ := recall.ProjectKey(e.dir)
	key := recall.Key{Project: proj, Session: recall.NewSessionID()}
	ctx := context.Background()
	s := recall.NewSession(st, key)
	q2, a2 := recall.Message("user", "question two"), recall.Message("assistant", "answer two")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.AddItems(ctx, recall.Message("user", "question one"), recall.Message("assistant", "answer one"), q2,
		recall.Message("assistant", "draft answer")))
	_, err = s.PopItem(ctx)
	must(err)
	must(s.AddItems(ctx, a2))
	c := recall.Compaction{Through: 6, Replaced: 4, Strategy: "summary",
		Items: []recall.Item{recall.Message("user", "Summary: one and two"), q2, a2}}
	_, err = st.Append(ctx, key, recall.Guard{Exists: true}, recall.NewEntry(recall.KindCompaction, c))
	must(err)
	must(s.AddItems(ctx, recall.Message("user", "question three \x1b[31mred")))
	must(s.Clear(ctx))
	must(s.AddItems(ctx, recall.Message("user", "fresh start")))
	fork := recall.Key{Project: proj, Session: recall.NewSessionID()}
	_, err = recall.NewSession(st, key).Fork(ctx, 0, fork)
	must(err)
	sub := recall.Key{Project: proj, Session: key.Session, Subpath: "subagents/helper-1"}
	must(recall.NewSession(st, sub).AddItems(ctx, recall.Message("user", "sub task"), recall.Message("assistant", "sub done")))
	return key, fork
}

// inOrder fails unless every one of wants is in s, each after the one
// before.
func inOrder(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	at := 0
	for _, w := range wants {
		i := strings.Index(s[at:], w)
		if i < 0 {
			t.Fatalf("%s does not hold %q after byte %d:\n%s", what, w, at, s)
		}
		at += i + len(w)
	}
}

// show --full prints the whole history as export renders it: in text
// under show's own header, in markdown as export's Markdown, in json
// every item of the history.
func TestShowFull(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key, fork := fullSession(t, e)
	id := key.Session
	const rule = "────────────────────────────────────────"
	compacted := "Compacted (summary): the 2 items before this point were replaced by 1 summary item and the newest 2 items kept."

	text := e.ok("", "show", id, "--full").stdout
	inOrder(t, "show --full", text,
		"session  "+id+"\n",
		"\n\n── Turn 1 · ",
		"User:\n  question one\n\nAssistant:\n  answer one\n\n── Turn 2 · ",
		"User:\n  question two\n\nAssistant (removed later):\n  draft answer\n\nAssistant:\n  answer two\n\n",
		rule+"\n"+compacted+"\n"+rule+"\n\n── Turn 3 · ",
		"User (compaction summary):\n  Summary: one and two\n\n── Turn 4 · ",
		// the control sequence is shown, not sent to the terminal
		"User:\n  question three \\x1b[31mred\n\n",
		rule+"\nCleared: the model started afresh here.\n"+rule+"\n\n── Turn 5 · ",
		"User:\n  fresh start\n")
	// the items the compaction kept are shown once, where they were written
	if n := strings.Count(text, "question two"); n != 1 {
		t.Errorf("show --full shows a kept item %d times:\n%s", n, text)
	}
	if strings.Contains(text, "sub task") {
		t.Errorf("show --full without --subagents prints the subagent record:\n%s", text)
	}
	sub := e.ok("", "show", id, "--full", "--subagents").stdout
	inOrder(t, "show --full --subagents", sub, "fresh start\n", "═══ subagent subagents/helper-1 (2 items) ═══\nuser:\n  sub task\n")

	forked := e.ok("", "show", fork.Session, "--full").stdout
	inOrder(t, "show --full of a fork", forked, rule+"\nForked from session "+id+" at seq ", rule+"\n\n── Turn 1 · ", "User:\n  fresh start\n")

	// markdown is export's Markdown of the session record, the subagent
	// records only with --subagents
	md := e.ok("", "show", id, "--full", "--format", "markdown").stdout
	exported := e.ok("", "export", id, "--format", "markdown").stdout
	mdMain, _, _ := strings.Cut(exported, "## Subagent ")
	if md != mdMain {
		t.Errorf("show --full --format markdown is not export's Markdown of the session:\n%s\n--- export:\n%s", md, mdMain)
	}
	inOrder(t, "show --full --format markdown", md,
		"**Assistant** · *removed later*\n\ndraft answer",
		"> *"+compacted+"*",
		"**User** · *compaction summary*\n\nSummary: one and two",
		"> *Cleared: the model started afresh here.*")
	md = e.ok("", "show", id, "--full", "--subagents", "--format", "markdown").stdout
	inOrder(t, "show --full --subagents --format markdown", md, "fresh start", "## Subagent `subagents/helper-1`\n\n**User**\n\nsub task")

	// json holds every item of the history, the kept ones once
	var v struct {
		Items []recall.Item `json:"items"`
	}
	out := e.ok("", "show", id, "--full", "--json").stdout
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	want := []string{"user: question one", "assistant: answer one", "user: question two", "assistant: draft answer",
		"assistant: answer two", "user: Summary: one and two", "user: question three \x1b[31mred", "user: fresh start"}
	if got := texts(v.Items); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("show --full --json items = %q, want %q", got, want)
	}
}
