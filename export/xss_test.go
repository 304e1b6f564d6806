package export_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
)

// hostile is the XSS corpus: strings that would run script, load
// something or restyle the page if a writer let them through unescaped.
var hostile = []string{
	`<script>alert(1)</script>`,
	`"><img src=x onerror=alert(1)>`,
	`' onmouseover='alert(1)' x='`,
	`javascript:alert(1)`,
	`</style><script>alert(1)</script><style>`,
	`</title><script>alert(1)</script>`,
	`<!-- hide everything after this`,
	`--><script>alert(1)</script>`,
	`<![CDATA[<script>alert(1)</script>]]>`,
	`</textarea><svg onload=alert(1)>`,
	`<iframe src="javascript:alert(1)"></iframe>`,
	`<a href="javascript:alert(1)">click</a>`,
	`<meta http-equiv="refresh" content="0;url=javascript:alert(1)">`,
	`<base href="javascript:alert(1)//">`,
	`<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>`,
	`<details open ontoggle=alert(1)>`,
	"\u200b<script>alert(1)</script>\u202e\u2028\u2029",
	"\uff1cscript\uff1ealert(1)\uff1c/script\uff1e",
	`{{.}}{{template "x"}}`,
	"NUL\u0000<script>alert(1)</script>",
	"```\n</details>\n<script>alert(1)</script>\n```",
	"~~~\n<img src=x onerror=alert(1)>",
	"`````five",
}

// hostileImages are image references no writer may load or inline.
var hostileImages = []string{
	`javascript:alert(1)`,
	`data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==`,
	`data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+`,
	`data:image/png;base64,AAAA" onerror="alert(1)`,
	`https://example.com/x.png" onerror="alert(1)`,
	`//evil.example/track.gif`,
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// hostileSession puts the corpus everywhere a session holds text: the
// title, labels, metadata, message text, tool names, call IDs, arguments,
// outputs (string and parts), reasoning, an item type, a compaction's
// strategy, a fork origin, image URLs; and ends with a sentinel message
// that must still be shown as text.
func hostileSession() *export.Session {
	key := recall.Key{Project: "p", Session: "xss"}
	b := newLog(key)
	b.payload(recall.KindFork, recall.ForkOrigin{Key: recall.Key{Project: "p", Session: hostile[1]}, Seq: 3})
	md := map[string]*string{}
	for i, h := range hostile[:16] {
		md[string(rune('a'+i))+strings.ReplaceAll(h[:min(len(h), 20)], "\u0000", "")] = ptr(strings.ReplaceAll(h, "\u0000", ""))
	}
	b.payload(recall.KindMeta, recall.MetaChange{Labels: []string{hostile[0], hostile[4], hostile[6]}, Metadata: md})
	b.payload(recall.KindTitle, recall.TitleChange{Title: strings.ReplaceAll(hostile[5]+hostile[0], "\u0000", ""), Source: recall.TitleUser})
	for i, h := range hostile {
		id := "call_" + h
		b.item(recall.Message("user", h))
		b.item(recall.Message("assistant", "Reply: "+h))
		b.item(recall.Item(`{"type":"reasoning","summary":[{"type":"summary_text","text":` + jsonString(h) + `}]}`))
		b.item(call(id, h, h))
		b.item(call(id, "tool", `{"arg":`+jsonString(h)+`}`))
		if i%2 == 0 {
			b.item(output(id, h))
		} else {
			b.item(output(id, strings.Repeat(h+"\n", 40))) // folded
		}
		b.item(recall.Item(`{"type":"function_call_output","call_id":` + jsonString(id) + `,"output":[{"type":"input_text","text":` + jsonString(h) + `}]}`))
		b.item(recall.Item(`{"type":` + jsonString(h) + `,"x":` + jsonString(h) + `}`))
	}
	var parts []string
	for _, u := range append(hostileImages, tinyPNG) {
		parts = append(parts, `{"type":"input_image","image_url":`+jsonString(u)+`}`)
	}
	b.item(recall.Item(`{"type":"message","role":"user","content":[` + strings.Join(parts, ",") + `]}`))
	last := b.entries[len(b.entries)-1].Seq
	b.payload(recall.KindCompaction, recall.Compaction{Through: last, Strategy: hostile[0] + hostile[6], Items: []recall.Item{recall.Message("user", hostile[6])}})
	b.item(recall.Message("user", "SENTINEL-END"))
	s := b.session()
	return s
}

// The HTML export of the corpus holds no executable markup: parsed as a
// browser would, it has no script or other active element, no on*
// attribute, no javascript: URL, no image but the one valid data: PNG,
// only its own style, and the CSP meta tag first in its head; and every
// hostile string is there, as text.
func TestHTMLHostileContent(t *testing.T) {
	var out bytes.Buffer
	if err := export.HTML(&out, hostileSession()); err != nil {
		t.Fatal(err)
	}
	var benign bytes.Buffer
	if err := export.HTML(&benign, fixture()); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	okImage := regexp.MustCompile(`^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+=*$`)
	allowed := map[atom.Atom]bool{
		atom.Html: true, atom.Head: true, atom.Body: true, atom.Meta: true, atom.Title: true, atom.Style: true,
		atom.Header: true, atom.H1: true, atom.H2: true, atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Main: true,
		atom.Section: true, atom.Div: true, atom.P: true, atom.Time: true, atom.Pre: true, atom.Code: true,
		atom.Details: true, atom.Summary: true, atom.Img: true, atom.Footer: true,
	}
	var (
		images, styles, metas int
		text                  strings.Builder
		walk                  func(*html.Node)
	)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.ElementNode:
			if !allowed[n.DataAtom] {
				t.Errorf("element <%s> in the page", n.Data)
			}
			for _, a := range n.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				if strings.HasPrefix(strings.ToLower(a.Key), "on") {
					t.Errorf("attribute %s=%q on <%s>", a.Key, a.Val, n.Data)
				}
				if strings.Contains(v, "javascript:") || strings.Contains(v, "vbscript:") {
					t.Errorf("script URL in %s=%q on <%s>", a.Key, a.Val, n.Data)
				}
				if a.Key == "href" || a.Key == "srcset" || a.Key == "style" || a.Key == "action" {
					t.Errorf("attribute %s=%q on <%s>", a.Key, a.Val, n.Data)
				}
				if a.Key == "src" && (n.DataAtom != atom.Img || !okImage.MatchString(a.Val)) {
					t.Errorf("src=%q on <%s>", a.Val, n.Data)
				}
			}
			switch n.DataAtom {
			case atom.Img:
				images++
			case atom.Style:
				styles++
			case atom.Meta:
				metas++
				if strings.EqualFold(attr(n, "http-equiv"), "refresh") {
					t.Errorf("meta refresh in the page")
				}
			}
		case html.CommentNode:
			t.Errorf("comment node %q in the page", n.Data)
		case html.TextNode:
			text.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if images != 1 {
		t.Errorf("%d images inlined, want 1 (the valid data: PNG)", images)
	}
	if styles != 1 || metas != 6 {
		t.Errorf("%d style and %d meta elements, want 1 and 6", styles, metas)
	}
	if got, want := styleText(t, out.Bytes()), styleText(t, benign.Bytes()); got != want {
		t.Errorf("the style sheet differs from a benign export's:\n%s", got)
	}
	head := find(doc, atom.Head)
	first := head.FirstChild
	for first != nil && first.Type != html.ElementNode {
		first = first.NextSibling
	}
	if first == nil || first.DataAtom != atom.Meta || attr(first, "http-equiv") != "Content-Security-Policy" || attr(first, "content") != export.CSP {
		t.Errorf("the head does not start with the CSP meta tag: %+v", first)
	}
	shown := text.String()
	for _, h := range hostile {
		want := strings.ReplaceAll(h, "\u0000", "\ufffd") // the HTML parser shows NUL as U+FFFD
		if !strings.Contains(shown, want) {
			t.Errorf("%q is not shown as text", h)
		}
	}
	if !strings.Contains(shown, "SENTINEL-END") {
		t.Error("the last message is not shown")
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if strings.EqualFold(a.Key, key) {
			return a.Val
		}
	}
	return ""
}

func find(n *html.Node, a atom.Atom) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, a); f != nil {
			return f
		}
	}
	return nil
}

func styleText(t *testing.T, page []byte) string {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	st := find(doc, atom.Style)
	if st == nil || st.FirstChild == nil {
		t.Fatal("no style element")
	}
	return st.FirstChild.Data
}

// The Markdown export of the corpus, parsed by a CommonMark parser: every
// tool output and argument sits whole in one fenced block, the only raw
// HTML is the export's own <details> folding, and the sentinel after all
// the hostile messages is still a paragraph of text.
func TestMarkdownHostileContent(t *testing.T) {
	var out bytes.Buffer
	if err := export.Markdown(&out, hostileSession()); err != nil {
		t.Fatal(err)
	}
	src := out.Bytes()
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	var (
		codes     = map[string]bool{}
		sentinel  bool
		ownHTML   = regexp.MustCompile(`^(<details><summary>[^<>]*</summary>|</details>)\n?$`)
		linesText = func(n ast.Node) string {
			var b strings.Builder
			for i := 0; i < n.Lines().Len(); i++ {
				seg := n.Lines().At(i)
				b.Write(seg.Value(src))
			}
			return b.String()
		}
	)
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.FencedCodeBlock:
			codes[strings.TrimRight(linesText(n), "\n")] = true
		case *ast.HTMLBlock:
			h := linesText(n)
			if n.HasClosure() {
				h += string(n.ClosureLine.Value(src))
			}
			if !ownHTML.MatchString(h) {
				t.Errorf("raw HTML block in the Markdown: %q", h)
			}
		case *ast.RawHTML:
			var b strings.Builder
			for i := 0; i < n.Segments.Len(); i++ {
				seg := n.Segments.At(i)
				b.Write(seg.Value(src))
			}
			t.Errorf("inline raw HTML in the Markdown: %q", b.String())
		case *ast.AutoLink, *ast.Link, *ast.Image:
			t.Errorf("a link or image in the Markdown: %s", n.Kind())
		case *ast.Text:
			if string(n.Segment.Value(src)) == "SENTINEL-END" {
				if _, ok := n.Parent().(*ast.Paragraph); ok {
					sentinel = true
				}
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hostile {
		if !codes[h] {
			t.Errorf("tool output %q is not one whole fenced block", h)
		}
		if i%2 == 1 && !codes[strings.TrimRight(strings.Repeat(h+"\n", 40), "\n")] {
			t.Errorf("folded tool output of %q is not one whole fenced block", h)
		}
	}
	if !sentinel {
		t.Errorf("the sentinel message after the corpus is not a paragraph: content broke out of its place\n%s", src)
	}
}
