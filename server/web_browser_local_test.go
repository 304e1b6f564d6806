package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// attackPage is a page of another site that tries what a page a person
// opens can try on a recall serve --auth none on their machine: plant a
// conversation with a request that needs no permission (a "no-cors"
// text/plain POST), read the list of sessions, rename a session with the
// CSRF token of its page, fork a session of the home's with a "no-cors"
// POST, and delete it with a fetch DELETE. run(base, id, home, project)
// reports what each step got.
const attackPage = `<!doctype html><meta charset="utf-8"><title>a page of another site</title><script>
async function run(base, id, home, project) {
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
	const at = base + "/api/v1/sessions/" + home
	try {
		await fetch(at + "/fork?project=" + project, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: "{}"})
		out.fork = "sent"
	} catch (e) { out.fork = "failed: " + e }
	try {
		const r = await fetch(at + "?project=" + project + "&force=true", {method: "DELETE"})
		out.delete = String(r.status)
	} catch (e) { out.delete = "failed: " + e }
	return JSON.stringify(out)
}
</script>`

// TestWebBrowserLocalOnly runs the attack page in headless Chromium
// against a server without authentication, from another origin
// (127.0.0.1 on another port) and from the attacker's own name re-pointed
// at 127.0.0.1 (evil.example, which the test browser resolves there):
// nothing is planted, read, renamed, forked or deleted, of the
// conversations of the API nor of the sessions of the home's projects,
// which the local user owns too.
func TestWebBrowserLocalOnly(t *testing.T) {
	browser := newBrowser(t, chromePath(t))
	st := memstore.New(memstore.Options{})
	srv := serve(t, st)
	conv := newConversation(t, srv)
	home := recall.Key{Project: "-home-me-src-app", Session: "claude-1"}
	if _, err := recall.NewSession(st, home).Create(context.Background(), recall.CreateOptions{Title: "the home's",
		Items: []recall.Item{recall.Message("user", "a secret of the home")}}); err != nil {
		t.Fatal(err)
	}
	before := allSessions(t, st)
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
			raw := eval[string](t, ctx, `run(`+jsString(c.base)+`, `+jsString(conv)+`, `+jsString(home.Session)+`, `+jsString(home.Project)+`)`)
			var got struct{ Plant, List, Rename, Fork, Delete string }
			if err := json.Unmarshal([]byte(raw), &got); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			t.Logf("the page got: %s", raw)
			if strings.Contains(got.List, conv) || strings.Contains(got.List, home.Session) || strings.HasPrefix(got.List, "200") {
				t.Errorf("the page read the sessions: %s", got.List)
			}
			if got.Rename == "200" || got.Rename == "303" {
				t.Errorf("the rename was served: %s", got.Rename)
			}
			if got.Delete == "200" {
				t.Errorf("the delete was served: %s", got.Delete)
			}
			if after := allSessions(t, st); !slices.Equal(after, before) {
				t.Errorf("sessions %q, want %q: the page planted, forked or deleted one", after, before)
			}
			if m, err := st.Stat(context.Background(), home); err != nil || m.ItemCount != 1 {
				t.Errorf("the home's session: %+v, %v", m, err)
			}
			if m, err := st.Stat(context.Background(), localKey(conv)); err != nil || m.Title == "pwned" {
				t.Errorf("the page renamed the session: %+v, %v", m, err)
			}
		})
	}
}

// allSessions lists the keys of every main session of st, of every
// project, sorted.
func allSessions(t *testing.T, st recall.Store) []string {
	t.Helper()
	page, err := st.List(context.Background(), "", recall.ListOptions{Limit: -1, IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range page.Sessions {
		out = append(out, m.Key.String())
	}
	slices.Sort(out)
	return out
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
