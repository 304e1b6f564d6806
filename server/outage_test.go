package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/redisstore"
	"github.com/recallkit/recall/server"
	"github.com/recallkit/recall/sqlstore"
)

// TestStoreOutage stops the store's server (a private one of the test,
// PostgreSQL or Redis) under a running recall server: a request that
// needs the store (a route's read, a write, a token not verified yet, a
// page of the viewer) is a 503 with Retry-After in the API's words, not a
// 500, and says nothing of the store (its name, address, the driver's
// text).
func TestStoreOutage(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(url string) (recall.Store, error)
		srv  func(t testing.TB) *testsvc.Server
	}{
		{"redis", func(url string) (recall.Store, error) {
			return redisstore.Open(context.Background(), url, redisstore.Options{})
		}, testsvc.PrivateRedis},
		{"postgres", func(url string) (recall.Store, error) {
			return sqlstore.OpenPostgres(context.Background(), url, sqlstore.Options{})
		}, testsvc.PrivatePostgres},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := c.srv(t)
			st, err := c.open(db.URL)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			ctx := context.Background()
			known, _, err := server.CreateToken(ctx, st, "alice", false)
			if err != nil {
				t.Fatal(err)
			}
			unknown, _, err := server.CreateToken(ctx, st, "bob", false)
			if err != nil {
				t.Fatal(err)
			}
			conv := recall.Key{Project: server.User{Name: "alice"}.Project(), Session: "conv_outage"}
			if _, err := recall.NewSession(st, conv).Create(ctx, recall.CreateOptions{Items: []recall.Item{recall.Message("user", "hi")}}); err != nil {
				t.Fatal(err)
			}
			srv := serve(t, st, server.Options{Auth: server.AuthToken, TokenTTL: 0})
			auth := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
			if code, _, body := raw(t, srv, "GET", "/v1/conversations/"+conv.Session, "", auth(known)...); code != http.StatusOK {
				t.Fatalf("before the outage: %d %s", code, body)
			}

			db.Stop()
			for _, r := range []struct {
				method, path, body string
				header             []string
			}{
				{"GET", "/v1/conversations/" + conv.Session, "", auth(known)},
				{"GET", "/v1/conversations/" + conv.Session + "/items", "", auth(known)},
				{"POST", "/v1/conversations/" + conv.Session + "/items", `{"items":[{"role":"user","content":"x"}]}`, auth(known)},
				{"GET", "/api/v1/sessions", "", auth(known)},
				{"GET", "/api/v1/me", "", auth(unknown)},
			} {
				code, h, body := raw(t, srv, r.method, r.path, r.body, r.header...)
				var e struct {
					Error struct{ Message, Type, Code string }
				}
				_ = json.Unmarshal([]byte(body), &e)
				if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || e.Error.Code != "store_unavailable" || e.Error.Type != "server_error" {
					t.Errorf("%s %s with the store down: %d, Retry-After %q, %s; want a 503 store_unavailable with Retry-After",
						r.method, r.path, code, h.Get("Retry-After"), body)
				}
				for _, w := range []string{c.name, "dial", "127.0.0.1", "refused", "EOF", "recall:"} {
					if strings.Contains(strings.ToLower(body), strings.ToLower(w)) {
						t.Errorf("%s %s: the answer holds %q: %s", r.method, r.path, w, body)
					}
				}
			}
			// The viewer: an error page with the same status.
			code, h, _ := raw(t, srv, "GET", "/", "", "Cookie", "recall_session="+known)
			if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
				t.Errorf("the viewer with the store down: %d, Retry-After %q", code, h.Get("Retry-After"))
			}
		})
	}
}
