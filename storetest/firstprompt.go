package storetest

import (
	"strings"

	"github.com/recallkit/recall"
)

// testFirstPrompt checks Meta.FirstPrompt: the first user message's text,
// made one line and cut to recall.MaxFirstPrompt bytes on a rune
// boundary, kept through clears and removals, and the same in Stat, List
// and what recall.Replay derives from the log.
func testFirstPrompt(e *env) {
	t := e.t
	key := recall.Key{Project: "fp", Session: "s"}
	long := "Fix\tthe\x1b[31m build\n\n  " + strings.Repeat("é", 200)
	e.mustAdd(key, recall.Message("system", "be brief"), recall.Message("assistant", "hello"))
	if m := e.mustStat(key); m.FirstPrompt != "" {
		t.Errorf("FirstPrompt before any user message = %q, want none", m.FirstPrompt)
	}
	e.mustAdd(key, recall.Message("user", long), recall.Message("user", "second"))
	// "Fix the [31m build " is 19 bytes; 90 "é" of 2 bytes make 199.
	want := "Fix the [31m build " + strings.Repeat("é", 90)
	check := func(when string) {
		t.Helper()
		stat := e.mustStat(key)
		_, log := e.mustLoad(key)
		replayed, _ := recall.Replay(key, log)
		if stat.FirstPrompt != want || replayed.FirstPrompt != want {
			t.Errorf("%s: FirstPrompt: Stat %q, Replay %q, want %q", when, stat.FirstPrompt, replayed.FirstPrompt, want)
		}
		page, err := e.s.List(e.ctx, "fp", recall.ListOptions{IncludeArchived: true})
		if err != nil || len(page.Sessions) != 1 || page.Sessions[0].FirstPrompt != want {
			t.Errorf("%s: List = %+v, %v; want FirstPrompt %q", when, page.Sessions, err, want)
		}
	}
	check("after the first prompt")
	e.must(recall.NewSession(e.s, key).Clear(e.ctx))
	e.mustAdd(key, recall.Message("user", "after the clear"))
	check("after a clear")
}
