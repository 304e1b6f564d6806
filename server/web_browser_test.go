package server_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/server"
)

// The web viewer in a real browser: chromedp drives a headless Chromium
// against two real server replicas over one file store directory.
//
// The browser is $RECALL_TEST_CHROME, or the first Chromium found on the
// PATH or in Debian's places (../shared/browser-up installs one). With
// none the tests skip, unless RECALL_REQUIRE_BROWSER is set: then they
// fail. RECALL_UPDATE_SCREENSHOTS=1 writes the screenshots to docs/
// instead of a temp dir.

func chromePath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RECALL_TEST_CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	for _, p := range []string{"/usr/lib/chromium/chromium-headless-shell", "/usr/lib/chromium/headless_shell", "/usr/lib/chromium/chromium"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("RECALL_REQUIRE_BROWSER") != "" {
		t.Fatal("no browser found: set RECALL_TEST_CHROME or run ../shared/browser-up")
	}
	t.Skip("no browser found (set RECALL_TEST_CHROME, or run ../shared/browser-up)")
	return ""
}

// webEnv is two replicas over one store directory and a browser.
type webEnv struct {
	st      recall.Store // replica A's store
	a, b    *httptest.Server
	tokens  map[string]string
	browser context.Context
}

func newWebEnv(t *testing.T) *webEnv {
	t.Helper()
	chrome := chromePath(t)
	dir := t.TempDir()
	e := &webEnv{st: openFileStore(t, dir), tokens: map[string]string{}}
	stB := openFileStore(t, dir) // a second replica: its own store over the same files
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i, st := range []recall.Store{e.st, stB} {
		h, err := server.New(context.Background(), st, server.Options{Logger: quiet, RateLimit: -1})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		if i == 0 {
			e.a = srv
		} else {
			e.b = srv
		}
	}
	for _, u := range []struct {
		name  string
		admin bool
	}{{"alice", false}, {"bob", false}, {"carol", false}, {"root", true}} {
		tok, _, err := server.CreateToken(context.Background(), e.st, u.name, u.admin)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens[u.name] = tok
	}
	e.browser = newBrowser(t, chrome)
	return e
}

// newBrowser starts the browser at path, stopped when the test ends. It
// resolves evil.example to 127.0.0.1, as an attacker who re-points their
// own name at this machine (DNS rebinding) would have it.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 800), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("host-resolver-rules", "MAP evil.example 127.0.0.1"))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	browser, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return browser
}

// pageLog records what a tab's pages did that a test must see: dialogs,
// console calls, exceptions and the browser's log (CSP violations).
type pageLog struct {
	mu         sync.Mutex
	dialogs    []string
	console    []string
	exceptions []string
	logs       []string // the browser log: source and text
}

func (l *pageLog) add(ctx *context.Context) func(ev any) {
	return func(ev any) {
		l.mu.Lock()
		defer l.mu.Unlock()
		switch ev := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			l.dialogs = append(l.dialogs, string(ev.Type)+": "+ev.Message)
			go func() { // a dialog blocks the page until it is answered
				_, _ = chromedp.Call(*ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			}()
		case *runtime.EventConsoleAPICalled:
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			l.console = append(l.console, string(ev.Type)+": "+strings.Join(args, " "))
		case *runtime.EventExceptionThrown:
			l.exceptions = append(l.exceptions, fmt.Sprintf("%s %v", ev.ExceptionDetails.Text, ev.ExceptionDetails.Exception))
		case *cdplog.EventEntryAdded:
			l.logs = append(l.logs, string(ev.Entry.Source)+": "+ev.Entry.Text)
		}
	}
}

// ranNothing fails the test when a page opened a dialog, called the
// console, threw, or had the browser block something by its CSP.
func (l *pageLog) ranNothing(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.dialogs)+len(l.console)+len(l.exceptions) > 0 {
		t.Errorf("script ran: dialogs %q, console %q, exceptions %q", l.dialogs, l.console, l.exceptions)
	}
	for _, s := range l.logs {
		if strings.Contains(s, "Content Security Policy") || strings.HasPrefix(s, "security") || strings.HasPrefix(s, "javascript") {
			t.Errorf("the browser blocked or reported something: %s", s)
		}
	}
}

// tab opens a new tab in a browser context of its own (its own cookies)
// and signs user in through the sign-in page ("" for nobody).
func (e *webEnv) tab(t *testing.T, user string) (context.Context, *pageLog) {
	t.Helper()
	l := &pageLog{}
	var ctx context.Context
	ctx, cancel := chromedp.NewContext(e.browser, chromedp.WithNewBrowserContext(), chromedp.WithListener(l.add(&ctx)))
	t.Cleanup(cancel)
	// The first run opens the tab, which lives as long as that run's
	// context: this one, without a time limit.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	if user != "" {
		browse(t, ctx,
			chromedp.Navigate(e.a.URL+"/"),
			chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SetValue(chromedp.CSS("#token"), e.tokens[user]),
			chromedp.Click(chromedp.CSS("button.primary")),
			chromedp.WaitVisible(chromedp.CSS("#rows")),
		)
	}
	return ctx, l
}

// browse runs browser steps with a time limit, failing the test on an error.
func browse(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		c2, cancel2 := context.WithTimeout(ctx, 5*time.Second)
		defer cancel2()
		page, _ := chromedp.Run(c2, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText.slice(0, 600)`))
		t.Fatalf("%v; the page: %s", err, page)
	}
}

// eval evaluates a JavaScript expression in the tab.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// waitJS waits until a JavaScript expression is true, for at most d.
func waitJS(t *testing.T, ctx context.Context, js string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := chromedp.Run(c, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true within %v: %s (%v)", d, js, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settle waits until the page has done what it would do by itself: the
// document and every image loaded (or failed), the fonts ready, no "more"
// or "older" link of the infinite scroll left in view unloaded, and two
// frames and a task run after that. A check that nothing happened (no
// hostile script ran, nothing overflows) follows it, never a fixed sleep.
func settle(t *testing.T, ctx context.Context) {
	t.Helper()
	waitJS(t, ctx, `document.readyState === "complete" && [...document.images].every(i => i.complete) &&
		document.fonts.status === "loaded" && ["more", "older"].every(id => {
			const el = document.getElementById(id)
			if (!el) return true
			const r = el.getBoundingClientRect()
			return r.top >= innerHeight || r.bottom <= 0
		})`, 30*time.Second)
	_ = eval[bool](t, ctx, `window.__settled = false; requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => { window.__settled = true }))); true`)
	waitJS(t, ctx, `window.__settled === true`, 30*time.Second)
}

func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	return eval[string](t, ctx, `location.pathname + location.search`)
}

// session writes a session for user straight to the store and returns
// its id.
func (e *webEnv) session(t *testing.T, user, title string, items ...recall.Item) string {
	t.Helper()
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	id := "conv_" + hex.EncodeToString(b)
	key := recall.Key{Project: "user." + user, Session: id}
	if _, err := recall.NewSession(e.st, key).Create(context.Background(), recall.CreateOptions{Title: title, Items: items}); err != nil {
		t.Fatal(err)
	}
	return id
}

func turns(n int, prefix string) []recall.Item {
	var out []recall.Item
	for i := 1; i <= n; i++ {
		role := "user"
		if i%2 == 0 {
			role = "assistant"
		}
		out = append(out, recall.Message(role, fmt.Sprintf("%s %d", prefix, i)))
	}
	return out
}

// richItems are a transcript with every kind of item the viewer shows.
func richItems() []recall.Item {
	png := "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAKElEQVR4nGNkYPj/n4ECwESJ5lEDRg0YNWDUgFEDRg0YNWDUAAYGBgBQJQEfPIWqlQAAAABJRU5ErkJggg=="
	return []recall.Item{
		recall.Item(`{"type":"message","role":"user","content":[{"type":"input_text","text":"Why does the **deploy** to kubernetes fail? Here is the manifest check:"},{"type":"input_image","image_url":"` + png + `"}]}`),
		recall.Item(`{"type":"reasoning","summary":[{"type":"summary_text","text":"The user wants the failing step; read the logs first."}]}`),
		recall.Item(`{"type":"function_call","name":"shell","call_id":"c1","arguments":"{\"cmd\":\"kubectl get pods -n web\"}"}`),
		recall.Item(`{"type":"function_call_output","call_id":"c1","output":"` + strings.Repeat(`web-7f9c  0/1  CrashLoopBackOff  12  3h\n`, 40) + `"}`),
		recall.Message("assistant", "The pod crashes on start. Set the port the app reads:\n\n```go\nfunc main() {\n\tport := os.Getenv(\"PORT\")\n\tlog.Fatal(http.ListenAndServe(\":\"+port, nil))\n}\n```\n\n| Check | Result |\n|---|---|\n| image | ok |\n| port | **missing** |"),
		recall.Message("user", "Thanks, that was it."),
	}
}

func TestWebBrowser(t *testing.T) {
	e := newWebEnv(t)
	ctx := context.Background()

	rich := e.session(t, "alice", "Fix the kubernetes deploy", richItems()...)
	e.session(t, "alice", "Plan the Q3 roadmap", turns(4, "roadmap item")...)
	e.session(t, "alice", "Refactor the billing module", turns(6, "billing step")...)
	forkSrc := e.session(t, "alice", "Fork source", turns(6, "fork turn")...)
	bobs := e.session(t, "bob", "Bob's private notes", recall.Message("user", "bob secret 42"))
	alice, alog := e.tab(t, "alice")

	t.Run("SignIn", func(t *testing.T) {
		if got := location(t, alice); got != "/" {
			t.Fatalf("after sign-in at %q, want /", got)
		}
		cookies, err := chromedp.Call(alice, network.GetCookies, network.GetCookiesParams{})
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, c := range cookies.Cookies {
			if c.Name == "recall_session" {
				found = true
				if !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict {
					t.Errorf("session cookie HttpOnly %v SameSite %q, want HttpOnly and Strict", c.HTTPOnly, c.SameSite)
				}
			}
		}
		if !found {
			t.Fatalf("no session cookie: %v", cookies.Cookies)
		}
		// A wrong token stays on the sign-in page with an error.
		other, _ := e.tab(t, "")
		browse(t, other, chromedp.Navigate(e.a.URL+"/s/"+rich),
			chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SetValue(chromedp.CSS("#token"), "rk_not_a_token"),
			chromedp.Click(chromedp.CSS("button.primary")),
			chromedp.WaitVisible(chromedp.CSS(".error")))
		// The right one goes where the browser was going.
		browse(t, other, chromedp.SetValue(chromedp.CSS("#token"), e.tokens["alice"]),
			chromedp.Click(chromedp.CSS("button.primary")),
			chromedp.WaitVisible(chromedp.CSS("#items")))
		if got := location(t, other); got != "/s/"+rich {
			t.Errorf("after sign-in at %q, want /s/%s", got, rich)
		}
		// Sign out: back to the sign-in page, and the pages need it again.
		browse(t, other, chromedp.Click(chromedp.CSS("form[action='/signout'] button")), chromedp.WaitVisible(chromedp.CSS("#token")))
		browse(t, other, chromedp.Navigate(e.a.URL+"/s/"+rich), chromedp.WaitVisible(chromedp.CSS("#token")))
	})

	t.Run("ListFilterSearch", func(t *testing.T) {
		browse(t, alice, chromedp.Navigate(e.a.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#rows")))
		titles := eval[[]string](t, alice, `[...document.querySelectorAll("#rows .row .title")].map(e => e.textContent.trim())`)
		want := []string{"Fork source", "Refactor the billing module", "Plan the Q3 roadmap", "Fix the kubernetes deploy"}
		if strings.Join(titles, "|") != strings.Join(want, "|") {
			t.Errorf("list = %q, want newest first %q", titles, want)
		}
		if html := eval[string](t, alice, `document.body.innerText`); strings.Contains(html, "Bob") || !strings.Contains(html, "roadmap item 1") {
			t.Errorf("list shows another user's session or no first prompt:\n%s", html)
		}
		// "/" focuses the search box; search for a word of one session.
		browse(t, alice, chromedp.KeyEvent("/"))
		if id := eval[string](t, alice, `document.activeElement.id`); id != "q" {
			t.Fatalf("after '/', focus on %q, want the search box", id)
		}
		// (A real keyboard's "/" is not typed once its keydown is taken;
		// CDP sends the character apart, so the box is cleared first.)
		browse(t, alice, chromedp.Evaluate[chromedp.Void](`document.querySelector("#q").value = ""`), chromedp.KeyEvent("CrashLoopBackOff\r"), chromedp.WaitVisible(chromedp.CSS(".row.hit")))
		hits := eval[[]string](t, alice, `[...document.querySelectorAll(".row.hit a")].map(a => a.getAttribute("href"))`)
		if len(hits) == 0 {
			t.Fatal("no hits")
		}
		for _, h := range hits {
			if !strings.HasPrefix(h, "/s/"+rich) {
				t.Errorf("hit %q is not of the session holding the words", h)
			}
		}
		if m := eval[string](t, alice, `document.querySelector(".row.hit mark").textContent`); !strings.EqualFold(m, "CrashLoopBackOff") {
			t.Errorf("marked %q", m)
		}
		// The project filter: an admin picks a user's project; a user sees
		// only their own.
		if n := eval[int](t, alice, `document.querySelectorAll("select[name=project]").length`); n != 0 {
			t.Errorf("a user has a project picker")
		}
		admin, _ := e.tab(t, "root")
		browse(t, admin, chromedp.Navigate(e.a.URL+"/"), chromedp.WaitVisible(chromedp.CSS("select[name=project]")),
			chromedp.SetValue(chromedp.CSS("select[name=project]"), "user.bob"),
			chromedp.Click(chromedp.CSS(".filters button")),
			chromedp.WaitVisible(chromedp.CSS(".row")))
		text := eval[string](t, admin, `document.querySelector("#rows").innerText`)
		if !strings.Contains(text, "Bob's private notes") || strings.Contains(text, "bob secret") {
			t.Errorf("the admin's view of bob's project: %q (want the title, not the items)", text)
		}
		if n := eval[int](t, admin, `document.querySelectorAll("#rows a.row-link").length`); n != 0 {
			t.Errorf("an admin's list links into another user's session")
		}
	})

	t.Run("Keyboard", func(t *testing.T) {
		browse(t, alice, chromedp.Navigate(e.a.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#rows")),
			chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent("k"))
		cur := eval[string](t, alice, `document.querySelector(".row.current .title").textContent.trim()`)
		if cur != "Fork source" {
			t.Errorf("j j k: current row %q, want the first", cur)
		}
		browse(t, alice, chromedp.KeyEvent("j"), chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.CSS("#items")))
		if got := eval[string](t, alice, `document.querySelector("#title").textContent`); got != "Refactor the billing module" {
			t.Errorf("Enter opened %q, want the second row", got)
		}
	})

	t.Run("OpenSession", func(t *testing.T) {
		browse(t, alice, chromedp.Navigate(e.a.URL+"/s/"+rich), chromedp.WaitVisible(chromedp.CSS("#items")))
		checks := map[string]string{
			`document.querySelector("#items > li.item:nth-child(1) .md strong").textContent`:                                                                                                                       "deploy",
			`document.querySelector("#items > li.item:nth-child(1) img.pic").src.slice(0, 22)`:                                                                                                                     "data:image/png;base64,",
			`document.querySelector("#items > li.item:nth-child(2).k-reasoning .md").textContent.trim()`:                                                                                                           "The user wants the failing step; read the logs first.",
			`document.querySelector("#items > li.item:nth-child(3) .label").textContent`:                                                                                                                           "tool call: shell",
			`document.querySelector("#items > li.item:nth-child(3) pre").textContent`:                                                                                                                              "{\n  \"cmd\": \"kubectl get pods -n web\"\n}",
			`String(document.querySelector("#items > li.item:nth-child(4) details.fold").open)`:                                                                                                                    "false",
			`String(document.querySelectorAll("#items > li.item:nth-child(5) pre.chroma span.kd, #items > li.item:nth-child(5) pre.chroma span.kt, #items > li.item:nth-child(5) pre.chroma span.nx").length > 0)`: "true",
			`document.querySelector("#items > li.item:nth-child(5) table td strong").textContent`:                                                                                                                  "missing",
			`getComputedStyle(document.querySelector("#items > li.item:nth-child(5) pre.chroma")).backgroundColor === "rgba(0, 0, 0, 0)" ? "none" : "styled"`:                                                      "styled",
		}
		for js, want := range checks {
			if got := eval[string](t, alice, js); got != want {
				t.Errorf("%s = %q, want %q", js, got, want)
			}
		}
		// A folded output opens.
		browse(t, alice, chromedp.Click(chromedp.CSS("#items > li.item:nth-child(4) details.fold summary")))
		if !eval[bool](t, alice, `document.querySelector("#items > li.item:nth-child(4) details.fold").open`) {
			t.Error("the folded output did not open")
		}
		// Every export format downloads from the page's links.
		for _, f := range []string{"markdown", "html", "json", "jsonl"} {
			got := eval[string](t, alice, `fetch(document.querySelector("a[href$='format=`+f+`']").href).then(r => r.status + " " + r.headers.get("Content-Disposition"))`)
			if !strings.HasPrefix(got, "200 attachment") || !strings.Contains(got, rich) {
				t.Errorf("export %s: %s", f, got)
			}
		}
		alog.ranNothing(t)
	})

	t.Run("ScriptOff", func(t *testing.T) {
		off, _ := e.tab(t, "alice")
		browse(t, off, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}), chromedp.Navigate(e.a.URL+"/s/"+rich), chromedp.WaitVisible(chromedp.CSS("#items > li.item:nth-child(6)")))
		text := eval[string](t, off, `document.body.textContent`)
		for _, want := range []string{"Fix the kubernetes deploy", "Thanks, that was it.", "tool call: shell", "Rename", "Fork here"} {
			if !strings.Contains(text, want) {
				t.Errorf("with script off the page lacks %q", want)
			}
		}
	})

	t.Run("ForkAtItem3", func(t *testing.T) {
		browse(t, alice, chromedp.Navigate(e.a.URL+"/s/"+forkSrc), chromedp.WaitVisible(chromedp.CSS("#items > li.item:nth-child(3)")))
		third := eval[string](t, alice, `document.querySelector("#items > li.item:nth-child(3)").id`)
		browse(t, alice, chromedp.Click(chromedp.CSS("#items > li.item:nth-child(3) form.fork button")),
			chromedp.WaitVisible(chromedp.CSS("#forked-from")))
		loc := location(t, alice)
		if !strings.HasPrefix(loc, "/s/conv_") || loc == "/s/"+forkSrc {
			t.Fatalf("after the fork at %q, want the new session", loc)
		}
		if href := eval[string](t, alice, `document.querySelector("#forked-from").getAttribute("href")`); href != "/s/"+forkSrc+"#"+third {
			t.Errorf("forked-from link %q", href)
		}
		items := eval[[]string](t, alice, `[...document.querySelectorAll("#items .item .md")].map(e => e.textContent.trim())`)
		if strings.Join(items, "|") != "fork turn 1|fork turn 2|fork turn 3" {
			t.Errorf("the fork holds %q, want the first three items", items)
		}
	})

	t.Run("Rename", func(t *testing.T) {
		browse(t, alice, chromedp.Navigate(e.a.URL+"/s/"+forkSrc), chromedp.WaitVisible(chromedp.CSS("form.rename input[name=title]")),
			chromedp.SetValue(chromedp.CSS("form.rename input[name=title]"), "Renamed: <b>fork</b> ✓"),
			chromedp.Click(chromedp.CSS("form.rename button")))
		waitJS(t, alice, `document.querySelector("#title") && document.querySelector("#title").textContent === "Renamed: <b>fork</b> ✓"`, 10*time.Second)
		m, err := e.st.Stat(ctx, recall.Key{Project: "user.alice", Session: forkSrc})
		if err != nil || m.Title != "Renamed: <b>fork</b> ✓" {
			t.Errorf("stored title %q, %v", m.Title, err)
		}
	})

	t.Run("PinFirst", func(t *testing.T) {
		browse(t, alice, chromedp.Navigate(e.a.URL+"/s/"+rich), chromedp.WaitVisible(chromedp.CSS("#pin")),
			chromedp.Click(chromedp.CSS("#pin")))
		waitJS(t, alice, `document.querySelector("#pin") && document.querySelector("#pin").textContent === "Unpin"`, 10*time.Second)
		browse(t, alice, chromedp.Navigate(e.a.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#rows")))
		first := eval[string](t, alice, `document.querySelector("#rows .row .title").textContent.trim()`)
		if first != "Fix the kubernetes deploy" || !eval[bool](t, alice, `document.querySelector("#rows .row").classList.contains("pinned")`) {
			t.Errorf("first row %q, want the pinned session", first)
		}
	})

	t.Run("ArchiveToggle", func(t *testing.T) {
		roadmap := e.session(t, "alice", "Archive me", recall.Message("user", "old stuff"))
		browse(t, alice, chromedp.Navigate(e.a.URL+"/s/"+roadmap), chromedp.WaitVisible(chromedp.CSS("#archive")),
			chromedp.Click(chromedp.CSS("#archive")))
		waitJS(t, alice, `document.querySelector("#archive") && document.querySelector("#archive").textContent === "Unarchive"`, 10*time.Second)
		browse(t, alice, chromedp.Navigate(e.a.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#rows")))
		if strings.Contains(eval[string](t, alice, `document.querySelector("#rows").innerText`), "Archive me") {
			t.Error("an archived session is listed without the toggle")
		}
		browse(t, alice, chromedp.Click(chromedp.CSS("input[name=archived]")), chromedp.Click(chromedp.CSS(".filters button")),
			chromedp.WaitVisible(chromedp.CSS(".row.archived")))
		if got := eval[string](t, alice, `document.querySelector("#rows").innerText`); !strings.Contains(got, "Archive me") {
			t.Errorf("the archived toggle does not show it: %q", got)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		doomed := e.session(t, "alice", "Delete me", recall.Message("user", "bye"))
		browse(t, alice, chromedp.Navigate(e.a.URL+"/s/"+doomed), chromedp.WaitVisible(chromedp.CSS("#delete")),
			chromedp.Click(chromedp.CSS("#delete")), chromedp.WaitVisible(chromedp.CSS("#confirm-delete")))
		if _, err := e.st.Stat(ctx, recall.Key{Project: "user.alice", Session: doomed}); err != nil {
			t.Fatalf("deleted before the confirmation: %v", err)
		}
		browse(t, alice, chromedp.Click(chromedp.CSS("#confirm-delete")), chromedp.WaitVisible(chromedp.CSS("#rows")))
		key := recall.Key{Project: "user.alice", Session: doomed}
		if m, err := e.st.Stat(ctx, key); err != nil || m.Trashed.IsZero() {
			t.Errorf("after delete: %+v, %v; want it in the trash", m, err)
		}
		if strings.Contains(eval[string](t, alice, `document.body.innerText`), "Delete me") {
			t.Error("the deleted session is still listed")
		}
		for _, p := range []string{"/s/" + doomed, "/s/" + doomed + "/export?format=jsonl", "/s/" + doomed + "/delete"} {
			if status := eval[int](t, alice, `fetch("`+p+`").then(r => r.status)`); status != http.StatusNotFound {
				t.Errorf("GET %s of a session in the trash: %d, want 404", p, status)
			}
		}

		// The Trash page lists it; Restore brings it back, as it was.
		browse(t, alice, chromedp.Click(chromedp.CSS("#trash-link")), chromedp.WaitVisible(chromedp.CSS("#trash")))
		if !strings.Contains(eval[string](t, alice, `document.querySelector("#trash").innerText`), "Delete me") {
			t.Fatal("the Trash page does not list the deleted session")
		}
		browse(t, alice, chromedp.Click(chromedp.CSS(`#trash li[data-id="`+doomed+`"] button.restore`)), chromedp.WaitVisible(chromedp.CSS("#delete")))
		if got := location(t, alice); got != "/s/"+doomed {
			t.Errorf("after Restore at %q, want the session's page", got)
		}
		if m, err := e.st.Stat(ctx, key); err != nil || !m.Trashed.IsZero() || m.ItemCount != 1 || m.Title != "Delete me" {
			t.Errorf("after Restore: %+v, %v", m, err)
		}
		browse(t, alice, chromedp.Navigate(e.a.URL+"/trash"), chromedp.WaitVisible(chromedp.CSS("#trash-empty")))
	})

	t.Run("DeletePinnedAsks", func(t *testing.T) {
		pinned := e.session(t, "alice", "Pinned keeper", recall.Message("user", "keep"))
		key := recall.Key{Project: "user.alice", Session: pinned}
		if _, err := recall.NewSession(e.st, key).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
			t.Fatal(err)
		}
		browse(t, alice, chromedp.Navigate(e.a.URL+"/s/"+pinned+"/delete"), chromedp.WaitVisible(chromedp.CSS("#force")))
		// Unticked, the form does not go: the browser asks for the box.
		browse(t, alice, chromedp.Click(chromedp.CSS("#confirm-delete")))
		if !eval[bool](t, alice, `!document.querySelector("#force").validity.valid`) || location(t, alice) != "/s/"+pinned+"/delete" {
			t.Fatal("the confirmation of a pinned session went without its box ticked")
		}
		if m, err := e.st.Stat(ctx, key); err != nil || !m.Trashed.IsZero() {
			t.Fatalf("a pinned session went without its confirmation: %+v, %v", m, err)
		}
		browse(t, alice, chromedp.Click(chromedp.CSS("#force")), chromedp.Click(chromedp.CSS("#confirm-delete")), chromedp.WaitVisible(chromedp.CSS("#rows")))
		if m, err := e.st.Stat(ctx, key); err != nil || m.Trashed.IsZero() || !m.Pinned {
			t.Errorf("after the confirmed delete of a pinned session: %+v, %v; want it in the trash, still pinned", m, err)
		}
	})

	t.Run("LiveFromOtherReplica", func(t *testing.T) {
		live := e.session(t, "alice", "Live session", recall.Message("user", "start"))
		browse(t, alice, chromedp.Navigate(e.a.URL+"/s/"+live), chromedp.WaitVisible(chromedp.CSS("#items > li.item")))
		waitJS(t, alice, `!document.querySelector("#live").hidden`, 5*time.Second) // the stream is open
		for i := 1; i <= 3; i++ {
			text := fmt.Sprintf("written through replica B, %d", i)
			body := `{"items":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` + text + `"}]}]}`
			req, _ := http.NewRequest("POST", e.b.URL+"/v1/conversations/"+live+"/items", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+e.tokens["alice"])
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("append through B: %s", res.Status)
			}
			acked := time.Now()
			waitJS(t, alice, `[...document.querySelectorAll("#items .item")].some(e => e.textContent.includes(`+"`"+text+"`"+`))`, time.Second)
			t.Logf("item %d shown %v after the write was acknowledged", i, time.Since(acked).Round(time.Millisecond))
		}
		if got := eval[string](t, alice, `document.querySelector("#count").textContent`); got != "4 items" {
			t.Errorf("count %q, want 4 items", got)
		}
	})

	t.Run("OtherUsersSessionUnreachable", func(t *testing.T) {
		bob, _ := e.tab(t, "bob")
		for _, p := range []string{"/s/" + rich, "/s/" + rich + "/delete", "/s/" + rich + "/export?format=json", "/s/" + rich + "/events"} {
			status := eval[int](t, bob, `fetch("`+p+`").then(r => r.status)`)
			if status != http.StatusNotFound {
				t.Errorf("bob GET %s: %d, want 404", p, status)
			}
		}
		browse(t, bob, chromedp.Navigate(e.a.URL+"/s/"+rich), chromedp.WaitVisible(chromedp.CSS("main h1")))
		if text := eval[string](t, bob, `document.body.innerText`); strings.Contains(text, "kubernetes") || !strings.Contains(text, "404") {
			t.Errorf("bob's view of alice's session: %q", text)
		}
		// A POST with bob's own valid CSRF token changes nothing of alice's.
		browse(t, bob, chromedp.Navigate(e.a.URL+"/s/"+bobs), chromedp.WaitVisible(chromedp.CSS("#items")))
		status := eval[int](t, bob, `fetch("/s/`+rich+`/rename", {method: "POST", body: new URLSearchParams({csrf: document.querySelector("input[name=csrf]").value, title: "pwned"})}).then(r => r.status)`)
		if status != http.StatusNotFound {
			t.Errorf("bob renaming alice's session: %d, want 404", status)
		}
		if m, _ := e.st.Stat(ctx, recall.Key{Project: "user.alice", Session: rich}); m.Title != "Fix the kubernetes deploy" {
			t.Errorf("alice's title is now %q", m.Title)
		}
	})

	t.Run("XSSCorpus", func(t *testing.T) {
		x := newXSSSession(t, e)
		tab, l := e.tab(t, "carol")
		for _, p := range []string{"/", "/s/" + x, "/?q=alert", "/s/" + x + "/delete"} {
			browse(t, tab, chromedp.Navigate(e.a.URL+p), chromedp.WaitVisible(chromedp.CSS("footer")))
			browse(t, tab, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.body.scrollHeight)`))
			settle(t, tab)
			// The hostile markup is text, not markup.
			bad := eval[[]string](t, tab, `[...document.querySelectorAll("*")].flatMap(el => [...el.attributes].filter(a =>
				a.name.startsWith("on") || /^\s*(javascript|vbscript|data:text)/i.test(a.value) && (a.name === "href" || a.name === "src" || a.name === "action")
			).map(a => el.tagName + " " + a.name + "=" + a.value)).concat(
				[...document.querySelectorAll("iframe, object, embed, svg, math, style, base, meta[http-equiv], form:not([action^='/'])")].map(el => el.tagName),
				[...document.scripts].filter(s => !s.src.includes("/static/app.js")).map(s => "SCRIPT " + s.outerHTML))`)
			if len(bad) > 0 {
				t.Errorf("%s has live hostile markup: %q", p, bad)
			}
			if title := eval[string](t, tab, `document.title`); strings.Contains(title, "pwned") {
				t.Errorf("%s: document.title = %q", p, title)
			}
		}
		// Hover and click what the page shows of the corpus.
		browse(t, tab, chromedp.Navigate(e.a.URL+"/s/"+x), chromedp.WaitVisible(chromedp.CSS("#items")))
		_ = eval[bool](t, tab, `[...document.querySelectorAll("#items a, #items img, #items span")].forEach(el => {
			el.dispatchEvent(new MouseEvent("mouseover", {bubbles: true})); el.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true}));
		}) || true`)
		settle(t, tab)
		if got := eval[string](t, tab, `document.querySelector("#title").textContent`); got != xssTitle {
			t.Errorf("the title shows %q, want the literal text %q", got, xssTitle)
		}
		l.ranNothing(t)
	})

	t.Run("InfiniteScroll", func(t *testing.T) {
		long := e.session(t, "carol", "A long session", turns(120, "long turn")...)
		for i := 0; i < 60; i++ {
			e.session(t, "carol", fmt.Sprintf("Bulk session %02d", i), recall.Message("user", "bulk"))
		}
		tab, l := e.tab(t, "carol")
		if n := eval[int](t, tab, `document.querySelectorAll("#rows .row").length`); n < 50 || n > 53 {
			t.Errorf("first list page has %d rows, want about %d", n, 50)
		}
		browse(t, tab, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, document.body.scrollHeight)`))
		waitJS(t, tab, `document.querySelectorAll("#rows .row").length === 62 && !document.querySelector("#more")`, 10*time.Second)
		ids := eval[[]string](t, tab, `[...document.querySelectorAll("#rows .row a")].map(a => a.getAttribute("href"))`)
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Errorf("row %s listed twice", id)
			}
			seen[id] = true
		}
		// A long session opens at its newest page; older ones load on scroll.
		browse(t, tab, chromedp.Navigate(e.a.URL+"/s/"+long), chromedp.WaitVisible(chromedp.CSS("#items > li.item:last-child")))
		if n := eval[int](t, tab, `document.querySelectorAll("#items .item").length`); n != 50 {
			t.Errorf("first page of a 120-item session shows %d items, want 50", n)
		}
		for _, want := range []int{100, 120} {
			browse(t, tab, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
			waitJS(t, tab, fmt.Sprintf(`document.querySelectorAll("#items .item").length === %d`, want), 10*time.Second)
		}
		order := eval[string](t, tab, `[...document.querySelectorAll("#items .item .md")].map(e => e.textContent.trim()).join(",")`)
		var want []string
		for i := 1; i <= 120; i++ {
			want = append(want, fmt.Sprint("long turn ", i))
		}
		if order != strings.Join(want, ",") {
			t.Errorf("items after scrolling up: %s", order)
		}
		l.ranNothing(t)
	})

	t.Run("Screenshots", func(t *testing.T) {
		dir := t.TempDir()
		if os.Getenv("RECALL_UPDATE_SCREENSHOTS") != "" {
			dir = filepath.Join("..", "docs")
		}
		for _, vp := range []struct {
			name   string
			w, h   int64
			mobile bool
		}{{"1280x800", 1280, 800, false}, {"390x844", 390, 844, true}} {
			opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
			if vp.mobile {
				opts = append(opts, chromedp.EmulateMobile)
			}
			for _, pg := range []struct{ name, path, ready string }{
				{"list", "/", "#rows"}, {"session", "/s/" + rich, "#items > li.item:nth-child(6)"},
			} {
				browse(t, alice, chromedp.EmulateViewport(vp.w, vp.h, opts...), chromedp.Navigate(e.a.URL+pg.path),
					chromedp.WaitVisible(chromedp.CSS(pg.ready)), chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
				settle(t, alice)
				if over := eval[int](t, alice, `document.documentElement.scrollWidth`); over > int(vp.w) {
					t.Errorf("%s at %s is %dpx wide: it scrolls sideways", pg.name, vp.name, over)
				}
				c, cancel := context.WithTimeout(alice, 30*time.Second)
				png, err := chromedp.Run(c, chromedp.CaptureScreenshot())
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				name := filepath.Join(dir, "web-"+pg.name+"-"+vp.name+".png")
				if err := os.WriteFile(name, png, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("wrote %s", name)
			}
		}
		browse(t, alice, chromedp.EmulateReset())
	})

	// A share link opens without signing in, on either replica; the hostile
	// corpus in it is text and runs nothing; revoked, it is a 404 on both.
	t.Run("ShareLink", func(t *testing.T) {
		x := newXSSSession(t, e)
		token, sh, err := server.CreateShare(ctx, e.st, "carol", recall.Key{Project: "user.carol", Session: x}, server.ShareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tab, l := e.tab(t, "")
		for _, base := range []string{e.a.URL, e.b.URL} {
			browse(t, tab, chromedp.Navigate(base+"/share/"+token), chromedp.WaitVisible(chromedp.CSS("body")))
			settle(t, tab)
			if text := eval[string](t, tab, `document.body.innerText`); !strings.Contains(text, `<script>alert("msg")</script>`) {
				t.Errorf("%s: the shared page does not show the session's text:\n%s", base, text)
			}
			if n := eval[int](t, tab, `document.scripts.length + document.querySelectorAll("iframe, object, embed, [onerror], [onload]").length`); n != 0 {
				t.Errorf("%s: the shared page holds %d scripts or live handlers", base, n)
			}
			if title := eval[string](t, tab, `document.title`); strings.Contains(title, "pwned") {
				t.Errorf("%s: document.title = %q", base, title)
			}
		}
		l.ranNothing(t)

		// The viewer's Share button makes one, shown once on the page.
		owner, _ := e.tab(t, "carol")
		browse(t, owner, chromedp.Navigate(e.a.URL+"/s/"+x), chromedp.WaitVisible(chromedp.CSS("#share")), chromedp.Click(chromedp.CSS("#share")),
			chromedp.WaitVisible(chromedp.CSS("#share-link")))
		link := eval[string](t, owner, `document.querySelector("#share-link").value`)
		if !strings.HasPrefix(link, e.a.URL+"/share/"+server.SharePrefix) {
			t.Fatalf("the Share button's link: %q", link)
		}
		browse(t, tab, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("body")))
		if text := eval[string](t, tab, `document.body.innerText`); !strings.Contains(text, `<script>alert("msg")</script>`) {
			t.Errorf("the link the Share button made does not show the session:\n%s", text)
		}
		if _, err := server.RevokeShare(ctx, e.st, "carol", sh.ID); err != nil {
			t.Fatal(err)
		}
		for _, base := range []string{e.a.URL, e.b.URL} {
			res, err := http.Get(base + "/share/" + token)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusNotFound {
				t.Errorf("%s: a revoked link answers %d, want 404", base, res.StatusCode)
			}
		}
	})
}

// xssTitle is the hostile title of the XSS corpus' session.
const xssTitle = `<script>alert("title")</script><img src=x onerror=alert(1)>`

// newXSSSession writes carol a session whose every field is hostile.
func newXSSSession(t *testing.T, e *webEnv) string {
	t.Helper()
	svg := "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIG9ubG9hZD0iYWxlcnQoMSkiLz4="
	corpus := []string{
		`<script>alert("msg")</script>`,
		`<img src=x onerror="alert('img')">`,
		`[click me](javascript:alert('link'))`,
		`<a href="javascript:alert('a')">raw link</a>`,
		`<svg onload=alert('svg')><circle r=5 /></svg>`,
		`<style>body{background:url("javascript:alert('css')")} *{display:none}</style>`,
		`<div style="background:url(javascript:alert('style'))">styled</div>`,
		`<iframe src="javascript:alert('frame')"></iframe>`,
		`"><script>document.title="pwned"</script>`,
		"```html\n</code></pre><script>alert('fence')</script>\n```",
		`![img](javascript:alert('mdimg'))`,
		`<math><mtext><table><mglyph><style><img src=x onerror=alert('math')>`,
		`<base href="javascript:alert('base')//">`,
		`<meta http-equiv="refresh" content="0;url=javascript:alert('meta')">`,
		`<form action="javascript:alert('form')"><button>go</button></form>`,
	}
	var items []recall.Item
	for i, c := range corpus {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		items = append(items, recall.Message(role, c))
	}
	items = append(items,
		recall.Item(`{"type":"function_call","name":"<img src=x onerror=alert('name')>","call_id":"x1","arguments":"{\"q\":\"</pre><script>alert('args')</script>\"}"}`),
		recall.Item(`{"type":"function_call_output","call_id":"x1","output":"</pre><script>alert('out')</script><svg onload=alert('out2')>"}`),
		recall.Item(`{"type":"reasoning","summary":[{"type":"summary_text","text":"<script>alert('reason')</script>"}]}`),
		recall.Item(`{"type":"message","role":"user","content":[{"type":"input_image","image_url":"`+svg+`"},{"type":"input_image","image_url":"javascript:alert('imgurl')"},{"type":"input_image","image_url":"https://evil.example/track.png"}]}`),
		recall.Item(`{"type":"<script>alert('type')</script>","payload":"<img src=x onerror=alert('other')>"}`),
	)
	id := e.session(t, "carol", xssTitle, items...)
	key := recall.Key{Project: "user.carol", Session: id}
	ctx := context.Background()
	if _, err := recall.NewSession(e.st, key).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"<script>alert('mdkey')</script>": new(`<img src=x onerror=alert('mdval')>`), "url": new("javascript:alert('mdurl')")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(e.st, key).ChangeMeta(ctx, recall.MetaChange{Labels: []string{`<svg onload=alert('label')>`, `" onmouseover="alert('attr')`}, SetLabels: true}); err != nil {
		t.Fatal(err)
	}
	return id
}
