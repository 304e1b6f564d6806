package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server"
)

// TestIdempotency checks that a POST sent again with its Idempotency-Key
// gets the first response and writes nothing, on the server that ran it
// and on another server over the same store.
func TestIdempotency(t *testing.T) {
	eachBackend(t, testIdempotency)
}

func testIdempotency(t *testing.T, st recall.Store) {
	ctx := context.Background()
	srvA, srvB := serve(t, st), serve(t, st)
	a, b := client(srvA, ""), client(srvB, "")
	project := localKey("x").Project
	countConversations := func() int {
		p, err := st.List(ctx, project, recall.ListOptions{Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Sessions)
	}

	// Create, sent twice to one server and once to the other.
	key := option.WithHeader("Idempotency-Key", "create-1")
	params := conversations.ConversationNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("hi")}}
	var res *http.Response
	first, err := a.Conversations.New(ctx, params, key, option.WithResponseInto(&res))
	if err != nil {
		t.Fatal(err)
	}
	if res.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the first response says it is replayed")
	}
	for _, c := range []openai.Client{a, b} {
		again, err := c.Conversations.New(ctx, params, key, option.WithResponseInto(&res))
		if err != nil {
			t.Fatal(err)
		}
		if again.RawJSON() != first.RawJSON() || res.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay %s (replayed %q), first %s", again.RawJSON(), res.Header.Get("Idempotent-Replayed"), first.RawJSON())
		}
	}
	if n := countConversations(); n != 1 {
		t.Errorf("%d conversations after three creates with one key, want 1", n)
	}
	// Without a key, every create is its own.
	if _, err := a.Conversations.New(ctx, params); err != nil {
		t.Fatal(err)
	}
	if n := countConversations(); n != 2 {
		t.Errorf("%d conversations, want 2", n)
	}

	// Add items: the retry on the other server writes nothing.
	add := conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("a"), userMessage("b")}}
	addKey := option.WithHeader("Idempotency-Key", "add-1")
	added, err := a.Conversations.Items.New(ctx, first.ID, add, addKey)
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.Conversations.Items.New(ctx, first.ID, add, addKey)
	if err != nil {
		t.Fatal(err)
	}
	if again.RawJSON() != added.RawJSON() {
		t.Errorf("replayed add %s, first %s", again.RawJSON(), added.RawJSON())
	}
	itemCount := func() int {
		m, err := st.Stat(ctx, localKey(first.ID))
		if err != nil {
			t.Fatal(err)
		}
		return m.ItemCount
	}
	if n := itemCount(); n != 3 {
		t.Errorf("%d items, want 3", n)
	}

	// The key names one request: another body, or another route, is a 400.
	other := conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("c")}}
	_, err = a.Conversations.Items.New(ctx, first.ID, other, addKey)
	ae := wantAPIError(t, err, http.StatusBadRequest, "Idempotency-Key", "different request")
	if ae.Code != "idempotency_key_reused" {
		t.Errorf("code %q", ae.Code)
	}
	_, err = a.Conversations.New(ctx, params, addKey)
	wantAPIError(t, err, http.StatusBadRequest, "Idempotency-Key", "different request")
	if n := itemCount(); n != 3 {
		t.Errorf("%d items, want 3", n)
	}

	// A response lost on the way back: the SDK retries, and with a key the
	// retry writes nothing; without one (the control) it writes again.
	for _, tc := range []struct {
		header []option.RequestOption
		want   int
	}{{[]option.RequestOption{option.WithHeader("Idempotency-Key", "lost-1")}, 1}, {nil, 2}} {
		var calls atomic.Int32
		lossy := client(srvA, "", option.WithMaxRetries(2), option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			res, err := next(req)
			if calls.Add(1) == 1 && err == nil {
				res.Body.Close()
				return nil, errors.New("connection reset by peer (lost response)")
			}
			return res, err
		}))
		before := itemCount()
		got, err := lossy.Conversations.Items.New(ctx, first.ID, other, tc.header...)
		if err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 2 || len(got.Data) != 1 {
			t.Errorf("%d calls, %s", calls.Load(), got.RawJSON())
		}
		if n := itemCount() - before; n != tc.want {
			t.Errorf("headers %d: a retried add wrote %d items, want %d", len(tc.header), n, tc.want)
		}
	}

	// Many identical requests at once, through both servers: one writes,
	// all get its response.
	before := itemCount()
	var wg sync.WaitGroup
	bodies := make([]string, 8)
	statuses := make([]int, 8)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv := srvA
			if i%2 == 1 {
				srv = srvB
			}
			statuses[i], _, bodies[i] = raw(t, srv, "POST", "/v1/conversations/"+first.ID+"/items", `{"items":[{"role":"user","content":"once"}]}`, "Idempotency-Key", "burst-1")
		}()
	}
	wg.Wait()
	for i := range bodies {
		if statuses[i] != http.StatusOK || bodies[i] != bodies[0] {
			t.Errorf("concurrent request %d: %d %s, first %s", i, statuses[i], bodies[i], bodies[0])
		}
	}
	if n := itemCount() - before; n != 1 {
		t.Errorf("8 concurrent requests with one key wrote %d items, want 1", n)
	}
}

// failingStore fails the next n appends to user sessions (not the
// server's own records) with an error of no particular kind.
type failingStore struct {
	recall.Store
	n atomic.Int32
}

func (s *failingStore) Append(ctx context.Context, key recall.Key, g recall.Guard, es ...recall.Entry) (int64, error) {
	if !strings.HasPrefix(key.Project, server.ReservedPrefix) && s.n.Add(-1) >= 0 {
		return 0, errors.New("injected failure")
	}
	return s.Store.Append(ctx, key, g, es...)
}

// TestIdempotencyRetriesFailures checks that a request that failed in a
// way a retry may fix (a 5xx) is not replayed: its retry with the same
// key runs, and writes once.
func TestIdempotencyRetriesFailures(t *testing.T) {
	ctx := context.Background()
	st := &failingStore{Store: backends()[0].open(t)}
	srv := serve(t, st)
	c := client(srv, "")
	conv, err := c.Conversations.New(ctx, conversations.ConversationNewParams{})
	if err != nil {
		t.Fatal(err)
	}
	st.n.Store(1)
	add := conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("a")}}
	key := option.WithHeader("Idempotency-Key", "fails-once")
	_, err = c.Conversations.Items.New(ctx, conv.ID, add, key)
	wantAPIError(t, err, http.StatusInternalServerError, "", "internal error")
	got, err := c.Conversations.Items.New(ctx, conv.ID, add, key)
	if err != nil {
		t.Fatalf("the retry after a 500: %v", err)
	}
	again, err := c.Conversations.Items.New(ctx, conv.ID, add, key)
	if err != nil || again.RawJSON() != got.RawJSON() {
		t.Errorf("the replay of the retry: %v, %s", err, again.RawJSON())
	}
	m, err := st.Stat(ctx, localKey(conv.ID))
	if err != nil || m.ItemCount != 1 {
		t.Errorf("%d items, %v; want 1", m.ItemCount, err)
	}
}

// TestIdempotencyLargeWrite: a retry of a write whose answer is larger
// than a store item could hold as one record gets the first answer,
// replayed whole, and writes nothing more: 900 KiB on a store that takes
// items of up to 1 MiB, and (not under -short) 25 MiB on the file store
// with the default limits.
func TestIdempotencyLargeWrite(t *testing.T) {
	type largeWrite struct {
		b    backend
		size int
	}
	cases := []largeWrite{{backend{"memstore-1MiB", func(t *testing.T) recall.Store {
		st := memstore.New(memstore.Options{MaxItemSize: 1 << 20})
		t.Cleanup(func() { st.Close() })
		return st
	}}, 900 << 10}}
	if !testing.Short() {
		cases = append(cases, largeWrite{backends()[1], 25 << 20})
	}
	for _, c := range cases {
		t.Run(c.b.name, func(t *testing.T) {
			st := c.b.open(t)
			srv := serve(t, st)
			conv := localKey("conv_large")
			if _, err := recall.NewSession(st, conv).Create(context.Background(), recall.CreateOptions{Items: []recall.Item{recall.Message("user", "hi")}}); err != nil {
				t.Fatal(err)
			}
			body := `{"items":[{"role":"user","content":"` + strings.Repeat("large ", c.size/6) + `"}]}`
			path := "/v1/conversations/" + conv.Session + "/items"
			status, h, first := raw(t, srv, "POST", path, body, "Idempotency-Key", "large-1")
			if status != http.StatusOK || len(first) < c.size || h.Get("Idempotent-Replayed") != "" {
				t.Fatalf("the write: %d, %d bytes, replayed %q", status, len(first), h.Get("Idempotent-Replayed"))
			}
			status, h, again := raw(t, srv, "POST", path, body, "Idempotency-Key", "large-1")
			if status != http.StatusOK || h.Get("Idempotent-Replayed") != "true" || again != first {
				t.Errorf("the retry: %d, replayed %q, %d bytes (the first answer: %d)", status, h.Get("Idempotent-Replayed"), len(again), len(first))
			}
			if m, err := st.Stat(context.Background(), conv); err != nil || m.ItemCount != 2 {
				t.Errorf("after the write and its retry: %d items, %v; want 2", m.ItemCount, err)
			}
		})
	}
}
