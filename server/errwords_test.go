package server

import (
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
)

// backendWords are what a store or a package of the module says of
// itself in its errors; none of it may reach a client.
var backendWords = []string{"filestore", "memstore", "sqlstore", "redisstore", "recall: ", "export: ",
	"user.alice", "user.root", "invalid key", ".jsonl"}

// webMessage is the message of an error page, or the inline error of
// the list.
var webMessage = regexp.MustCompile(`(?s)<section class="panel narrow">\s*<h1>[^<]*</h1>\s*<p>([^<]*)</p>|<p class="error" role="alert">([^<]*)</p>`)

// TestErrorsInAPIWords: every route that takes a cursor (the session
// list, for a user, an admin's ?user= and ?all=, its search; the search;
// subagents; entries' after; the Conversations API's items after; the
// viewer's list and search) refuses one the server did not give with a
// 400 in the API's own words, and no refusal of a request, whether the
// server's or a store's, carries a store's or a package's text.
func TestErrorsInAPIWords(t *testing.T) {
	for name, open := range envStores() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, open(t), Options{}, nil)
			id := e.newConv("alice", msg("user", "hello there"))
			conv := "/v1/conversations/" + id
			sess := "/api/v1/sessions/" + id
			for _, c := range []struct {
				method, path, user, body string
				status                   int
				param                    string // "" for none
				msg                      string // held by the message
			}{
				{"GET", "/api/v1/sessions?cursor=bogus", "alice", "", 400, "cursor", "Invalid 'cursor': not one this server gave."},
				{"GET", "/api/v1/sessions?cursor=bogus&archived=true", "alice", "", 400, "cursor", "Invalid 'cursor'"},
				{"GET", "/api/v1/sessions?user=bob&cursor=bogus", "root", "", 400, "cursor", "Invalid 'cursor'"},
				{"GET", "/api/v1/sessions?all=true&cursor=bogus", "root", "", 400, "cursor", "Invalid 'cursor'"},
				{"GET", "/api/v1/sessions?q=hello&cursor=bogus", "alice", "", 400, "cursor", "Invalid 'cursor'"},
				{"GET", "/api/v1/search?q=hello&cursor=bogus", "alice", "", 400, "cursor", "Invalid 'cursor'"},
				{"GET", "/api/v1/search?q=%22hello", "alice", "", 400, "q", "Invalid search: unterminated quote"},
				{"GET", sess + "/subagents?cursor=bogus", "alice", "", 400, "cursor", "Invalid 'cursor'"},
				{"GET", sess + "/entries?after=bogus", "alice", "", 400, "after", "Invalid 'after'"},
				{"GET", sess + "/entries?after=-1", "alice", "", 400, "after", "Invalid 'after'"},
				{"GET", conv + "/items?after=bogus", "alice", "", 400, "after", "Invalid 'after': no item with id 'bogus'"},
				{"GET", conv + "/items?after=recall-1.x", "alice", "", 400, "after", "Invalid 'after'"},
				{"POST", conv + "/items", "alice", `{"items":[{"role":"user","content":"x"}, 3]}`, 400, "items[1]", "Invalid 'items[1]': not a JSON object."},
				{"POST", conv + "/items", "alice", `{"items":[{"role":"user","content":"x}]}`, 400, "", "We could not parse the JSON body"},
				{"POST", "/v1/conversations", "alice", `{"metadata":{"` + strings.Repeat("k", 100) + `":"x"}}`, 400, "metadata", "Invalid 'metadata': key"},
				{"POST", conv, "alice", `{"metadata":{"k":"` + strings.Repeat("v", 1000) + `"}}`, 400, "metadata", "Invalid 'metadata': value of"},
			} {
				var body any
				if c.body != "" {
					body = c.body
				}
				r := e.do(c.method, c.path, c.user, body)
				ae := r.wantError(t, c.status)
				if p, _ := ae.Error.Param.(string); p != c.param {
					t.Errorf("%s %s: param %v, want %q", c.method, c.path, ae.Error.Param, c.param)
				}
				if !strings.Contains(ae.Error.Message, c.msg) {
					t.Errorf("%s %s: message %q does not hold %q", c.method, c.path, ae.Error.Message, c.msg)
				}
				noBackendWords(t, c.method+" "+c.path, string(r.body))
			}

			// The viewer: its list's and its search's cursor, refused in
			// the list page (as a bad query is) or on an error page.
			cookie := func(user string) []string { return []string{"Cookie", sessionCookie + "=" + e.tokens[user]} }
			for _, c := range []struct {
				path, user string
				status     int
				msg        string
			}{
				{"/?cursor=bogus", "alice", 200, "Invalid 'cursor': not one this server gave."},
				{"/?cursor=bogus&project=user.bob", "root", 200, "Invalid 'cursor'"},
				{"/?archived=1&cursor=bogus", "alice", 200, "Invalid 'cursor'"},
				{"/?q=hello&cursor=bogus", "alice", 200, "Invalid 'cursor': not one this server gave."},
				{"/?q=%22hello", "alice", 200, "Invalid search: unterminated quote"},
				{"/s/" + id + "/export?format=bogus", "alice", 400, "Unknown export format"},
			} {
				r := e.do("GET", c.path, "", nil, cookie(c.user)...)
				if r.StatusCode != c.status {
					t.Errorf("GET %s: status %d, want %d", c.path, r.StatusCode, c.status)
				}
				m := webMessage.FindStringSubmatch(string(r.body))
				if m == nil {
					t.Errorf("GET %s: no error message: %.2000s", c.path, r.body)
					continue
				}
				if text := html.UnescapeString(m[1] + m[2]); !strings.Contains(text, c.msg) {
					t.Errorf("GET %s: message %q, want one holding %q", c.path, text, c.msg)
				}
				noBackendWords(t, "GET "+c.path, m[0]) // the page names the project listed, in a form
			}
		})
	}

	// A refusal of the store's own (its item limit is lower than the
	// server's) is worded by the server too, with the limit.
	st, err := filestore.Open(filestore.Options{Dir: t.TempDir(), Sync: filestore.SyncNever, MaxItemSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newEnv(t, st, Options{}, nil)
	id := e.newConv("alice", msg("user", "hello"))
	r := e.do("POST", "/v1/conversations/"+id+"/items", "alice", `{"items":[`+msg("user", strings.Repeat("x", 2000))+`]}`)
	ae := r.wantError(t, http.StatusRequestEntityTooLarge)
	if want := "An item is larger than the store accepts: 2028 bytes, limit 1024."; ae.Error.Message != want {
		t.Errorf("an item over the store's limit: %q, want %q", ae.Error.Message, want)
	}
	noBackendWords(t, "an item over the store's limit", string(r.body))
	if its, _, _ := st.Items(t.Context(), recall.Key{Project: User{Name: "alice"}.Project(), Session: id}, 0); len(its) != 1 {
		t.Errorf("after the refusal: %d items, want 1", len(its))
	}
}

// noBackendWords fails the test when body holds a store's or a
// package's own text.
func noBackendWords(t *testing.T, what, body string) {
	t.Helper()
	for _, w := range backendWords {
		if strings.Contains(html.UnescapeString(body), w) {
			t.Errorf("%s: the answer holds %q: %.400s", what, w, body)
		}
	}
}
