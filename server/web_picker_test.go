package server

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

var optionRE = regexp.MustCompile(`<option value="([^"]+)"( selected)?>`)

// TestWebAdminProjectPicker: an admin's project picker offers every
// user's project that holds sessions, with its count, and shows selected
// the project the page lists: none (all of the admin's own projects) by
// default, the one picked after a pick.
func TestWebAdminProjectPicker(t *testing.T) {
	for _, users := range [][]string{{"alice"}, {"alice", "bob"}} {
		t.Run(strings.Join(users, "+"), func(t *testing.T) {
			st := memstore.New(memstore.Options{})
			t.Cleanup(func() { st.Close() })
			e := newEnv(t, st, Options{}, nil)
			var want []string
			for _, u := range users {
				key := recall.Key{Project: User{Name: u}.Project(), Session: "conv_" + u}
				if _, err := recall.NewSession(st, key).Create(context.Background(), recall.CreateOptions{Title: u + "'s notes",
					Items: []recall.Item{recall.Message("user", "hi")}}); err != nil {
					t.Fatal(err)
				}
				want = append(want, key.Project)
			}
			slices.Sort(want)
			page := func(query string) (options []string, selected, body string) {
				t.Helper()
				r := e.do("GET", "/"+query, "", nil, "Cookie", sessionCookie+"="+e.tokens["root"]).want(t, 200)
				for _, m := range optionRE.FindAllStringSubmatch(string(r.body), -1) {
					options = append(options, m[1])
					if m[2] != "" {
						selected += m[1]
					}
				}
				return options, selected, string(r.body)
			}

			options, selected, body := page("")
			if !slices.Equal(options, want) || selected != "" {
				t.Errorf("the admin's first page: options %q, selected %q; want %q, none", options, selected, want)
			}
			if !strings.Contains(body, "No sessions yet.") || strings.Contains(body, "alice&#39;s notes") {
				t.Errorf("the admin's first page does not list the admin's own projects, which are empty")
			}
			if !strings.Contains(body, "alice (1)</option>") {
				t.Errorf("the picker shows no count of alice's sessions")
			}
			options, selected, body = page("?project=user.alice")
			if !slices.Equal(options, want) || selected != "user.alice" {
				t.Errorf("alice picked: options %q, selected %q; want %q, user.alice", options, selected, want)
			}
			if !strings.Contains(body, "alice&#39;s notes") || strings.Contains(body, "No sessions yet.") {
				t.Errorf("alice picked: the page does not list alice's sessions")
			}
			// A project that is not a user's falls back to the admin's own.
			if _, selected, body = page("?project=_server.tokens"); selected != "" || !strings.Contains(body, "No sessions yet.") {
				t.Errorf("a project of the server's: selected %q, want none (the admin's own, empty)", selected)
			}
		})
	}
}
