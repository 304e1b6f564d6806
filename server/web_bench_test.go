package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/server"
)

// The web viewer's first screens against the store reads they are built
// on, in one run: the server time of a page (the handler called directly,
// no network) beside reading the same data from the store.
//
//	go test -run '^$' -bench BenchmarkWeb -benchtime 50x ./server/

// webBenchServer serves st with token auth and returns the handler and a
// signed-in cookie of alice.
func webBenchServer(b *testing.B, st recall.Store) (http.Handler, *http.Cookie) {
	b.Helper()
	h, err := server.New(context.Background(), st, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: -1})
	if err != nil {
		b.Fatal(err)
	}
	tok, _, err := server.CreateToken(context.Background(), st, "alice", false)
	if err != nil {
		b.Fatal(err)
	}
	return h, &http.Cookie{Name: "recall_session", Value: tok}
}

func servePage(b *testing.B, h http.Handler, c *http.Cookie, path string) {
	req := httptest.NewRequest("GET", path, nil)
	req.AddCookie(c)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
	}
}

// BenchmarkWebSessionPage: the first screen of a 10,000-item session.
func BenchmarkWebSessionPage(b *testing.B) {
	st := openFileStore(&testing.T{}, b.TempDir())
	defer st.Close()
	ctx := context.Background()
	key := recall.Key{Project: "user.alice", Session: "conv_long"}
	items := make([]recall.Item, 0, 500)
	for i := 0; i < 10000; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		items = append(items, recall.Message(role, fmt.Sprintf("Turn %d: some **Markdown** with `code` and a list:\n\n- one\n- two\n\n```go\nfmt.Println(%d)\n```", i, i)))
		if len(items) == cap(items) {
			g := recall.IfExists()
			if i < cap(items) {
				g = recall.IfNew()
			}
			if _, err := st.Append(ctx, key, g, recall.ItemEntries(items...)...); err != nil {
				b.Fatal(err)
			}
			items = items[:0]
		}
	}
	h, cookie := webBenchServer(b, st)
	b.Run("store-newest-50", func(b *testing.B) {
		for b.Loop() {
			if live, _, err := st.Items(ctx, key, 50); err != nil || len(live) != 50 {
				b.Fatal(len(live), err)
			}
		}
	})
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			servePage(b, h, cookie, "/s/conv_long")
		}
	})
}

// BenchmarkWebListPage: the sessions list of a user with 10,000 sessions,
// 5 of them pinned (shown first, then 50 others).
func BenchmarkWebListPage(b *testing.B) {
	st := openFileStore(&testing.T{}, b.TempDir())
	defer st.Close()
	ctx := context.Background()
	for i := 0; i < 10000; i++ {
		key := recall.Key{Project: "user.alice", Session: fmt.Sprintf("conv_%05d", i)}
		if _, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{Title: fmt.Sprintf("Session %d", i),
			Items: []recall.Item{recall.Message("user", fmt.Sprintf("The first prompt of session %d", i)), recall.Message("assistant", "ok")}}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 1000; i < 10000; i += 2000 {
		if _, err := recall.NewSession(st, recall.Key{Project: "user.alice", Session: fmt.Sprintf("conv_%05d", i)}).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
			b.Fatal(err)
		}
	}
	h, cookie := webBenchServer(b, st)
	b.Run("store-list-50", func(b *testing.B) {
		for b.Loop() {
			if p, err := st.List(ctx, "user.alice", recall.ListOptions{Limit: 50}); err != nil || len(p.Sessions) != 50 {
				b.Fatal(len(p.Sessions), err)
			}
		}
	})
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			servePage(b, h, cookie, "/")
		}
	})
}
