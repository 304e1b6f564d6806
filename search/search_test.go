package search_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/search"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"hello", []string{"hello"}},
		{"  Hello   WORLD ", []string{"hello", "world"}},
		{`"quick  brown" fox`, []string{"quick brown", "fox"}},
		{`fox"quick brown"`, []string{"fox", "quick brown"}},
		{`"  spaced\n phrase "`, []string{`spaced\n phrase`}},
		{"我叫张三", []string{"我叫张三"}},
		{"ÄPFEL", []string{"äpfel"}},
		{`"" word`, []string{"word"}},
	} {
		q, err := search.Parse(c.in)
		if err != nil || !slices.Equal(q.Terms, c.want) {
			t.Errorf("Parse(%q) = %q, %v; want %q", c.in, q.Terms, err, c.want)
		}
	}
	for _, bad := range []string{"", "   ", `""`, `"open`, `word "open`} {
		if _, err := search.Parse(bad); !errors.Is(err, recall.ErrInvalidQuery) {
			t.Errorf("Parse(%q): %v, want ErrInvalidQuery", bad, err)
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"  Hello\n\n\tWorld  ": "hello world",
		"ÄÖÜ Straße":           "äöü straße",
		"\u212Aelvin":          "kelvin", // the Kelvin sign folds to an ASCII k
		"a\xffb":               "a\uFFFDb",
		"张三\u3000李四":           "张三 李四", // the ideographic space is white space
		"":                     "",
	} {
		if got := search.Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct {
		item, role, text string
	}{
		{`{"type":"message","role":"user","content":"hi there"}`, "user", "hi there"},
		{`{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"data:x"},{"type":"input_text","text":"b"}]}`, "user", "a\nb"},
		{`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"yes"},{"type":"refusal","refusal":"no"}]}`, "assistant", "yes\nno"},
		{`{"type":"message","role":"developer","content":"rules"}`, "system", "rules"},
		{`{"type":"message","role":"critic","content":"odd"}`, "assistant", "odd"},
		{`{"type":"function_call","name":"grep","arguments":"{\"q\":1}","call_id":"c"}`, "tool", "grep\n{\"q\":1}"},
		{`{"type":"custom_tool_call","name":"patch","input":"*** Begin"}`, "tool", "patch\n*** Begin"},
		{`{"type":"function_call_output","call_id":"c","output":"done"}`, "tool", "done"},
		{`{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"part"}]}`, "tool", "part"},
		{`{"type":"reasoning","summary":[{"type":"summary_text","text":"plan"}],"encrypted_content":"zzz"}`, "assistant", "plan"},
		{`{"type":"reasoning","encrypted_content":"zzz"}`, "assistant", ""},
		{`{"type":"unknown_thing","text":"x"}`, "", ""},
		{`[1,2]`, "", ""},
	} {
		role, text := search.Text(recall.Item(c.item))
		if role != c.role || text != c.text {
			t.Errorf("Text(%s) = %q, %q; want %q, %q", c.item, role, text, c.role, c.text)
		}
	}
}

func TestSnippet(t *testing.T) {
	q := func(s string) search.Query {
		t.Helper()
		q, err := search.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	marked := func(s string, spans []recall.Span) string {
		var b strings.Builder
		end := 0
		for _, sp := range spans {
			b.WriteString(s[end:sp.Start] + "[" + s[sp.Start:sp.End] + "]")
			end = sp.End
		}
		return b.String() + s[end:]
	}
	long := strings.Repeat("lorem ipsum ", 30)
	for _, c := range []struct {
		text, query, want string
	}{
		{"Fix the Tokenizer\nplease", "tokenizer", "Fix the [Tokenizer] please"},
		{"token tokenizer TOKEN", "token", "[token] [token]izer [TOKEN]"},
		{"quick brown fox", `"brown fox" quick`, "[quick] [brown fox]"},
		{"我叫张三，住在北京", "张三 北京", "我叫[张三]，住在[北京]"},
		{"\u212Aelvin scale", "kelvin", "[\u212Aelvin] scale"},
		{"no match here", "absent", "no match here"},
		{long + "needle" + long, "needle", "…lorem ipsum lorem ipsum lorem ipsum lorem ipsum [needle]lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem…"},
		{"needle " + long, "needle", "[needle] lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem…"},
	} {
		s, spans := search.Snippet(c.text, q(c.query))
		if got := marked(s, spans); got != c.want {
			t.Errorf("Snippet(%.30q, %q) =\n %q\nwant\n %q", c.text, c.query, got, c.want)
		}
	}
	// CJK cut on rune boundaries, the match whole.
	cjk := strings.Repeat("我叫张三住在北京", 40)
	s, spans := search.Snippet(cjk+"目标"+cjk, q("目标"))
	if !utf8.ValidString(s) || len(spans) != 1 || s[spans[0].Start:spans[0].End] != "目标" || len(s) > search.SnippetBytes+2*len("…") {
		t.Errorf("CJK snippet %q, spans %v", s, spans)
	}
}

// FuzzSnippet checks Snippet's promises on any text: its folding
// is Normalize's, the snippet is one line of valid UTF-8 of bounded
// length, and every span is in range, in order and matches a term.
func FuzzSnippet(f *testing.F) {
	f.Add("Hello World\nhello again", "hello")
	f.Add("我叫张三，住在北京", "张三")
	f.Add("\u212A\u0130\xff ab  c", "k")
	f.Add(strings.Repeat("ab ", 100)+"ΣΑΣ", `"ab ab" σας`)
	f.Fuzz(func(t *testing.T, text, query string) {
		q, err := search.Parse(query)
		if err != nil {
			return
		}
		s, spans := search.Snippet(text, q)
		if !utf8.ValidString(s) || strings.ContainsAny(s, "\n\r") {
			t.Fatalf("snippet %q is not one valid line", s)
		}
		if long := len(q.Terms[0]) + 2*search.SnippetBytes + 2*len("…"); len(s) > long {
			t.Fatalf("snippet of %d bytes", len(s))
		}
		norm := search.Normalize(text)
		if q.Match(norm) && len(spans) == 0 && norm != "" {
			t.Fatalf("no span in %q for %q matching %q", s, q.Terms, norm)
		}
		end := 0
		for _, sp := range spans {
			if sp.Start < end || sp.End <= sp.Start || sp.End > len(s) {
				t.Fatalf("span %v of %q out of order or range", sp, s)
			}
			end = sp.End
			part := search.Normalize(s[sp.Start:sp.End])
			if !slices.ContainsFunc(q.Terms, func(t string) bool { return strings.Contains(t, part) || strings.Contains(part, t) }) {
				t.Fatalf("span %q of %q matches no term of %q", s[sp.Start:sp.End], s, q.Terms)
			}
		}
	})
}

func TestCompareAndCursor(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	k1, k2 := recall.Key{Project: "a", Session: "x"}, recall.Key{Project: "a", Session: "y"}
	ordered := []recall.Hit{
		{Key: k1, Time: t0.Add(time.Second), Ref: recall.ItemRef{Seq: 1}},
		{Key: k2, Time: t0, Ref: recall.ItemRef{Seq: 1}},
		{Key: k1, Time: t0, Ref: recall.ItemRef{Seq: 5, Index: 1}},
		{Key: k1, Time: t0, Ref: recall.ItemRef{Seq: 5}},
		{Key: k1, Time: t0, Ref: recall.ItemRef{Seq: 4}},
		{Key: k1, Time: t0, Role: recall.RoleTitle},
	}
	for i := range ordered {
		for j := range ordered {
			got := search.Compare(ordered[i], ordered[j])
			if want := i - j; got < 0 != (want < 0) || got == 0 != (want == 0) {
				t.Errorf("Compare(#%d, #%d) = %d", i, j, got)
			}
		}
		c, err := search.ParseCursor(search.CursorAt(ordered[i]).String())
		if err != nil {
			t.Fatal(err)
		}
		for j := range ordered {
			if c.After(ordered[j]) != (j > i) {
				t.Errorf("cursor at #%d: After(#%d) = %v", i, j, c.After(ordered[j]))
			}
		}
	}
	for _, bad := range []string{"x", "!!", "bnVsbA"} {
		if _, err := search.ParseCursor(bad); !errors.Is(err, recall.ErrInvalidQuery) && bad != "bnVsbA" {
			t.Errorf("ParseCursor(%q): %v", bad, err)
		}
	}
}

// loadCounter counts the sessions a search loads.
type loadCounter struct {
	recall.Store
	loads int
}

func (l *loadCounter) Load(ctx context.Context, k recall.Key) (recall.Meta, []recall.Entry, error) {
	l.loads++
	return l.Store.Load(ctx, k)
}

// TestScanStopsEarly checks that the scan reads no more sessions
// than a page needs when the newest sessions fill it, and still returns
// every hit through the pages.
func TestScanStopsEarly(t *testing.T) {
	ctx := context.Background()
	s := &loadCounter{Store: memstore.New(memstore.Options{})}
	defer s.Close()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 50 {
		// each session a millisecond newer than the one before
		e := recall.Message("user", "common word").Entry()
		e.Seq, e.Time = 1, base.Add(time.Duration(i)*time.Millisecond)
		if _, err := s.Import(ctx, recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", i)}, e); err != nil {
			t.Fatal(err)
		}
	}
	p, err := search.Scan(ctx, s, recall.SearchOptions{Query: "common", Limit: 3})
	if err != nil || len(p.Hits) != 3 || p.Hits[0].Key.Session != "s49" || p.Next == "" {
		t.Fatalf("first page %+v, %v", p, err)
	}
	if s.loads > 5 {
		t.Errorf("the first page of 3 hits loaded %d sessions", s.loads)
	}
	n := len(p.Hits)
	for p.Next != "" {
		if p, err = search.Scan(ctx, s, recall.SearchOptions{Query: "common", Limit: 7, Cursor: p.Next}); err != nil {
			t.Fatal(err)
		}
		n += len(p.Hits)
	}
	if n != 50 {
		t.Errorf("the pages hold %d hits, want 50", n)
	}
}
