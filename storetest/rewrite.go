package storetest

import (
	"errors"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// testRewrite checks storekit.Rewriter, on a store that has it: entries
// replaced in place (same seqs and kinds, every other entry as it was)
// and entries appended in the same step; the title, the first prompt and
// search follow the new bytes; a stale guard, a missing session, an entry
// of another kind, a seq outside the log and an invalid item are refused
// and write nothing; a subagent record is rewritten alone.
func testRewrite(e *env) {
	t := e.t
	rw, ok := recall.As[storekit.Rewriter](e.s)
	if !ok {
		t.Skip("the store has no storekit.Rewriter")
	}
	key := recall.Key{Project: "p", Session: "rw"}
	e.mustAdd(key, userMsg("first zebrafoxsecret prompt"), userMsg("plain"), assistantMsg("second zebrafoxsecret"))
	if _, err := recall.NewSession(e.s, key).SetTitle(e.ctx, "title zebrafoxsecret", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	before, log := e.mustLoad(key)

	redacted := func(en recall.Entry) recall.Entry {
		en = en.Clone()
		en.Data = []byte(strings.ReplaceAll(string(en.Data), "zebrafoxsecret", "[REDACTED:t]"))
		return en
	}
	// A wrapper that has the method but not the ability below it (a
	// mirror over a primary without one) says so: ErrUnsupported.
	switch _, err := rw.Rewrite(e.ctx, recall.Key{Project: "p", Session: "missing"}, storekit.Rewrite{IfLastSeq: 1, Replace: []recall.Entry{redacted(log[0])}}); {
	case errors.Is(err, recall.ErrUnsupported):
		t.Skipf("the store cannot rewrite: %v", err)
	case !errors.Is(err, recall.ErrNotFound):
		t.Errorf("Rewrite of a missing session = %v, want ErrNotFound", err)
	}
	refused := []struct {
		what  string
		rw    storekit.Rewrite
		class error
	}{
		{"a stale guard", storekit.Rewrite{IfLastSeq: before.LastSeq - 1, Replace: []recall.Entry{redacted(log[0])}}, recall.ErrConflict},
		{"an entry of another kind", storekit.Rewrite{IfLastSeq: before.LastSeq, Replace: []recall.Entry{{Seq: log[0].Seq, Kind: recall.KindTitle, Time: log[0].Time, Data: log[3].Data}}}, recall.ErrConflict},
		{"a seq outside the log", storekit.Rewrite{IfLastSeq: before.LastSeq, Replace: []recall.Entry{{Seq: before.LastSeq + 5, Kind: recall.KindItem, Time: log[0].Time, Data: log[0].Data}}}, recall.ErrConflict},
		{"an invalid item", storekit.Rewrite{IfLastSeq: before.LastSeq, Replace: []recall.Entry{{Seq: log[0].Seq, Kind: recall.KindItem, Time: log[0].Time, Data: []byte(`[1]`)}}}, recall.ErrInvalidItem},
	}
	for _, c := range refused {
		_, err := rw.Rewrite(e.ctx, key, c.rw)
		if !errors.Is(err, c.class) {
			t.Errorf("Rewrite with %s = %v, want %v", c.what, err, c.class)
		}
		m, got := e.mustLoad(key)
		wantLog(t, "the log after a refused rewrite ("+c.what+")", got, log, true)
		if d := MetaDiff(m, before, true); d != "" {
			t.Errorf("the metadata after a refused rewrite (%s): %s", c.what, d)
		}
	}

	want := []recall.Entry{redacted(log[0]), log[1], redacted(log[2]), redacted(log[3])}
	note := recall.NewEntry(recall.KindRedaction, storekit.Redaction{Entries: []storekit.RedactedEntry{{Seq: log[0].Seq, Findings: []storekit.Finding{{Rule: "t", At: 1}}}}})
	m, err := rw.Rewrite(e.ctx, key, storekit.Rewrite{IfLastSeq: before.LastSeq, Replace: []recall.Entry{want[0], want[2], want[3]}, Append: []recall.Entry{note}})
	if err != nil {
		t.Fatalf("Rewrite: %v", err)
	}
	lm, got := e.mustLoad(key)
	if len(got) != len(want)+1 {
		t.Fatalf("the rewritten log holds %d entries, want %d", len(got), len(want)+1)
	}
	wantLog(t, "the rewritten log", got[:len(want)], want, true)
	if a := got[len(want)]; a.Seq != before.LastSeq+1 || a.Kind != recall.KindRedaction || string(a.Data) != string(note.Data) || !plausibleTime(a.Time) {
		t.Errorf("the entry appended by Rewrite: %+v", a)
	}
	if d := MetaDiff(m, lm, true); d != "" {
		t.Errorf("the Meta Rewrite returned differs from Load's: %s", d)
	}
	if lm.LastSeq != before.LastSeq+1 || !lm.Updated.Equal(before.Updated) || lm.ItemCount != before.ItemCount {
		t.Errorf("after the rewrite: LastSeq %d, Updated %v, items %d; want %d, %v (a redaction is no activity), %d",
			lm.LastSeq, lm.Updated, lm.ItemCount, before.LastSeq+1, before.Updated, before.ItemCount)
	}
	if lm.Title != "title [REDACTED:t]" || strings.Contains(lm.FirstPrompt, "zebrafoxsecret") {
		t.Errorf("after the rewrite: title %q, first prompt %q", lm.Title, lm.FirstPrompt)
	}
	page, err := e.s.List(e.ctx, "p", recall.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].Title != lm.Title || page.Sessions[0].FirstPrompt != lm.FirstPrompt {
		t.Errorf("List after the rewrite: %+v, %v; want title %q", page.Sessions, err, lm.Title)
	}
	if hits, err := recall.Search(e.ctx, e.s, recall.SearchOptions{Query: "zebrafoxsecret", WholeLog: true}); err != nil || len(hits.Hits) != 0 {
		t.Errorf("Search for the rewritten text: %d hits, %v; want none", len(hits.Hits), err)
	}
	if _, err := rw.Rewrite(e.ctx, key, storekit.Rewrite{IfLastSeq: before.LastSeq, Replace: []recall.Entry{want[0]}}); !errors.Is(err, recall.ErrConflict) {
		t.Errorf("a second rewrite guarded by the LastSeq before the first = %v, want ErrConflict", err)
	}

	// A subagent record is rewritten alone: its parent keeps its bytes.
	sub := recall.Key{Project: "p", Session: "rw", Subpath: "subagents/a"}
	e.mustAdd(sub, userMsg("sub zebrafoxsecret"))
	sm, slog := e.mustLoad(sub)
	if _, err := rw.Rewrite(e.ctx, sub, storekit.Rewrite{IfLastSeq: sm.LastSeq, Replace: []recall.Entry{redacted(slog[0])}}); err != nil {
		t.Fatalf("Rewrite of a subagent record: %v", err)
	}
	_, sgot := e.mustLoad(sub)
	wantLog(t, "the rewritten subagent record", sgot, []recall.Entry{redacted(slog[0])}, true)
	_, pgot := e.mustLoad(key)
	wantLog(t, "the parent after its subagent's rewrite", pgot, got, true)
}
