package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
)

// TestSearchCommand drives recall search on the file store and SQLite:
// hits of this project or every one, roles, phrases, CJK, --json, the
// plain (not a terminal) text output, and bad usage.
func TestSearchCommand(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"file", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if backend == "sqlite" {
				e.store = "sqlite://" + filepath.Join(t.TempDir(), "recall.db")
			}
			e.ok("", "chat", "-p", "Why does the Tokenizer split emoji?", "--name", "Tokenizer bug")
			e.ok("", "chat", "-p", "我叫张三，住在北京")
			other := t.TempDir()
			if r := e.runIn(other, "", "chat", "-p", "tokenizer in another project"); r.code != 0 {
				t.Fatalf("chat in another project: %s", r.stderr)
			}

			r := e.ok("", "search", "tokenizer")
			lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
			// The title hit and the user message of this project, and the
			// offline model's echo of it; not the other project.
			if strings.Contains(r.stdout, "another project") || !strings.Contains(r.stdout, "Tokenizer bug") ||
				!strings.Contains(r.stdout, "    Why does the Tokenizer split emoji?") || strings.Contains(r.stdout, "\x1b[") {
				t.Fatalf("recall search tokenizer:\n%s", r.stdout)
			}
			if len(lines)%2 != 0 {
				t.Fatalf("hits are two lines each:\n%s", r.stdout)
			}

			page := searchJSON(t, e, "tokenizer", "--all")
			var roles, projects []string
			for _, h := range page.Hits {
				roles = append(roles, h.Role)
				projects = append(projects, h.Key.Project)
				if len(h.Matches) == 0 || !strings.EqualFold(h.Snippet[h.Matches[0].Start:h.Matches[0].End], "tokenizer") {
					t.Errorf("hit %+v: the match is not marked", h)
				}
			}
			if !strings.Contains(strings.Join(roles, " "), "title") || !strings.Contains(strings.Join(roles, " "), "user") {
				t.Errorf("roles of the hits: %v", roles)
			}
			if p, _ := recall.ProjectKey(other); !strings.Contains(strings.Join(projects, " "), p) {
				t.Errorf("--all found no hit in the other project: %v", projects)
			}
			if page := searchJSON(t, e, "tokenizer", "--role", "user"); len(page.Hits) != 1 || page.Hits[0].Role != "user" {
				t.Errorf("--role user: %+v", page.Hits)
			}
			if page := searchJSON(t, e, "张三"); len(page.Hits) == 0 || !strings.Contains(page.Hits[0].Snippet, "我叫张三") {
				t.Errorf("张三: %+v", page.Hits)
			}
			if page := searchJSON(t, e, `"split emoji" why`, "--since", "1h"); len(page.Hits) != 2 { // the message and its echo
				t.Errorf("phrase: %+v", page.Hits)
			}
			if page := searchJSON(t, e, `"emoji split"`); len(page.Hits) != 0 {
				t.Errorf("phrase in the wrong order: %+v", page.Hits)
			}
			if page := searchJSON(t, e, "tokenizer", "--limit", "1"); len(page.Hits) != 1 || page.Next == "" {
				t.Errorf("--limit 1: %+v", page)
			} else if next := searchJSON(t, e, "tokenizer", "--limit", "1", "--cursor", page.Next); len(next.Hits) != 1 ||
				search.Compare(page.Hits[0], next.Hits[0]) >= 0 {
				t.Errorf("--cursor: %+v after %+v", next.Hits, page.Hits)
			}
			if r := e.ok("", "search", "nowhere-to-be-found"); r.stdout != "" || !strings.Contains(r.stderr, "no hits") {
				t.Errorf("no hits: stdout %q stderr %q", r.stdout, r.stderr)
			}

			e.fails(2, "unterminated quote", "search", `"open`)
			e.fails(2, "unknown role", "search", "x", "--role", "robot")
			e.fails(2, "bad age", "search", "x", "--since", "yesterday")
			e.fails(2, "--limit", "search", "x", "--limit", "0")
			e.fails(2, "requires at least 1 arg", "search")
			e.fails(2, "--interactive needs a terminal", "search", "x", "-i")
			e.fails(2, "bad search cursor", "search", "x", "--cursor", "nope")
		})
	}
}

func searchJSON(t *testing.T, e *env, args ...string) recall.SearchPage {
	t.Helper()
	r := e.ok("", append([]string{"search", "--json"}, args...)...)
	var page recall.SearchPage
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		t.Fatalf("recall search --json %q: %v\n%s", args, err, r.stdout)
	}
	return page
}
