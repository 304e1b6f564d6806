package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestAPISearch checks GET /api/v1/search and GET /api/v1/sessions?q=
// on a store that scans (memstore) and one with its own index (the file
// store): hits are the user's own only, CJK terms are found, filters and
// paging work, and bad parameters are 400s.
func TestAPISearch(t *testing.T) {
	for name, open := range envStores() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, open(t), Options{RateLimit: -1}, nil)
			tok := e.newConv("alice", msg("user", "we fixed the tokenizer today"), msg("assistant", "the tokenizer handles CJK now"))
			cjk := e.newConv("alice", msg("user", "我叫张三，住在北京"))
			other := e.newConv("alice", msg("user", "nothing to see"))
			bobs := e.newConv("bob", msg("user", "bob's tokenizer notes"))

			type hitList struct {
				Data []struct {
					SessionID string `json:"session_id"`
					Seq       int64  `json:"seq"`
					Role      string `json:"role"`
					Snippet   string `json:"snippet"`
					Matches   []struct{ Start, End int }
				} `json:"data"`
				NextCursor string `json:"next_cursor"`
				HasMore    bool   `json:"has_more"`
			}
			var hl hitList
			e.do("GET", "/api/v1/search?q=tokenizer", "alice", nil).want(t, http.StatusOK).decode(t, &hl)
			if len(hl.Data) != 2 || hl.HasMore {
				t.Fatalf("alice's hits for tokenizer: %+v", hl)
			}
			for _, h := range hl.Data {
				if h.SessionID != tok {
					t.Fatalf("a hit outside alice's tokenizer session: %+v", h)
				}
				if len(h.Matches) == 0 || !strings.EqualFold(h.Snippet[h.Matches[0].Start:h.Matches[0].End], "tokenizer") {
					t.Fatalf("hit %+v does not mark the match", h)
				}
			}
			if hl.Data[0].Seq <= hl.Data[1].Seq {
				t.Fatalf("hits not newest first: %+v", hl.Data)
			}
			e.do("GET", "/api/v1/search?q="+url.QueryEscape("张三"), "alice", nil).want(t, http.StatusOK).decode(t, &hl)
			if len(hl.Data) != 1 || hl.Data[0].SessionID != cjk {
				t.Fatalf("CJK search: %+v", hl)
			}
			e.do("GET", "/api/v1/search?q=tokenizer&role=assistant", "alice", nil).want(t, http.StatusOK).decode(t, &hl)
			if len(hl.Data) != 1 || hl.Data[0].Role != "assistant" {
				t.Fatalf("role filter: %+v", hl)
			}
			// Paging: one hit a page, each once.
			var seqs []int64
			cursor := ""
			for range 5 {
				e.do("GET", "/api/v1/search?q=tokenizer&limit=1&cursor="+url.QueryEscape(cursor), "alice", nil).want(t, http.StatusOK).decode(t, &hl)
				for _, h := range hl.Data {
					seqs = append(seqs, h.Seq)
				}
				if !hl.HasMore {
					break
				}
				cursor = hl.NextCursor
			}
			if len(seqs) != 2 || seqs[0] == seqs[1] {
				t.Fatalf("paged hits: %v", seqs)
			}
			// bob finds only his own.
			e.do("GET", "/api/v1/search?q=tokenizer", "bob", nil).want(t, http.StatusOK).decode(t, &hl)
			if len(hl.Data) != 1 || hl.Data[0].SessionID != bobs {
				t.Fatalf("bob's hits: %+v", hl)
			}

			// Sessions with a hit, each once.
			var l sessionList
			e.do("GET", "/api/v1/sessions?q=tokenizer", "alice", nil).want(t, http.StatusOK).decode(t, &l)
			if !slices.Equal(ids(l.Data), []string{tok}) || l.HasMore {
				t.Fatalf("sessions?q=tokenizer: %v (more %v)", ids(l.Data), l.HasMore)
			}
			e.do("GET", "/api/v1/sessions?q="+url.QueryEscape("住在"), "alice", nil).want(t, http.StatusOK).decode(t, &l)
			if !slices.Equal(ids(l.Data), []string{cjk}) {
				t.Fatalf("sessions?q=住在: %v", ids(l.Data))
			}
			e.do("GET", "/api/v1/sessions?q=o&limit=1", "alice", nil).want(t, http.StatusOK).decode(t, &l)
			if len(l.Data) != 1 || !l.HasMore {
				t.Fatalf("sessions?q=o&limit=1: %v (more %v)", ids(l.Data), l.HasMore)
			}
			seen := ids(l.Data)
			for l.HasMore {
				e.do("GET", "/api/v1/sessions?q=o&limit=1&cursor="+url.QueryEscape(l.NextCursor), "alice", nil).want(t, http.StatusOK).decode(t, &l)
				for _, id := range ids(l.Data) {
					if !slices.Contains(seen, id) {
						seen = append(seen, id)
					}
				}
			}
			slices.Sort(seen)
			want := []string{tok, other}
			slices.Sort(want)
			if !slices.Equal(seen, want) {
				t.Fatalf("sessions?q=o paged: %v, want %v", seen, want)
			}

			for _, bad := range []string{"q=", "q=%22open", "q=x&role=robot", "q=x&since=yesterday", "q=x&cursor=garbage", "q=x&limit=0", "q=x&archived=maybe",
				"q=x&since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z"} {
				e.do("GET", "/api/v1/search?"+bad, "alice", nil).wantError(t, http.StatusBadRequest)
			}
			e.do("GET", "/api/v1/sessions?q=x&all=true", "root", nil).wantError(t, http.StatusBadRequest)
			e.do("GET", "/api/v1/search?q=x", "", nil).wantError(t, http.StatusUnauthorized)
		})
	}
}

// TestAPIExportReadable checks the Markdown and HTML exports of a session.
func TestAPIExportReadable(t *testing.T) {
	e := newEnv(t, envStores()["memstore"](t), Options{RateLimit: -1}, nil)
	id := e.newConv("alice", msg("user", "<script>alert(1)</script> hello"), msg("assistant", "hi **there**"))
	p := "/api/v1/sessions/" + id + "/export?format="
	r := e.do("GET", p+"markdown", "alice", nil).want(t, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/markdown") || !strings.Contains(string(r.body), "hi **there**") {
		t.Fatalf("markdown: %s\n%s", ct, r.body)
	}
	r = e.do("GET", p+"html", "alice", nil).want(t, http.StatusOK)
	body := string(r.body)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") || r.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("html headers: %v", r.Header)
	}
	if strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("html does not escape the message:\n%s", body)
	}
	e.do("GET", p+"markdown", "bob", nil).wantError(t, http.StatusNotFound)
}
