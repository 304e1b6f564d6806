package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/recallkit/recall/memstore"
)

// attackPage is a page of another site that tries what a page a person
// opens can try on a recall serve --auth none on their machine: plant a
// conversation with a request that needs no permission (a "no-cors"
// text/plain POST), read the list of sessions, and rename a session with
// the CSRF token of its page. run(base) reports what each step got.
const attackPage = `<!doctype html><meta charset="utf-8"><title>a page of another site</title><script>
async function run(base, id) {
	const out = {}
	const body = JSON.stringify({items: [{type: "message", role: "user", content: "planted"}]})
	try {
		await fetch(base + "/v1/conversations", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body})
		out.plant = "sent"
	} catch (e) { out.plant = "failed: " + e }
	try {
		const r = await fetch(base + "/api/v1/sessions")
		out.list = r.status + " " + (await r.text()).slice(0, 300)
	} catch (e) { out.list = "failed: " + e }
	try {
		const page = await (await fetch(base + "/s/" + id)).text()
		const m = page.match(/name="csrf" value="([0-9a-f]+)"/)
		const r = await fetch(base + "/s/" + id + "/rename", {method: "POST", body: new URLSearchParams({csrf: m ? m[1] : "", title: "pwned"})})
		out.rename = String(r.status)
	} catch (e) { out.rename = "failed: " + e }
	return JSON.stringify(out)
}
</script>`

// TestWebBrowserLocalOnly runs the attack page in headless Chromium
// against a server without authentication, from another origin
// (127.0.0.1 on another port) and from the attacker's own name re-pointed
// at 127.0.0.1 (evil.example, which the test browser resolves there):
// nothing is planted, read or renamed.
func TestWebBrowserLocalOnly(t *testing.T) {
	browser := newBrowser(t, chromePath(t))
	st := memstore.New(memstore.Options{})
	srv := serve(t, st)
	conv := newConversation(t, srv)
	// The attacker's server: its page at /attack; every other request
	// reaches recall, as its name, once re-pointed, makes them do.
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/attack" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(attackPage))
			return
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	for _, c := range []struct{ name, page, base string }{
		{"another origin", front.URL + "/attack", "http://localhost:" + port(t, srv)},
		{"DNS rebinding", "http://evil.example:" + port(t, front) + "/attack", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The first run opens the tab, which lives as long as that
			// run's context: this one, without a time limit.
			ctx, cancel := chromedp.NewContext(browser)
			t.Cleanup(cancel)
			if err := chromedp.Do(ctx); err != nil {
				t.Fatal(err)
			}
			browse(t, ctx, chromedp.Navigate(c.page))
			raw := eval[string](t, ctx, `run(`+jsString(c.base)+`, `+jsString(conv)+`)`)
			var got struct{ Plant, List, Rename string }
			if err := json.Unmarshal([]byte(raw), &got); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			t.Logf("the page got: %s", raw)
			if strings.Contains(got.List, conv) || strings.HasPrefix(got.List, "200") {
				t.Errorf("the page read the sessions: %s", got.List)
			}
			if got.Rename == "200" || got.Rename == "303" {
				t.Errorf("the rename was served: %s", got.Rename)
			}
			if n := countSessions(t, st); n != 1 {
				t.Errorf("%d sessions, want 1: the page planted one", n)
			}
			if m, err := st.Stat(context.Background(), localKey(conv)); err != nil || m.Title == "pwned" {
				t.Errorf("the page renamed the session: %+v, %v", m, err)
			}
		})
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
