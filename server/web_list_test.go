package server_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server"
)

// opaqueCursors is a store whose List cursors are not storekit's: the
// web list cannot make them itself and must ask the store.
type opaqueCursors struct{ recall.Store }

func (s opaqueCursors) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	if opts.Cursor != "" {
		c, ok := strings.CutPrefix(opts.Cursor, "opaque.")
		if !ok {
			return recall.Page{}, fmt.Errorf("%w: not this store's cursor: %q", recall.ErrInvalidKey, opts.Cursor)
		}
		opts.Cursor = c
	}
	p, err := s.Store.List(ctx, project, opts)
	if p.Next != "" {
		p.Next = "opaque." + p.Next
	}
	return p, err
}

var (
	rowLink  = regexp.MustCompile(`<li class="row([^"]*)" data-nav>\s*<a class="row-link" href="/s/([^"]+)">`)
	moreLink = regexp.MustCompile(`<a id="more" class="more" href="([^"]+)">`)
)

// TestWebListPaging: the list shows every pinned session first, wherever
// it sits in the list order, then the others 50 a page, in List order;
// following "Load more" shows each session once, on every kind of store.
func TestWebListPaging(t *testing.T) {
	stores := map[string]func(t *testing.T) recall.Store{
		"memstore": func(*testing.T) recall.Store { return memstore.New(memstore.Options{}) },
		"filestore": func(t *testing.T) recall.Store {
			st, err := filestore.Open(filestore.Options{Dir: t.TempDir(), Sync: filestore.SyncNever})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"opaque-cursors": func(*testing.T) recall.Store { return opaqueCursors{memstore.New(memstore.Options{})} },
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			defer st.Close()
			ctx := context.Background()
			const project = "user.alice"
			key := func(i int) recall.Key { return recall.Key{Project: project, Session: fmt.Sprintf("conv_%03d", i)} }
			const n = 130
			for i := range n {
				if _, err := recall.NewSession(st, key(i)).Create(ctx, recall.CreateOptions{Title: fmt.Sprintf("Session %d", i),
					Items: []recall.Item{recall.Message("user", "hi")}}); err != nil {
					t.Fatal(err)
				}
			}
			// Pinned, then pushed down the list order by newer sessions.
			for _, i := range []int{10, 50, 90, 125} {
				if _, err := recall.NewSession(st, key(i)).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 60 {
				if _, err := st.Append(ctx, key(i), recall.IfExists(), recall.ItemEntries(recall.Message("user", "more"))...); err != nil {
					t.Fatal(err)
				}
			}
			all, err := st.List(ctx, project, recall.ListOptions{Limit: -1})
			if err != nil {
				t.Fatal(err)
			}
			var pinned, others []string
			for _, m := range all.Sessions {
				if m.Pinned {
					pinned = append(pinned, m.Key.Session)
				} else {
					others = append(others, m.Key.Session)
				}
			}
			if len(pinned) != 4 || all.Sessions[0].Pinned {
				t.Fatalf("setup: pinned %v, first %s", pinned, all.Sessions[0].Key.Session)
			}

			h, err := server.New(ctx, st, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: -1})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			tok, _, err := server.CreateToken(ctx, st, "alice", false)
			if err != nil {
				t.Fatal(err)
			}
			c := webClient(t, srv, tok)

			wantPages := [][]string{
				slices.Concat(pinned, others[:50]),
				others[50:100],
				others[100:],
			}
			next := "/"
			for i, want := range wantPages {
				if next == "" {
					t.Fatalf("page %d: no Load more link after page %d", i+1, i)
				}
				res, body := getBody(t, c, srv.URL+next)
				if res.StatusCode != 200 {
					t.Fatalf("GET %s: %d %s", next, res.StatusCode, body)
				}
				var got []string
				for _, m := range rowLink.FindAllStringSubmatch(body, -1) {
					got = append(got, m[2])
					if isPinned := strings.Contains(m[1], "pinned"); isPinned != slices.Contains(pinned, m[2]) {
						t.Errorf("page %d: row %s marked pinned %v", i+1, m[2], isPinned)
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("page %d (%s):\n got %v\nwant %v", i+1, next, got, want)
				}
				next = ""
				if m := moreLink.FindStringSubmatch(body); m != nil {
					next = html.UnescapeString(m[1])
				}
			}
			if next != "" {
				t.Fatalf("a Load more link after the last session: %s", next)
			}
		})
	}
}
