package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server"
)

// TestListFirstPageIsBounded: the first page of GET /api/v1/sessions and
// of the web list read the pinned sessions from the store's pinned
// listing and one page of the others, never a listing of every session:
// no List without a limit, and about page + pinned sessions' metadata
// read, of 1,000.
func TestListFirstPageIsBounded(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: memstore.New(memstore.Options{})}
	defer st.Close()
	const project, n = "user.alice", 1000
	pinned := map[string]bool{}
	for i := range n {
		k := recall.Key{Project: project, Session: fmt.Sprintf("conv_%04d", i)}
		if _, err := st.Append(ctx, k, recall.Guard{}, recall.Message("user", "hi").Entry()); err != nil {
			t.Fatal(err)
		}
		if i%200 == 7 { // 5 pinned, spread over the list order
			if _, err := recall.NewSession(st, k).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
				t.Fatal(err)
			}
			pinned[k.Session] = true
		}
	}
	srv, tok := aliceServer(t, st)

	// bounded checks the listings a request made, from a reset count.
	bounded := func(what string, page int, do func()) {
		t.Helper()
		st.unlimited.Store(0)
		st.listed.Store(0)
		do()
		if u := st.unlimited.Load(); u != 0 {
			t.Errorf("%s: %d listings without a limit", what, u)
		}
		// the pinned listing, and the others' pages, which skip the pinned
		if l, most := st.listed.Load(), int64(page+2*len(pinned)+1); l > most {
			t.Errorf("%s: read %d sessions' metadata, want at most %d (page %d, %d pinned)", what, l, most, page, len(pinned))
		}
	}

	bounded("GET /api/v1/sessions", 20, func() {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/sessions?limit=20", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var l struct {
			Data []struct {
				ID     string `json:"id"`
				Pinned bool   `json:"pinned"`
			} `json:"data"`
			HasMore bool `json:"has_more"`
		}
		if err := json.NewDecoder(res.Body).Decode(&l); err != nil || res.StatusCode != 200 {
			t.Fatalf("GET /api/v1/sessions: %d, %v", res.StatusCode, err)
		}
		if len(l.Data) != 20+len(pinned) || !l.HasMore {
			t.Fatalf("first page: %d sessions, has_more %t; want %d and more", len(l.Data), l.HasMore, 20+len(pinned))
		}
		for i, s := range l.Data {
			if want := i < len(pinned); s.Pinned != want || pinned[s.ID] != want {
				t.Errorf("row %d: %s pinned %t, want %t", i, s.ID, s.Pinned, want)
			}
		}
	})

	c := webClient(t, srv, tok)
	bounded("the web list", 50, func() {
		res, body := getBody(t, c, srv.URL+"/")
		if res.StatusCode != 200 {
			t.Fatalf("GET /: %d", res.StatusCode)
		}
		rows := rowLink.FindAllStringSubmatch(body, -1)
		if len(rows) != 50+len(pinned) || moreLink.FindStringSubmatch(body) == nil {
			t.Fatalf("web list: %d rows; want %d and a Load more link", len(rows), 50+len(pinned))
		}
		for i, m := range rows[:len(pinned)] {
			if !pinned[m[2]] {
				t.Errorf("row %d: %s is not pinned", i, m[2])
			}
		}
	})
}

// TestListPinnedPastTheCap: a first page starts with the newest 100
// pinned sessions; the rest are reached with pinned=true from the cursor
// the page gives (pinned_next_cursor, the web list's "More pinned
// sessions" link), and every pinned session is listed once.
func TestListPinnedPastTheCap(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	const project, n = "user.alice", 130
	for i := range n {
		k := recall.Key{Project: project, Session: fmt.Sprintf("conv_%04d", i)}
		if _, err := st.Append(ctx, k, recall.Guard{}, recall.Message("user", "hi").Entry()); err != nil {
			t.Fatal(err)
		}
		if i < 105 {
			if _, err := recall.NewSession(st, k).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, err := st.List(ctx, project, recall.ListOptions{Limit: -1, Pinned: true})
	if err != nil || len(all.Sessions) != 105 {
		t.Fatalf("setup: %d pinned, %v", len(all.Sessions), err)
	}
	var want []string
	for _, m := range all.Sessions {
		want = append(want, m.Key.Session)
	}
	srv, tok := aliceServer(t, st)

	type list struct {
		Data []struct {
			ID     string `json:"id"`
			Pinned bool   `json:"pinned"`
		} `json:"data"`
		NextCursor       string `json:"next_cursor"`
		PinnedNextCursor string `json:"pinned_next_cursor"`
	}
	get := func(path string) list {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var l list
		if err := json.NewDecoder(res.Body).Decode(&l); err != nil || res.StatusCode != 200 {
			t.Fatalf("GET %s: %d, %v", path, res.StatusCode, err)
		}
		return l
	}
	first := get("/api/v1/sessions?limit=10")
	var got []string
	for _, s := range first.Data {
		if s.Pinned {
			got = append(got, s.ID)
		}
	}
	if len(got) != 100 || len(first.Data) != 110 || first.PinnedNextCursor == "" {
		t.Fatalf("first page: %d pinned of %d, pinned_next_cursor %q; want 100 of 110 and a cursor", len(got), len(first.Data), first.PinnedNextCursor)
	}
	for cursor := first.PinnedNextCursor; cursor != ""; {
		l := get("/api/v1/sessions?pinned=true&limit=2&cursor=" + url.QueryEscape(cursor))
		for _, s := range l.Data {
			got = append(got, s.ID)
		}
		cursor = l.NextCursor
	}
	if !slices.Equal(got, want) {
		t.Errorf("pinned sessions listed\n %v\nwant\n %v", got, want)
	}

	c := webClient(t, srv, tok)
	_, body := getBody(t, c, srv.URL+"/")
	m := morePinned.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("the web list has no More pinned sessions link")
	}
	_, body = getBody(t, c, srv.URL+html.UnescapeString(m[1]))
	var rest []string
	for _, r := range rowLink.FindAllStringSubmatch(body, -1) {
		rest = append(rest, r[2])
	}
	if !slices.Equal(rest, want[100:]) {
		t.Errorf("web: More pinned sessions shows %v, want %v", rest, want[100:])
	}
}

var morePinned = regexp.MustCompile(`<a class="more" href="([^"]+)">More pinned sessions</a>`)

// aliceServer serves st and returns the server and a token of alice's.
func aliceServer(t *testing.T, st recall.Store) (*httptest.Server, string) {
	t.Helper()
	ctx := context.Background()
	h, err := server.New(ctx, st, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tok, _, err := server.CreateToken(ctx, st, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	return srv, tok
}
