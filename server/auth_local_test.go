package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server"
)

// Under --auth none every request is the one user's, so the server must
// answer only to this machine's names (or a web page could reach it by
// DNS rebinding) and refuse the writes a page of another origin can send.

// hostReq sends one request with the given Host and headers (name,
// value pairs; no Content-Type unless given) and returns the status and
// the code of an error body.
func hostReq(t *testing.T, srv *httptest.Server, method, host, path, body string, header ...string) (int, string) {
	t.Helper()
	status, _, b := raw(t, srv, method, path, body, append([]string{"Host", host, "Content-Type", ""}, header...)...)
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(b), &e)
	return status, e.Error.Code
}

func port(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

func TestAuthNoneAnswersOnlyLocalHosts(t *testing.T) {
	st := memstore.New(memstore.Options{})
	srv := serve(t, st, server.Options{Auth: server.AuthNone, AllowedHosts: []string{"recall.internal", "Box.LAN:9999"}})
	p := port(t, srv)
	conv := newConversation(t, srv)
	paths := []string{"/api/v1/sessions", "/v1/conversations/" + conv + "/items", "/", "/s/" + conv, "/api/v1/sessions/" + conv + "/export?format=markdown", "/healthz"}
	for _, host := range []string{"localhost:" + p, "127.0.0.1:" + p, "[::1]:" + p, "LocalHost:" + p, "app.localhost:" + p,
		"127.0.0.2:" + p, "localhost", "recall.internal:" + p, "recall.internal", "box.lan:9999"} {
		for _, path := range paths {
			if status, code := hostReq(t, srv, "GET", host, path, ""); status != http.StatusOK {
				t.Errorf("GET %s with Host %q: %d %s, want 200", path, host, status, code)
			}
		}
	}
	for _, host := range []string{"evil.example:" + p, "evil.example", "localhost.evil.example:" + p, "127.0.0.1.nip.io:" + p,
		"0.0.0.0:" + p, "192.168.1.5:" + p, "[::ffff:10.0.0.1]:" + p, "box.lan:" + p, "recall.internal.evil.example"} {
		for _, path := range paths {
			if status, code := hostReq(t, srv, "GET", host, path, ""); status != http.StatusForbidden || code != "host_not_allowed" {
				t.Errorf("GET %s with Host %q: %d %q, want 403 host_not_allowed", path, host, status, code)
			}
		}
		// Nor can such a page write, even with a body a page could not send cross-site.
		if status, _ := hostReq(t, srv, "POST", host, "/v1/conversations", `{}`, "Content-Type", "application/json"); status != http.StatusForbidden {
			t.Errorf("POST with Host %q: %d, want 403", host, status)
		}
	}
	if n := countSessions(t, st); n != 1 {
		t.Fatalf("%d sessions, want the 1 created", n)
	}

	// A server with tokens answers to any name: a page has no token.
	tok := serve(t, st, server.Options{})
	if status, code := hostReq(t, tok, "GET", "evil.example", "/api/v1/sessions", ""); status != http.StatusUnauthorized {
		t.Errorf("token server, evil Host: %d %s, want 401", status, code)
	}
}

func TestAuthNoneRefusesCrossSiteWrites(t *testing.T) {
	st := memstore.New(memstore.Options{})
	srv := serve(t, st)
	host := "localhost:" + port(t, srv)
	conv := newConversation(t, srv)
	body := `{"items":[{"type":"message","role":"user","content":"hi"}]}`
	for _, c := range []struct {
		name   string
		header []string
		status int
		code   string
	}{
		{"another origin", []string{"Content-Type", "application/json", "Origin", "http://evil.example"}, 403, "cross_origin"},
		{"another port", []string{"Content-Type", "application/json", "Origin", "http://localhost:1"}, 403, "cross_origin"},
		{"an opaque origin", []string{"Content-Type", "application/json", "Origin", "null"}, 403, "cross_origin"},
		{"a cross-site fetch without Origin", []string{"Content-Type", "application/json", "Sec-Fetch-Site", "cross-site"}, 403, "cross_origin"},
		{"text/plain", []string{"Content-Type", "text/plain;charset=UTF-8"}, 415, "unsupported_media_type"},
		{"a form", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"multipart", []string{"Content-Type", "multipart/form-data; boundary=x"}, 415, "unsupported_media_type"},
		{"no type", nil, 415, "unsupported_media_type"},
	} {
		for _, path := range []string{"/v1/conversations", "/v1/conversations/" + conv + "/items", "/api/v1/sessions/" + conv + "/fork"} {
			if status, code := hostReq(t, srv, "POST", host, path, body, c.header...); status != c.status || code != c.code {
				t.Errorf("%s: POST %s: %d %q, want %d %q", c.name, path, status, code, c.status, c.code)
			}
		}
	}
	for _, method := range []string{"DELETE", "PATCH"} {
		if status, code := hostReq(t, srv, method, host, "/api/v1/sessions/"+conv, `{"title":"x"}`,
			"Content-Type", "application/json", "Origin", "http://evil.example"); status != 403 {
			t.Errorf("%s from another origin: %d %s, want 403", method, status, code)
		}
	}
	if n := countSessions(t, st); n != 1 {
		t.Fatalf("%d sessions after refused writes, want 1", n)
	}
	if items := itemCount(t, st, conv); items != 1 {
		t.Fatalf("%d items after refused writes, want 1", items)
	}

	// What a client of this machine sends is served: JSON with or without
	// its own Origin, and any body with a token (which a page cannot set).
	for _, header := range [][]string{
		{"Content-Type", "application/json"},
		{"Content-Type", "application/json", "Origin", "http://" + host, "Sec-Fetch-Site", "same-origin"},
		{"Content-Type", "text/plain", "Authorization", "Bearer any"},
	} {
		if status, code := hostReq(t, srv, "POST", host, "/v1/conversations", body, header...); status != 200 {
			t.Errorf("POST %v: %d %s, want 200", header, status, code)
		}
	}
}

// TestAuthNoneViewerFormsOnlyFromItsOwnName is the rebinding attack on
// the viewer: a page served as evil.example, re-pointed at 127.0.0.1,
// reads a session page (with its CSRF token) and posts the rename form
// with Origin and Host both evil.example, so an Origin that matches the
// Host is not enough.
func TestAuthNoneViewerFormsOnlyFromItsOwnName(t *testing.T) {
	st := memstore.New(memstore.Options{})
	srv := serve(t, st)
	p := port(t, srv)
	conv := newConversation(t, srv)
	evil := "evil.example:" + p
	jar := webClient(t, srv, "")
	get := func(host string) (int, string) {
		req, _ := http.NewRequest("GET", srv.URL+"/s/"+conv, nil)
		req.Host = host
		res, err := jar.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if status, _ := get(evil); status != http.StatusForbidden {
		t.Fatalf("the session page as %s: %d, want 403", evil, status)
	}
	// The form is served as localhost; its token in a rebinding page's hands:
	status, page := get("localhost:" + p)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if status != 200 || m == nil {
		t.Fatalf("session page: %d, no CSRF token in it", status)
	}
	form := url.Values{"csrf": {m[1]}, "title": {"pwned"}}.Encode()
	req, _ := http.NewRequest("POST", srv.URL+"/s/"+conv+"/rename", strings.NewReader(form))
	req.Host = evil
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://"+evil)
	res, err := jar.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("rename as %s: %d, want 403", evil, res.StatusCode)
	}
	if m, err := st.Stat(context.Background(), localKey(conv)); err != nil || m.Title == "pwned" {
		t.Fatalf("after the refused rename: %+v, %v", m, err)
	}
}

// newConversation creates a conversation of one message through the API.
func newConversation(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	status, _, body := raw(t, srv, "POST", "/v1/conversations", `{"items":[{"type":"message","role":"user","content":"hi"}]}`)
	var c struct{ ID string }
	if err := json.Unmarshal([]byte(body), &c); status != 200 || err != nil || c.ID == "" {
		t.Fatalf("create: %d %s", status, body)
	}
	return c.ID
}

func countSessions(t *testing.T, st recall.Store) int {
	t.Helper()
	page, err := st.List(context.Background(), server.User{Name: server.DefaultUser}.Project(), recall.ListOptions{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Sessions)
}

func itemCount(t *testing.T, st recall.Store, id string) int {
	t.Helper()
	items, _, err := st.Items(context.Background(), localKey(id), 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(items)
}
