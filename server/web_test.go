package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server"
)

// webClient signs in to a server's web viewer and keeps the cookie; it
// follows no redirects, so a test sees each answer.
func webClient(t *testing.T, srv *httptest.Server, token string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := srv.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if token != "" {
		res, err := c.PostForm(srv.URL+"/signin", url.Values{"token": {token}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign-in: %s", res.Status)
		}
	}
	return c
}

func getBody(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func TestWebHeadersAndCSRF(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	h, err := server.New(context.Background(), st, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx := context.Background()
	tok, _, err := server.CreateToken(ctx, st, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	key := recall.Key{Project: "user.alice", Session: "conv_web1"}
	if _, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{Title: "Keep me", Items: []recall.Item{recall.Message("user", "hi")}}); err != nil {
		t.Fatal(err)
	}

	// Without a cookie a page redirects to the sign-in page; the APIs
	// still answer 401 to a request without a bearer token, cookie or not.
	anon := webClient(t, srv, "")
	if res, _ := getBody(t, anon, srv.URL+"/s/conv_web1"); res.StatusCode != http.StatusSeeOther ||
		res.Header.Get("Location") != "/signin?next=%2Fs%2Fconv_web1" {
		t.Errorf("no cookie: %s to %q", res.Status, res.Header.Get("Location"))
	}
	c := webClient(t, srv, tok)
	if res, _ := getBody(t, c, srv.URL+"/api/v1/sessions"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the API with the web cookie only: %s, want 401", res.Status)
	}

	res, body := getBody(t, c, srv.URL+"/s/conv_web1")
	if res.StatusCode != 200 {
		t.Fatalf("session page: %s", res.Status)
	}
	for k, want := range map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "same-origin",
		"X-Frame-Options":         "DENY",
		"Cache-Control":           "no-store",
	} {
		if got := res.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, " on") && regexp.MustCompile(`\son[a-z]+=`).MatchString(body) {
		t.Error("a page holds inline script, an inline style or an event handler attribute")
	}
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF field on the page")
	}
	csrf := m[1]

	post := func(form url.Values, origin string) int {
		req, _ := http.NewRequest("POST", srv.URL+"/s/conv_web1/rename", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for name, code := range map[string]int{
		"no token":     post(url.Values{"title": {"x"}}, ""),
		"wrong token":  post(url.Values{"title": {"x"}, "csrf": {strings.Repeat("0", 64)}}, ""),
		"other origin": post(url.Values{"title": {"x"}, "csrf": {csrf}}, "https://evil.example"),
	} {
		if code != http.StatusForbidden {
			t.Errorf("rename with %s: %d, want 403", name, code)
		}
	}
	if m, _ := st.Stat(ctx, key); m.Title != "Keep me" {
		t.Fatalf("a refused POST renamed the session to %q", m.Title)
	}
	if code := post(url.Values{"title": {"Renamed"}, "csrf": {csrf}}, srv.URL); code != http.StatusSeeOther {
		t.Errorf("rename with the token: %d, want 303", code)
	}
	if m, _ := st.Stat(ctx, key); m.Title != "Renamed" {
		t.Errorf("title %q after rename", m.Title)
	}
	// A pinned session is not deleted from the viewer.
	act := func(action string, form url.Values) int {
		form.Set("csrf", csrf)
		res, err := c.PostForm(srv.URL+"/s/conv_web1/"+action, form)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := act("pin", url.Values{"value": {"1"}}); code != http.StatusSeeOther {
		t.Fatalf("pin: %d", code)
	}
	if code := act("delete", url.Values{}); code != http.StatusConflict {
		t.Errorf("delete of a pinned session: %d, want 409", code)
	}
	if _, err := st.Stat(ctx, key); err != nil {
		t.Fatalf("the viewer deleted a pinned session: %v", err)
	}
	if code := act("pin", url.Values{"value": {"0"}}); code != http.StatusSeeOther {
		t.Fatalf("unpin: %d", code)
	}

	// Static assets: cached for good under their hash, typed, CSP'd.
	css := regexp.MustCompile(`/static/style\.css\?v=[0-9a-f]+`).FindString(body)
	res, _ = getBody(t, anon, srv.URL+css)
	if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" ||
		!strings.HasPrefix(res.Header.Get("Content-Type"), "text/css") || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("style.css: %s, %v", res.Status, res.Header)
	}
	if res, _ := getBody(t, anon, srv.URL+"/static/style.css?v=old"); res.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("a stale asset URL is cached: %q", res.Header.Get("Cache-Control"))
	}

	// The sign-in page never sends the browser to another site.
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example", "/v1/conversations",
		"/s/../\\evil.example", "/s/x\\..\\..\\evil.example", "/s/../../evil.example", "/s/\tx", "/s/\x00x"} {
		res, err := anon.PostForm(srv.URL+"/signin", url.Values{"token": {tok}, "next": {next}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if loc := res.Header.Get("Location"); loc != "/" {
			t.Errorf("next=%q: redirected to %q", next, loc)
		}
	}
	// A wrong token is a 401 page and sets no cookie.
	res, err = anon.PostForm(srv.URL+"/signin", url.Values{"token": {"rk_wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || len(res.Cookies()) != 0 {
		t.Errorf("wrong token: %s, cookies %v", res.Status, res.Cookies())
	}
}

func TestWebCookieSecureOverTLS(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	h, err := server.New(context.Background(), st, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := server.CreateToken(context.Background(), st, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tls := range []bool{false, true} {
		srv := httptest.NewUnstartedServer(h)
		if tls {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		c := srv.Client()
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		res, err := c.PostForm(srv.URL+"/signin", url.Values{"token": {tok}})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		var got *http.Cookie
		for _, ck := range res.Cookies() {
			if ck.Name == "recall_session" {
				got = ck
			}
		}
		if got == nil || !got.HttpOnly || got.SameSite != http.SameSiteStrictMode || got.Secure != tls || got.Path != "/" {
			t.Errorf("TLS %v: session cookie %+v", tls, got)
		}
	}
}

// TestWebCounts: the viewer counts in words that agree with the number.
func TestWebCounts(t *testing.T) {
	srv := serve(t, memstore.New(memstore.Options{}))
	one := newConversation(t, srv)
	c := webClient(t, srv, "")
	for path, want := range map[string]string{
		"/":                     "<span>1 item</span>",
		"/s/" + one:             `<span id="count">1 item</span>`,
		"/s/" + one + "/delete": "Its 1 item and",
	} {
		res, body := getBody(t, c, srv.URL+path)
		if res.StatusCode != http.StatusOK || !strings.Contains(body, want) || strings.Contains(body, "1 items") {
			t.Errorf("GET %s: %s, want %q and no \"1 items\"", path, res.Status, want)
		}
	}
	if status, _, body := raw(t, srv, "POST", "/v1/conversations/"+one+"/items", `{"items":[{"type":"message","role":"assistant","content":"hello"}]}`); status != http.StatusOK {
		t.Fatalf("add an item: %d %s", status, body)
	}
	if _, body := getBody(t, c, srv.URL+"/"); !strings.Contains(body, "<span>2 items</span>") {
		t.Errorf("the list does not say 2 items")
	}
}

// TestSessionSource checks that /api/v1 and the viewer's list and session
// page name the tool each session came from: "recall" for one written
// through the service, the importer's name for an imported one.
func TestSessionSource(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	srv := serve(t, st)
	own := newConversation(t, srv)
	imported := recall.Key{Project: server.User{Name: server.DefaultUser}.Project(), Session: "claude-1"}
	if _, err := recall.NewSession(st, imported).Create(context.Background(), recall.CreateOptions{
		Metadata: map[string]string{importer.MetaSource: "claude-code"},
		Items:    []recall.Item{recall.Message("user", "imported")},
	}); err != nil {
		t.Fatal(err)
	}

	status, _, body := raw(t, srv, "GET", "/api/v1/sessions", "")
	var l struct {
		Data []struct{ ID, Source string }
	}
	if err := json.Unmarshal([]byte(body), &l); status != http.StatusOK || err != nil {
		t.Fatalf("list: %d %s", status, body)
	}
	got := map[string]string{}
	for _, s := range l.Data {
		got[s.ID] = s.Source
	}
	if want := map[string]string{own: "recall", "claude-1": "claude-code"}; !maps.Equal(got, want) {
		t.Errorf("/api/v1/sessions sources: %v, want %v", got, want)
	}

	c := webClient(t, srv, "")
	for path, want := range map[string][]string{
		"/":           {`class="source" title="where the session came from">recall<`, `class="source" title="where the session came from">claude-code<`},
		"/s/" + own:   {`id="source" title="where the session came from">recall<`},
		"/s/claude-1": {`id="source" title="where the session came from">claude-code<`},
	} {
		res, body := getBody(t, c, srv.URL+path)
		for _, w := range want {
			if res.StatusCode != http.StatusOK || !strings.Contains(body, w) {
				t.Errorf("GET %s: %s, want %q in the page", path, res.Status, w)
			}
		}
	}
}
