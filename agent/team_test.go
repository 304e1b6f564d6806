package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

// toolUser is a model that calls its tool once per user message (a fresh
// call_id each time), then answers.
func toolUser(name, tool string, calls *atomic.Int64) scripted {
	return func(req *agent.Request) []recall.Item {
		if out, ok := lastOutput(req.Items); ok {
			return []recall.Item{recall.Message("assistant", name+" got "+out)}
		}
		id := fmt.Sprintf("call_%s_%d", name, calls.Add(1))
		return []recall.Item{agent.FunctionCallItem(id, tool, `{}`)}
	}
}

// jitter is a tool that takes a little while, so that concurrent runs
// interleave their turns.
func jitter() agent.Tool {
	return agent.Func("work", "does some work", nil, func(ctx context.Context, _ json.RawMessage) (string, error) {
		time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
		return "ok", nil
	})
}

// checkPairs fails unless every function_call item in key's log is
// followed, in the next entry, by its output: each turn is one batch.
func checkPairs(t *testing.T, s recall.Store, key recall.Key) {
	t.Helper()
	_, entries, err := s.Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if e.Kind != recall.KindItem || recall.Item(e.Data).Type() != "function_call" {
			continue
		}
		id := recall.Item(e.Data).CallID()
		if i+1 >= len(entries) || recall.Item(entries[i+1].Data).Type() != "function_call_output" || recall.Item(entries[i+1].Data).CallID() != id {
			t.Fatalf("%s: function_call %s at seq %d is not followed by its output", key, id, e.Seq)
		}
	}
}

// Shared session: several agents run concurrently against one session.
// The log stays well formed, every turn stays together, and nothing is
// lost.
func TestTeamSharedSession(t *testing.T) {
	const agents, runs = 4, 8
	for name, store := range map[string]recall.Store{
		"memstore":  memstore.New(memstore.Options{}),
		"filestore": mustFilestore(t),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			key := recall.Key{Project: "team", Session: "shared"}
			var calls atomic.Int64
			var wg sync.WaitGroup
			for i := range agents {
				a := &agent.Agent{Name: fmt.Sprintf("a%d", i), Model: toolUser(fmt.Sprintf("a%d", i), "work", &calls), Tools: []agent.Tool{jitter()}}
				wg.Go(func() {
					sess := recall.NewSession(store, key) // a handle each; the session is one
					for r := range runs {
						if _, err := agent.Run(ctx, a, agent.UserText(fmt.Sprintf("%s-%d", a.Name, r)), agent.RunOptions{Session: sess, HistoryLimit: 20}); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err := storekit.VerifySession(ctx, store, key); err != nil {
				t.Fatal(err)
			}
			checkPairs(t, store, key)
			m, _ := store.Stat(ctx, key)
			if want := agents * runs * 4; m.ItemCount != want { // input, call, output, answer
				t.Errorf("%d items, want %d", m.ItemCount, want)
			}
			items, _ := recall.NewSession(store, key).GetItems(ctx, 0)
			if got := agent.TrimOrphans(items); len(got) != len(items) {
				t.Errorf("the shared view has %d orphaned call halves", len(items)-len(got))
			}
		})
	}
}

// One session per agent: each specialist keeps its own history, whatever
// the others do concurrently.
func TestTeamSessionPerAgent(t *testing.T) {
	const agents, runs = 4, 6
	ctx := context.Background()
	store := mustFilestore(t)
	var calls atomic.Int64
	var wg sync.WaitGroup
	for i := range agents {
		name := fmt.Sprintf("specialist%d", i)
		a := &agent.Agent{Name: name, Model: toolUser(name, "work", &calls), Tools: []agent.Tool{jitter()}}
		sess := recall.NewSession(store, recall.Key{Project: "team", Session: name})
		wg.Go(func() {
			for r := range runs {
				if _, err := agent.Run(ctx, a, agent.UserText(fmt.Sprintf("%s-%d", name, r)), agent.RunOptions{Session: sess}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := storekit.Verify(ctx, store); err != nil {
		t.Fatal(err)
	}
	for i := range agents {
		key := recall.Key{Project: "team", Session: fmt.Sprintf("specialist%d", i)}
		checkPairs(t, store, key)
		items, _ := recall.NewSession(store, key).GetItems(ctx, 0)
		if len(items) != runs*4 {
			t.Fatalf("%s holds %d items, want %d", key.Session, len(items), runs*4)
		}
		for r := range runs {
			if got, want := items[r*4].Text(), fmt.Sprintf("%s-%d", key.Session, r); got != want {
				t.Errorf("%s item %d = %q, want %q: another agent's item", key.Session, r*4, got, want)
			}
		}
	}
}
