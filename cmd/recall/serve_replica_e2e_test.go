package main

// The scale-out proof: two recall serve processes over one shared store
// serve the same users as one.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/server"
	"github.com/recallkit/recall/storeurl"
)

// The shape of the replica test: replicaClients × replicaRounds appends,
// every other one to one of the replicaShared conversations, the rest to
// the client's own. The fast tier runs 12 clients of 4 rounds: still three
// clients to each shared conversation, and every path (shared and private
// appends, retried or not) taken.
func replicaClients() int { return testkit.Size(12, 32) }
func replicaRounds() int  { return testkit.Size(4, 8) }

const replicaShared = 4

// TestServeReplicas starts two recall serve processes over one PostgreSQL
// (and one Redis) store, makes one token with recall token create, and
// drives both with 32 concurrent openai-go clients (12 under -short)
// appending to shared and private conversations, alternating replicas.
// Every append carries an Idempotency-Key, and half of them are sent again
// to the other replica. Afterwards every conversation holds exactly the
// acknowledged items, once each, in one order that both replicas and the
// store itself agree on, and every retry returned the first result.
func TestServeReplicas(t *testing.T) {
	t.Parallel()
	backends := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"postgres", postgresStore},
		{"redis", redisStore},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			url := b.url(t)
			e := newEnv(t)
			e.store = url
			testReplicas(t, e)
		})
	}
}

// batch is one acknowledged append: the items one call added, in order.
type batch struct {
	client, round int
	ids, texts    []string
}

func testReplicas(t *testing.T, e *env) {
	const user = "team"
	token := e.createToken(user)
	var (
		reps    [2]*served
		clients [2]openai.Client
	)
	for i := range reps {
		// One user makes every request: no rate limit, or the clients
		// would spend the test in 429s.
		reps[i] = e.serve("--rate-limit", "0")
		clients[i] = reps[i].client(token)
	}
	ctx := context.Background()

	var (
		mu    sync.Mutex
		acked = map[string][]batch{} // conversation id -> its acknowledged appends
	)
	shared := make([]string, replicaShared)
	for i := range shared {
		c, err := clients[i%2].Conversations.New(ctx, conversations.ConversationNewParams{})
		if err != nil {
			t.Fatalf("create shared conversation: %v", err)
		}
		shared[i] = c.ID
		acked[c.ID] = nil
	}

	var wg sync.WaitGroup
	for g := range replicaClients() {
		wg.Go(func() {
			// The private conversation, created with its first item and
			// an Idempotency-Key; the retry on the other replica must
			// name the same conversation and create no second one.
			first := fmt.Sprintf("g%02d create", g)
			key := fmt.Sprintf("create-%d", g)
			params := conversations.ConversationNewParams{Items: []responses.ResponseInputItemUnionParam{message(first)}}
			c, err := clients[g%2].Conversations.New(ctx, params, option.WithHeader("Idempotency-Key", key))
			if err != nil {
				t.Errorf("client %d: create: %v", g, err)
				return
			}
			again, err := clients[(g+1)%2].Conversations.New(ctx, params, option.WithHeader("Idempotency-Key", key))
			if err != nil || again.ID != c.ID || again.CreatedAt != c.CreatedAt {
				t.Errorf("client %d: create retried on the other replica: %+v, %v; first %+v", g, again, err, c)
				return
			}
			private := c.ID
			mu.Lock()
			acked[private] = []batch{{client: g, round: -1, texts: []string{first}}} // its id is read back below
			mu.Unlock()

			for r := range replicaRounds() {
				rep := (g + r) % 2
				conv := private
				if r%2 == 0 {
					conv = shared[(g+r)%replicaShared]
				}
				n := 1 + (g+r)%3
				var items []responses.ResponseInputItemUnionParam
				var texts []string
				for i := range n {
					text := fmt.Sprintf("g%02d r%02d i%d", g, r, i)
					texts = append(texts, text)
					items = append(items, message(text))
				}
				key := fmt.Sprintf("append-%d-%d", g, r)
				p := conversations.ItemNewParams{Items: items}
				res, err := clients[rep].Conversations.Items.New(ctx, conv, p, option.WithHeader("Idempotency-Key", key))
				if err != nil {
					t.Errorf("client %d round %d: add items through replica %d: %v", g, r, rep, err)
					return
				}
				b := batch{client: g, round: r, texts: texts}
				for i, it := range res.Data {
					b.ids = append(b.ids, it.ID)
					if i < n && itemText(t, it.RawJSON()) != texts[i] {
						t.Errorf("client %d round %d: item %d came back as %s", g, r, i, it.RawJSON())
					}
				}
				if len(res.Data) != n {
					t.Errorf("client %d round %d: %d items acknowledged, sent %d", g, r, len(res.Data), n)
					return
				}
				mu.Lock()
				acked[conv] = append(acked[conv], b)
				mu.Unlock()
				if (g+r)%2 == 0 {
					continue
				}
				// The retry, on the other replica: the first result, and
				// nothing written (the final counts prove it).
				again, err := clients[1-rep].Conversations.Items.New(ctx, conv, p, option.WithHeader("Idempotency-Key", key))
				if err != nil {
					t.Errorf("client %d round %d: retry on replica %d: %v", g, r, 1-rep, err)
					return
				}
				if again.RawJSON() != res.RawJSON() {
					t.Errorf("client %d round %d: the retry on the other replica answered\n%s\nthe first answer was\n%s", g, r, again.RawJSON(), res.RawJSON())
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	st, err := storeurl.Open(ctx, e.store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	project := server.User{Name: user}.Project()
	page, err := st.List(ctx, project, recall.ListOptions{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != replicaClients()+replicaShared {
		t.Errorf("the store holds %d conversations of the user, want %d (a retried create made another?)", len(page.Sessions), replicaClients()+replicaShared)
	}
	total := 0
	for conv, batches := range acked {
		// Through both replicas, every page, oldest first.
		var views [2][]listed
		for i, c := range clients {
			views[i] = listAll(t, c, conv)
		}
		if !slices.Equal(views[0], views[1]) {
			t.Errorf("%s: the replicas list different items:\n%v\n%v", conv, views[0], views[1])
			continue
		}
		// Directly in the store: the same items, in the same order, with
		// the ids the server derives from their seqs.
		live, _, err := st.Items(ctx, recall.Key{Project: project, Session: conv}, 0)
		if err != nil {
			t.Fatalf("%s: store: %v", conv, err)
		}
		var direct []listed
		for _, l := range live {
			direct = append(direct, listed{id: fmt.Sprintf("recall-%d", l.Ref.Seq), text: itemText(t, string(l.Item))})
		}
		if !slices.Equal(direct, views[0]) {
			t.Errorf("%s: the store holds\n%v\nthe server lists\n%v", conv, direct, views[0])
			continue
		}
		checkAcked(t, conv, batches, views[0])
		total += len(views[0])
	}
	t.Logf("%d conversations, %d items, through 2 replicas", len(acked), total)
	// Both replicas stop cleanly (a -race binary that saw a race would
	// exit 66 here).
	for i, s := range reps {
		if code := stop(t, s, syscall.SIGTERM); code != 0 {
			t.Errorf("replica %d: exit %d after SIGTERM", i, code)
		}
	}
}

// listed is an item as a listing shows it.
type listed struct{ id, text string }

// listAll lists every item of conv, oldest first, with the SDK's
// auto-paging.
func listAll(t *testing.T, c openai.Client, conv string) []listed {
	t.Helper()
	var out []listed
	iter := c.Conversations.Items.ListAutoPaging(context.Background(), conv, conversations.ItemListParams{
		Order: conversations.ItemListParamsOrderAsc, Limit: openai.Int(100),
	})
	for iter.Next() {
		out = append(out, listed{id: iter.Current().ID, text: itemText(t, iter.Current().RawJSON())})
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("%s: list: %v", conv, err)
	}
	return out
}

// checkAcked checks that view holds exactly the acknowledged batches of
// conv, each item once, each batch whole and in its order, and each
// client's batches in the order it sent them.
func checkAcked(t *testing.T, conv string, batches []batch, view []listed) {
	t.Helper()
	pos := map[string]int{} // text -> index in view
	for i, l := range view {
		if _, dup := pos[l.text]; dup {
			t.Errorf("%s: %q is listed twice", conv, l.text)
		}
		pos[l.text] = i
	}
	want := 0
	last := map[int]int{} // client -> index of its latest batch's last item
	for _, b := range batches {
		want += len(b.texts)
		at, ok := pos[b.texts[0]]
		if !ok {
			t.Errorf("%s: acknowledged %q is missing", conv, b.texts[0])
			continue
		}
		for i, text := range b.texts {
			if at+i >= len(view) || view[at+i].text != text {
				t.Errorf("%s: the batch %q is not whole and in order at %d", conv, b.texts, at)
				break
			}
			if b.ids != nil && view[at+i].id != b.ids[i] {
				t.Errorf("%s: %q was acknowledged as %s, listed as %s", conv, text, b.ids[i], view[at+i].id)
			}
		}
		if prev, ok := last[b.client]; ok && at <= prev {
			t.Errorf("%s: client %d's round %d is listed before its earlier append", conv, b.client, b.round)
		}
		last[b.client] = at + len(b.texts) - 1
	}
	if len(view) != want {
		t.Errorf("%s: %d items listed, %d acknowledged", conv, len(view), want)
	}
}
