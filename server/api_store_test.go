package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server"
)

// storeReq sends a request to a store route and returns the status and
// the error body's code.
func storeReq(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var eb struct {
		Error struct {
			Code any `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &eb)
	code, _ := eb.Error.Code.(string)
	return res.StatusCode, code
}

// TestStoreRoutesRefuse checks the refusals of the store routes: each is
// answered with its status and the code of recall's sentinel, and writes
// nothing.
func TestStoreRoutesRefuse(t *testing.T) {
	st := memstore.New(memstore.Options{})
	ctx := context.Background()
	alice, _, _ := server.CreateToken(ctx, st, "alice", false)
	bob, _, _ := server.CreateToken(ctx, st, "bob", false)
	reader, _, _ := server.CreateTokenWith(ctx, st, "alice", server.TokenOptions{ReadOnly: true})
	srv := serve(t, st, server.Options{Auth: server.AuthToken, MaxBodyBytes: 64 << 10})
	base := srv.URL + "/api/v1/store/"
	item := `{"kind":"item","text":"{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\"}"}`
	if s, code := storeReq(t, "POST", base+"append", alice, `{"key":{"project":"p","session":"s"},"entries":[`+item+`]}`); s != 200 {
		t.Fatalf("append: %d %s", s, code)
	}
	cases := []struct {
		name, method, route, token, body string
		status                           int
		code                             string
	}{
		{"bad key", "POST", "append", alice, `{"key":{"project":"p","session":"../x"},"entries":[` + item + `]}`, 400, "invalid_key"},
		// A project named like the server's own, or another user's, is a
		// project of bob's own namespace: there is nothing in it.
		{"reserved project", "GET", "stat?project=_server.tokens&session=" + strings.Repeat("0", 64), alice, "", 404, "not_found"},
		{"another user's project", "GET", "stat?project=users.5.alice.p&session=s", bob, "", 404, "not_found"},
		{"wrong user", "GET", "stat?project=p&session=s", bob, "", 404, "not_found"},
		{"guard: not new", "POST", "append", alice, `{"key":{"project":"p","session":"s"},"guard":{"new":true},"entries":[` + item + `]}`, 409, "conflict"},
		{"guard: stale seq", "POST", "append", alice, `{"key":{"project":"p","session":"s"},"guard":{"check_seq":true,"last_seq":7},"entries":[` + item + `]}`, 409, "conflict"},
		{"guard: missing", "POST", "append", alice, `{"key":{"project":"p","session":"nope"},"guard":{"exists":true},"entries":[` + item + `]}`, 404, "not_found"},
		{"bad item", "POST", "append", alice, `{"key":{"project":"p","session":"s"},"entries":[{"kind":"item","text":"[1]"}]}`, 400, "invalid_item"},
		{"bad guard", "POST", "append", alice, `{"key":{"project":"p","session":"s"},"guard":{"new":"yes"}}`, 400, "invalid_type"},
		{"oversize", "POST", "append", alice, `{"key":{"project":"p","session":"s"},"entries":[{"kind":"item","text":"` + strings.Repeat("x", 70<<10) + `"}]}`, 413, "request_too_large"},
		{"read-only token", "POST", "append", reader, `{"key":{"project":"p","session":"s"},"entries":[` + item + `]}`, 403, "read_only_token"},
		{"import gap", "POST", "import", alice, `{"key":{"project":"p","session":"s"},"entries":[{"seq":9,"kind":"item","time":"2026-01-01T00:00:00Z","text":"{}"}]}`, 409, "conflict"},
		{"bad limit", "GET", "entries?project=p&session=s&limit=ten", alice, "", 400, ""},
	}
	for _, c := range cases {
		s, code := storeReq(t, c.method, base+c.route, c.token, c.body)
		if s != c.status || code != c.code {
			t.Errorf("%s: %d %q, want %d %q", c.name, s, code, c.status, c.code)
		}
	}
	// Nothing above wrote: alice's session holds its one item, bob has none.
	m, err := st.Stat(ctx, recall.Key{Project: "users.5.alice.p", Session: "s"})
	if err != nil || m.LastSeq != 1 {
		t.Errorf("alice's session after the refusals: %+v, %v; want LastSeq 1", m, err)
	}
	if s, _ := storeReq(t, "GET", base+"stat?project=p&session=s", reader, ""); s != 200 {
		t.Errorf("a reader's stat: %d, want 200", s)
	}
	if s, _ := storeReq(t, "GET", base+"list?project=", bob, ""); s != 200 {
		t.Errorf("bob's list: %d", s)
	}
}
