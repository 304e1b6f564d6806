package remotestore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/remotestore"
	"github.com/recallkit/recall/server"
)

// pagedServer is recall serve --auth none over a new file store that
// answers at most page entries, items or sessions a store request, and
// counts the requests of each store route. Before each answer it runs
// the hook, when one is set.
type pagedServer struct {
	st    recall.Store
	url   string
	rs    *remotestore.Store
	calls map[string]*atomic.Int64
	hook  atomic.Pointer[func(route string)]
}

func newPagedServer(t *testing.T, page int) *pagedServer {
	t.Helper()
	ps := &pagedServer{st: backends[0].open(t), calls: map[string]*atomic.Int64{}}
	for _, r := range []string{"page", "entries", "list"} {
		ps.calls[r] = new(atomic.Int64)
	}
	h, err := server.New(context.Background(), ps.st, server.Options{Auth: server.AuthNone, RateLimit: -1, StorePage: page, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := strings.TrimPrefix(r.URL.Path, "/api/v1/store/")
		if n := ps.calls[route]; n != nil {
			n.Add(1)
		}
		if f := ps.hook.Load(); f != nil {
			(*f)(route)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ps.url = srv.URL
	if ps.rs, err = remotestore.Open(context.Background(), srv.URL, remotestore.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.rs.Close() })
	return ps
}

// requests returns the requests route has had since the last call, and
// starts the count again.
func (ps *pagedServer) requests(route string) int64 { return ps.calls[route].Swap(0) }

// items returns n items, each a user message naming its number.
func items(n int) []recall.Item {
	out := make([]recall.Item, n)
	for i := range out {
		out[i] = recall.Item(fmt.Sprintf(`{"type":"message","role":"user","content":"item %d"}`, i))
	}
	return out
}

// TestReadsPage checks that no store request reads more than the
// server's page, and that the client still answers every read whole:
// a view with no limit, an item page bigger than the server's, a whole
// log and a listing of every session, each the same as the server's
// store answers it and each in as many requests as it has pages.
func TestReadsPage(t *testing.T) {
	ctx := context.Background()
	const page = 10
	ps := newPagedServer(t, page)
	key := recall.Key{Project: "p", Session: "big"}
	if err := recall.NewSession(ps.st, key).AddItems(ctx, items(35)...); err != nil {
		t.Fatal(err)
	}

	want, wantLast, err := ps.st.Items(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, last, err := ps.rs.Items(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || last != wantLast {
		t.Fatalf("Items(0) = %d items at seq %d, want the server's %d at %d", len(got), last, len(want), wantLast)
	}
	if n := ps.requests("page"); n != 4 {
		t.Errorf("Items(0) of 35 items took %d requests, want 4 pages of %d", n, page)
	}
	if got, _, err = ps.rs.Items(ctx, key, 3); err != nil || !reflect.DeepEqual(got, want[32:]) {
		t.Fatalf("Items(3) = %v, %v; want the newest three", got, err)
	}
	if n := ps.requests("page"); n != 1 {
		t.Errorf("Items(3) took %d requests, want 1", n)
	}

	p, err := ps.rs.ReadItems(ctx, key, recall.ItemPageOptions{Oldest: true, Limit: 25, After: want[4].Ref})
	if err != nil {
		t.Fatal(err)
	}
	if !p.More || !reflect.DeepEqual(p.Items, want[5:30]) {
		t.Fatalf("ReadItems(oldest, 25 after the 5th) = %d items, more %v; want items 5 to 29 and more", len(p.Items), p.More)
	}
	if n := ps.requests("page"); n != 3 {
		t.Errorf("a page of 25 took %d requests, want 3", n)
	}

	_, wantLog, err := ps.st.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, log, err := ps.rs.Load(ctx, key); err != nil || !reflect.DeepEqual(log, wantLog) {
		t.Fatalf("Load = %d entries, %v; want the server's %d", len(log), err, len(wantLog))
	}
	if n := ps.requests("entries"); n != int64(len(wantLog)+page-1)/page {
		t.Errorf("Load of %d entries took %d requests, want pages of %d", len(wantLog), n, page)
	}

	for i := range 24 {
		if err := recall.NewSession(ps.st, recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", i)}).AddItems(ctx, items(1)...); err != nil {
			t.Fatal(err)
		}
	}
	wantList, err := ps.st.List(ctx, "p", recall.ListOptions{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	list, err := ps.rs.List(ctx, "p", recall.ListOptions{Limit: -1})
	if err != nil || list.Next != "" || !reflect.DeepEqual(ids(list.Sessions), ids(wantList.Sessions)) {
		t.Fatalf("List(-1) = %v, next %q, %v; want the server's %v", ids(list.Sessions), list.Next, err, ids(wantList.Sessions))
	}
	if n := ps.requests("list"); n != 3 {
		t.Errorf("a listing of 25 took %d requests, want 3 pages of %d", n, page)
	}
	list, err = ps.rs.List(ctx, "p", recall.ListOptions{Limit: 15})
	if err != nil || list.Next == "" || !reflect.DeepEqual(ids(list.Sessions), ids(wantList.Sessions[:15])) {
		t.Fatalf("List(15) = %v, next %q, %v; want the first 15 and a cursor", ids(list.Sessions), list.Next, err)
	}
	rest, err := ps.rs.List(ctx, "p", recall.ListOptions{Limit: 15, Cursor: list.Next})
	if err != nil || rest.Next != "" || !reflect.DeepEqual(ids(rest.Sessions), ids(wantList.Sessions[15:])) {
		t.Fatalf("List(15) after the cursor = %v, next %q, %v; want the last 10", ids(rest.Sessions), rest.Next, err)
	}
}

// TestServerAnswersAPage checks the server's side: asked for no limit, or
// for more than a page, a store route answers a page and says there is
// more.
func TestServerAnswersAPage(t *testing.T) {
	ctx := context.Background()
	ps := newPagedServer(t, 10)
	key := recall.Key{Project: "p", Session: "big"}
	if err := recall.NewSession(ps.st, key).AddItems(ctx, items(35)...); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if err := recall.NewSession(ps.st, recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", i)}).AddItems(ctx, items(1)...); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ query, list string }{
		{"page?project=p&session=big&limit=0", "items"},
		{"page?project=p&session=big&limit=1000000", "items"},
		{"entries?project=p&session=big&after=0&limit=1000000", "entries"},
		{"list?project=p&limit=-1", "sessions"},
		{"list?project=p&limit=1000000", "sessions"},
	} {
		resp, err := http.Get(ps.url + "/api/v1/store/" + c.query)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]json.RawMessage
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s, %v", c.query, resp.Status, err)
		}
		var got []json.RawMessage
		if err := json.Unmarshal(out[c.list], &got); err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		more := string(out["more"]) == "true" || len(out["next"]) > 2
		if len(got) != 10 || !more {
			t.Errorf("%s: %d %s, more %v; want a page of 10 and more", c.query, len(got), c.list, more)
		}
	}
}

// TestReadItemsWhileWritten checks that a view read in several pages is
// one snapshot: when the session changes between two pages, the client
// reads the log instead, and answers the view after the change, whole.
func TestReadItemsWhileWritten(t *testing.T) {
	ctx := context.Background()
	ps := newPagedServer(t, 10)
	key := recall.Key{Project: "p", Session: "big"}
	sess := recall.NewSession(ps.st, key)
	if err := sess.AddItems(ctx, items(25)...); err != nil {
		t.Fatal(err)
	}
	var pages atomic.Int64
	hook := func(route string) {
		if route == "page" && pages.Add(1)%2 == 0 { // between each read's first page and its second
			if _, err := sess.PopItem(ctx); err != nil {
				t.Error(err)
			}
		}
	}
	ps.hook.Store(&hook)
	view := func() ([]recall.LiveItem, int64) {
		live, last, err := ps.st.Items(ctx, key, 0)
		if err != nil {
			t.Fatal(err)
		}
		return live, last
	}

	got, last, err := ps.rs.Items(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, wantLast := view()
	if len(want) != 24 || !reflect.DeepEqual(got, want) || last != wantLast {
		t.Fatalf("Items(0) across a pop = %d items at seq %d, want the %d after it at %d", len(got), last, len(want), wantLast)
	}
	if n, e := ps.requests("page"), ps.requests("entries"); n != 2 || e != 3 {
		t.Errorf("the read took %d page requests and %d of entries, want 2 that met the change and the log's 3", n, e)
	}

	page, err := ps.rs.ReadItems(ctx, key, recall.ItemPageOptions{Oldest: true, Limit: 15, After: want[3].Ref})
	if err != nil {
		t.Fatal(err)
	}
	if want, wantLast = view(); len(want) != 23 || !page.More || page.LastSeq != wantLast || !reflect.DeepEqual(page.Items, want[4:19]) {
		t.Fatalf("15 oldest after the 4th across a pop = %d items, more %v; want items 4 to 18 and more", len(page.Items), page.More)
	}
	page, err = ps.rs.ReadItems(ctx, key, recall.ItemPageOptions{Limit: 12, After: want[20].Ref})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ = view(); len(want) != 22 || !page.More || !reflect.DeepEqual(page.Items, reversed(want[8:20])) {
		t.Fatalf("12 newest before the 21st across a pop = %d items, more %v; want items 19 to 8 and more", len(page.Items), page.More)
	}
	if n, e := ps.requests("page"), ps.requests("entries"); n != 4 || e != 6 {
		t.Errorf("the two reads took %d page requests and %d of entries, want 4 and 6", n, e)
	}
}

// reversed returns a reversed copy of live.
func reversed(live []recall.LiveItem) []recall.LiveItem {
	out := slices.Clone(live)
	slices.Reverse(out)
	return out
}

// ids returns the session IDs of ms.
func ids(ms []recall.Meta) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Key.Session
	}
	return out
}
