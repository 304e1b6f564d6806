package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/internal/undo"
	"github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/storekit"
)

// compactFixture is a fixture whose session compacts with a summary from
// the same fake server.
func compactFixture(t *testing.T, api openai.API) (*fixture, *compact.Session) {
	f := newFixture(t, api)
	return f, compact.NewSession(f.store, f.sess.Key(), &compact.Summarizer{Model: f.model}, compact.Options{})
}

// isSummaryRequest tells the summary requests from the agent's.
func isSummaryRequest(r fakeopenai.Request) bool { return r.Instructions() == compact.Prompt }

// Run compacts when the history passes CompactTokens, and the compacted
// view (summary, kept items, then the input) is what the model receives.
func TestRunCompactsHistory(t *testing.T) {
	ctx := context.Background()
	f, sess := compactFixture(t, openai.APIResponses)
	f.srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		if isSummaryRequest(r) {
			return fakeopenai.Reply{Text: "they talked about " + strings.Repeat("x", 10)}
		}
		return fakeopenai.Reply{Text: "reply to " + r.LastUserText() + strings.Repeat(".", 200)}
	})
	a := &agent.Agent{Name: "t", Model: f.model}
	opts := agent.RunOptions{Session: sess, CompactTokens: 300, CompactKeepLast: 2}
	var compactedAt int
	for i := range 6 {
		res, err := agent.Run(ctx, a, agent.UserText("message "+string(rune('A'+i))), opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Compaction != nil {
			if compactedAt != 0 {
				continue
			}
			compactedAt = i
			c := res.Compaction
			if !c.Compacted || c.Kept != 2 || c.Strategy != "summary" {
				t.Errorf("run %d compaction %+v", i, c)
			}
			// The request of this run: summary, the 2 kept items, input.
			reqs := f.srv.Requests()
			last := reqs[len(reqs)-1]
			sum := reqs[len(reqs)-2]
			if !isSummaryRequest(sum) || isSummaryRequest(last) {
				t.Fatalf("run %d: expected a summary request, then the agent's", i)
			}
			msgs := last.Messages()
			if len(msgs) != 4 || !strings.HasPrefix(msgs[0].Text, compact.SummaryPrefix+"they talked about") ||
				msgs[1].Role != "user" || msgs[2].Role != "assistant" || msgs[3].Text != "message "+string(rune('A'+i)) {
				t.Errorf("run %d sent %+v", i, msgs)
			}
			if res.History != 3 {
				t.Errorf("Result.History = %d, want 3 (summary and 2 kept)", res.History)
			}
		}
	}
	if compactedAt == 0 {
		t.Fatal("no run compacted")
	}
	// The next run after a compaction starts from the compacted view too.
	items, _ := sess.GetItems(ctx, 0)
	if _, err := agent.Run(ctx, a, agent.UserText("next"), agent.RunOptions{Session: sess}); err != nil {
		t.Fatal(err)
	}
	reqs := f.srv.Requests()
	if got := reqs[len(reqs)-1].Input(); len(got) != len(items)+1 || !strings.Contains(string(got[0]), "they talked about") {
		t.Errorf("next run sent %d items, the view has %d (+1 input)", len(got), len(items))
	}
	if err := storekit.VerifySession(ctx, f.store, f.sess.Key()); err != nil {
		t.Error(err)
	}
}

// With the OpenAI compact endpoint, the next request carries the opaque
// compaction item the server returned.
func TestRunCompactsWithEndpoint(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIResponses)
	sess := compact.NewSession(f.store, f.sess.Key(),
		compact.Fallback(compact.Server(f.model), &compact.Summarizer{Model: f.model}), compact.Options{})
	f.srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		if r.API == "compact" {
			return fakeopenai.Reply{Text: "OPAQUE-STATE"}
		}
		return fakeopenai.Reply{Text: strings.Repeat("long answer ", 20)}
	})
	a := &agent.Agent{Name: "t", Model: f.model}
	for _, text := range []string{"one", "two", "three"} {
		if _, err := agent.Run(ctx, a, agent.UserText(text), agent.RunOptions{Session: sess}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := agent.Run(ctx, a, agent.UserText("four"), agent.RunOptions{Session: sess, CompactTokens: 100, CompactKeepLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Compaction == nil || res.Compaction.Strategy != "openai" {
		t.Fatalf("compaction %+v", res.Compaction)
	}
	reqs := f.srv.Requests()
	in := reqs[len(reqs)-1].Input()
	// user one, user two, user three (kept by the server), the compaction
	// item, the kept assistant reply, the input
	if len(in) != 6 || !strings.Contains(string(in[3]), `"encrypted_content":"OPAQUE-STATE"`) {
		t.Errorf("request after compaction: %s", in)
	}
}

// A compaction that fails still saves the input, then reports the error.
func TestRunCompactionFails(t *testing.T) {
	ctx := context.Background()
	f, sess := compactFixture(t, openai.APIResponses)
	a := &agent.Agent{Name: "t", Model: f.model}
	for _, text := range []string{"one", "two", "three"} {
		if _, err := agent.Run(ctx, a, agent.UserText(text), agent.RunOptions{Session: sess}); err != nil {
			t.Fatal(err)
		}
	}
	f.srv.Enqueue(fakeopenai.Reply{Status: 400, Error: "no summary today"})
	res, err := agent.Run(ctx, a, agent.UserText("four"), agent.RunOptions{Session: sess, CompactTokens: 10, CompactKeepLast: 1})
	if err == nil || !strings.Contains(err.Error(), "no summary today") {
		t.Fatalf("Run = %v, want the compaction's error", err)
	}
	items, _ := sess.GetItems(ctx, 0)
	if len(items) != 7 || items[6].Text() != "four" || len(res.Items) != 1 {
		t.Errorf("after a failed compaction the session holds %d items, last %s", len(items), items[len(items)-1])
	}
}

// A session that cannot compact is sent as it is.
func TestRunCompactUnsupported(t *testing.T) {
	f := newFixture(t, openai.APIResponses)
	a := &agent.Agent{Name: "t", Model: f.model}
	for range 3 {
		res, err := agent.Run(context.Background(), a, agent.UserText("hi"), agent.RunOptions{Session: f.sess, CompactTokens: 1})
		if err != nil || res.Compaction != nil {
			t.Fatalf("Run = %+v, %v", res.Compaction, err)
		}
	}
}

// PopItem, Undo and /undo's LastTurn work on a compacted view: they pop
// the kept items and then the summary, by their refs into the compaction
// entry.
func TestUndoAfterCompaction(t *testing.T) {
	ctx := context.Background()
	f, sess := compactFixture(t, openai.APIResponses)
	a := &agent.Agent{Name: "t", Model: f.model}
	for _, text := range []string{"one", "two", "three"} {
		if _, err := agent.Run(ctx, a, agent.UserText(text), agent.RunOptions{Session: sess}); err != nil {
			t.Fatal(err)
		}
	}
	f.srv.Enqueue(fakeopenai.Reply{Text: "summary"})
	if res, err := sess.RunCompaction(ctx, agent.CompactionArgs{KeepLast: 4}); err != nil || res.After != 5 {
		t.Fatalf("compaction %+v, %v", res, err)
	}
	// summary, user two, echo two, user three, echo three
	it, err := sess.PopItem(ctx)
	if err != nil || it.Text() != "echo: three" {
		t.Fatalf("PopItem = %s, %v", it, err)
	}
	removed, err := agent.Undo(ctx, sess)
	if err != nil || len(removed) != 1 || removed[0].Text() != "three" {
		t.Fatalf("Undo = %s, %v", removed, err)
	}
	removed, err = undo.LastTurn(ctx, f.store, f.sess.Key())
	if err != nil || len(removed) != 2 || removed[0].Text() != "two" {
		t.Fatalf("LastTurn = %s, %v", removed, err)
	}
	items, _ := sess.GetItems(ctx, 0)
	if len(items) != 1 || !strings.HasPrefix(items[0].Text(), compact.SummaryPrefix) {
		t.Fatalf("left %s, want the summary", items)
	}
	// the summary is a message like any other: it pops too
	if it, err := sess.PopItem(ctx); err != nil || !strings.HasPrefix(it.Text(), compact.SummaryPrefix) {
		t.Fatalf("PopItem = %s, %v", it, err)
	}
	if it, err := sess.PopItem(ctx); err != nil || it != nil {
		t.Fatalf("PopItem of an empty view = %s, %v", it, err)
	}
	// and the session goes on
	if _, err := agent.Run(ctx, a, agent.UserText("again"), agent.RunOptions{Session: sess}); err != nil {
		t.Fatal(err)
	}
	if err := storekit.VerifySession(ctx, f.store, f.sess.Key()); err != nil {
		t.Error(err)
	}

}

func TestEstimateTokens(t *testing.T) {
	for _, c := range []struct {
		items []recall.Item
		want  int
	}{
		{nil, 0},
		{[]recall.Item{recall.Item(`{}`)}, 1},                          // 2 bytes
		{[]recall.Item{recall.Item(`{"a":1}`)}, 2},                     // 7 bytes
		{[]recall.Item{recall.Item(`{"ab":1}`)}, 2},                    // 8 bytes
		{[]recall.Item{recall.Item(`{"ab":1}`), recall.Item(`{}`)}, 3}, // 10 bytes
	} {
		if got := agent.EstimateTokens(c.items...); got != c.want {
			t.Errorf("EstimateTokens(%s) = %d, want %d", c.items, got, c.want)
		}
	}
}
