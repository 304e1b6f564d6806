package compact_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/storekit"
)

type fixture struct {
	srv   *fakeopenai.Server
	model *openai.Model
	store *memstore.Store
	key   recall.Key
}

func newFixture(t *testing.T, api openai.API) *fixture {
	t.Helper()
	srv := fakeopenai.New()
	t.Cleanup(srv.Close)
	m, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "k", Model: "fake", API: api, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{srv: srv, model: m, store: memstore.New(memstore.Options{}), key: recall.Key{Project: "p", Session: "s"}}
}

func (f *fixture) session(opts compact.Options) *compact.Session {
	return compact.NewSession(f.store, f.key, &compact.Summarizer{Model: f.model}, opts)
}

func (f *fixture) add(t *testing.T, items ...recall.Item) {
	t.Helper()
	if _, err := f.store.Append(context.Background(), f.key, recall.Guard{}, recall.ItemEntries(items...)...); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) view(t *testing.T) []recall.Item {
	t.Helper()
	items, err := recall.NewSession(f.store, f.key).GetItems(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func sameItemList(a, b []recall.Item) bool {
	return slices.EqualFunc(a, b, func(x, y recall.Item) bool { return string(x) == string(y) })
}

func TestCompactKeepsNewest(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIResponses)
	items := conv("u a u c1 o1 a u a u a")
	f.add(t, items...)
	f.srv.Enqueue(fakeopenai.Reply{Text: "the gist", Usage: fakeopenai.Usage{Input: 40, Output: 4}})
	sess := f.session(compact.Options{})

	res, err := sess.RunCompaction(ctx, agent.CompactionArgs{KeepLast: 4, Instructions: "mention call_1"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || res.Before != 10 || res.Summarized != 6 || res.Kept != 4 || res.After != 5 || res.Strategy != "summary" {
		t.Errorf("result %+v", res)
	}
	if res.Usage != (recall.Usage{InputTokens: 40, OutputTokens: 4, TotalTokens: 44}) || res.TokensAfter >= res.TokensBefore {
		t.Errorf("result %+v", res)
	}
	view := f.view(t)
	if len(view) != 5 || view[0].Role() != "user" || view[0].Text() != compact.SummaryPrefix+"the gist" {
		t.Fatalf("view after compaction: %s", view)
	}
	if !sameItemList(view[1:], items[6:]) {
		t.Errorf("kept items %s, want the newest 4 verbatim %s", view[1:], items[6:])
	}

	// The summary request: instructions, one user message with the
	// transcript of the older items only, no tools.
	reqs := f.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Instructions() != compact.Prompt || len(r.Input()) != 1 || len(r.ToolNames()) != 0 {
		t.Errorf("summary request: instructions %q, %d input items, tools %v", r.Instructions(), len(r.Input()), r.ToolNames())
	}
	text := r.LastUserText()
	for _, want := range []string{"User: 0", "Assistant: 1", "Tool call f: {}", "Tool output: out", "Assistant: 5", "mention call_1"} {
		if !strings.Contains(text, want) {
			t.Errorf("summary request lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "User: 6") {
		t.Errorf("summary request holds a kept item:\n%s", text)
	}

	// The log keeps the originals and records the compaction.
	meta, entries, err := f.store.Load(ctx, f.key)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 11 || entries[10].Kind != recall.KindCompaction || meta.ItemCount != 5 {
		t.Fatalf("log: %d entries, last %s, item count %d", len(entries), entries[len(entries)-1].Kind, meta.ItemCount)
	}
	if meta.Usage.TotalTokens != 44 {
		t.Errorf("session usage %+v: the compaction's usage is recorded", meta.Usage)
	}
	if err := storekit.VerifySession(ctx, f.store, f.key); err != nil {
		t.Error(err)
	}
}

func TestCompactNeverSplitsPairs(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIResponses)
	// keeping 2 would keep o2 without c2, and c2 without its reasoning
	items := conv("u a u r c1 c2 o1 o2 a")
	f.add(t, items...)
	f.srv.Enqueue(fakeopenai.Reply{Text: "sum"})
	res, err := f.session(compact.Options{}).RunCompaction(ctx, agent.CompactionArgs{KeepLast: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kept != 6 || res.Summarized != 3 {
		t.Errorf("result %+v, want 3 summarized and 6 kept", res)
	}
	view := f.view(t)
	if !sameItemList(view[1:], items[3:]) {
		t.Errorf("kept %s", view[1:])
	}
	if got := agent.TrimOrphans(view); len(got) != len(view) {
		t.Errorf("the compacted view has orphans: %s", view)
	}
}

func TestCompactNothingToDo(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIResponses)
	sess := f.session(compact.Options{KeepLast: 4})
	if res, err := sess.RunCompaction(ctx, agent.CompactionArgs{Force: true}); err != nil || res.Compacted {
		t.Errorf("compacting a missing session = %+v, %v", res, err)
	}
	f.add(t, conv("u a u a")...)
	if res, err := sess.RunCompaction(ctx, agent.CompactionArgs{Force: true}); err != nil || res.Compacted || res.Before != 4 {
		t.Errorf("compacting 4 items keeping 4 = %+v, %v", res, err)
	}
	f.add(t, conv("u a u a")...)
	// under the trigger: nothing, unless forced
	big := agent.EstimateTokens(f.view(t)...)
	if res, err := sess.RunCompaction(ctx, agent.CompactionArgs{TriggerTokens: big}); err != nil || res.Compacted || res.TokensBefore != big {
		t.Errorf("under the trigger = %+v, %v", res, err)
	}
	if n := len(f.srv.Requests()); n != 0 {
		t.Fatalf("%d model calls, want none", n)
	}
	f.srv.Enqueue(fakeopenai.Reply{Text: "sum"})
	if res, err := sess.RunCompaction(ctx, agent.CompactionArgs{TriggerTokens: big - 1}); err != nil || !res.Compacted {
		t.Errorf("over the trigger = %+v, %v", res, err)
	}
}

// An item appended while the model is summarizing is not lost: the
// guarded append fails, and the compaction is retried with the same
// summary (the older items did not change), taking the new item in.
func TestCompactSurvivesConcurrentAppend(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIResponses)
	items := conv("u a u a u a")
	f.add(t, items...)
	release := make(chan struct{})
	f.srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		<-release
		return fakeopenai.Reply{Text: "sum"}
	})
	arrived := f.srv.Notify()
	done := make(chan error, 1)
	var res agent.CompactionResult
	go func() {
		var err error
		res, err = f.session(compact.Options{}).RunCompaction(ctx, agent.CompactionArgs{KeepLast: 2})
		done <- err
	}()
	select {
	case <-arrived: // the server holds the summary request
	case <-time.After(10 * time.Second):
		t.Fatal("no summary request")
	}
	late := recall.Message("user", "appended while summarizing")
	f.add(t, late)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.Retries != 1 || !res.Compacted || res.Summarized != 4 || res.Kept != 3 {
		t.Errorf("result %+v, want 1 retry, 4 summarized, 3 kept", res)
	}
	view := f.view(t)
	want := append([]recall.Item{view[0]}, append(slices.Clone(items[4:]), late)...)
	if !sameItemList(view, want) || view[0].Text() != compact.SummaryPrefix+"sum" {
		t.Errorf("view %s\nwant %s", view, want)
	}
	if n := len(f.srv.Requests()); n != 1 {
		t.Errorf("%d summary requests, want the summary reused", n)
	}
	if err := storekit.VerifySession(ctx, f.store, f.key); err != nil {
		t.Error(err)
	}
}

// When the older items themselves change during the summary (an item is
// popped into them), the summary no longer stands for them: the retry
// summarizes again.
func TestCompactResummarizesWhenOlderChanged(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIResponses)
	f.add(t, conv("u a u a")...)
	release := make(chan struct{})
	first := true
	f.srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		if first {
			first = false
			<-release
		}
		return fakeopenai.Reply{Text: "sum of " + strings.Join(strings.Fields(r.LastUserText())[4:], " ")}
	})
	arrived := f.srv.Notify()
	done := make(chan error, 1)
	var res agent.CompactionResult
	go func() {
		var err error
		res, err = f.session(compact.Options{}).RunCompaction(ctx, agent.CompactionArgs{KeepLast: 1})
		done <- err
	}()
	<-arrived
	for range 2 { // pops the kept item and one summarized
		if _, err := f.store.Pop(ctx, f.key); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.Retries != 1 || res.Before != 2 || res.Summarized != 1 || res.Kept != 1 {
		t.Errorf("result %+v", res)
	}
	if n := len(f.srv.Requests()); n != 2 {
		t.Errorf("%d summary requests, want 2", n)
	}
}

// conflictStore refuses every compaction entry, as if a writer always
// came in first.
type conflictStore struct {
	*memstore.Store
	tries int
}

func (s *conflictStore) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	if len(entries) == 1 && entries[0].Kind == recall.KindCompaction {
		s.tries++
		return 0, recall.ErrConflict
	}
	return s.Store.Append(ctx, key, guard, entries...)
}

func TestCompactGivesUp(t *testing.T) {
	f := newFixture(t, openai.APIResponses)
	cs := &conflictStore{Store: f.store}
	f.add(t, conv("u a u a")...)
	sess := compact.NewSession(cs, f.key, &compact.Summarizer{Model: f.model}, compact.Options{MaxRetries: 3})
	_, err := sess.RunCompaction(context.Background(), agent.CompactionArgs{KeepLast: 1})
	if !errors.Is(err, recall.ErrConflict) || cs.tries != 4 {
		t.Errorf("RunCompaction = %v after %d tries; want ErrConflict after 4", err, cs.tries)
	}
}

// Where the server offers the compact endpoint, Fallback uses it; where
// it does not, it summarizes.
func TestServerCompactorAndFallback(t *testing.T) {
	ctx := context.Background()
	for _, noCompact := range []bool{false, true} {
		f := newFixture(t, openai.APIResponses)
		f.srv.SetNoCompact(noCompact)
		items := conv("u a u a")
		// a long answer, so that compacting shrinks the session
		items[1] = recall.Message("assistant", strings.Repeat("a long answer ", 50))
		f.add(t, items...)
		c := compact.Fallback(compact.Server(f.model), &compact.Summarizer{Model: f.model})
		f.srv.Enqueue(fakeopenai.Reply{Text: "OPAQUE"})
		res, err := compact.NewSession(f.store, f.key, c, compact.Options{}).RunCompaction(ctx, agent.CompactionArgs{KeepLast: 2})
		if err != nil {
			t.Fatal(err)
		}
		view := f.view(t)
		reqs := f.srv.Requests()
		if noCompact {
			if res.Strategy != "summary" || len(reqs) != 1 || reqs[0].API != "responses" || len(view) != 3 {
				t.Errorf("without the endpoint: %+v, requests %d, view %s", res, len(reqs), view)
			}
			continue
		}
		// the server kept the user message of the older part, then its
		// opaque compaction item
		if res.Strategy != "openai" || len(reqs) != 1 || reqs[0].API != "compact" || len(view) != 4 {
			t.Fatalf("with the endpoint: %+v, requests %d, view %s", res, len(reqs), view)
		}
		if view[0].Text() != "0" || view[1].Type() != "compaction" || !sameItemList(view[2:], items[2:]) {
			t.Errorf("view %s", view)
		}
		if got := reqs[0].Input(); len(got) != 2 {
			t.Errorf("compact request sent %d items, want the 2 older ones", len(got))
		}
	}
}

func TestFallbackUnsupported(t *testing.T) {
	f := newFixture(t, openai.APIChat)
	f.add(t, conv("u a u a")...)
	c := compact.Fallback(compact.Server(f.model))
	_, err := compact.NewSession(f.store, f.key, c, compact.Options{}).RunCompaction(context.Background(), agent.CompactionArgs{KeepLast: 1})
	if !errors.Is(err, recall.ErrUnsupported) {
		t.Errorf("compact with no usable compactor = %v, want ErrUnsupported", err)
	}
}
