package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"regexp"
	"strings"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"

	"github.com/recallkit/recall"
)

// How the viewer shows items. Every byte of an item is untrusted: text
// goes through html/template's escaping, Markdown is rendered by
// goldmark without raw HTML and then sanitized by bluemonday, code is
// highlighted by chroma with CSS classes (no inline styles, so the CSP
// holds), and images are shown only from data: URIs of raster types.

// foldBytes is the size over which a tool call's arguments or output are
// folded (a <details> closed by default).
const foldBytes = 600

var (
	markdown = goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(codeRenderer{}, 100))),
	)
	sanitizer = func() *bluemonday.Policy {
		p := bluemonday.UGCPolicy()
		p.AllowAttrs("class").Matching(regexp.MustCompile(`^[a-zA-Z0-9 _-]{1,64}$`)).OnElements("pre", "code", "span")
		p.RequireNoReferrerOnLinks(true)
		p.AddTargetBlankToFullyQualifiedLinks(true)
		// data: URIs of raster images only (renderImage makes them
		// <img>), as image parts are shown (dataImage).
		p.AllowURLSchemeWithCustomPolicy("data", func(u *url.URL) bool { return imageURL.MatchString("data:" + u.Opaque) })
		return p
	}()
	codeFormatter = chromahtml.New(chromahtml.WithClasses(true), chromahtml.PreventSurroundingPre(false))
	imageURL      = regexp.MustCompile(`^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+=*$`)
)

// renderMarkdown renders untrusted Markdown to sanitized HTML.
func renderMarkdown(src string) template.HTML {
	var b bytes.Buffer
	if err := markdown.Convert([]byte(src), &b); err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	return template.HTML(sanitizer.SanitizeBytes(b.Bytes())) // #nosec: sanitized
}

// codeRenderer renders fenced code blocks highlighted by chroma.
type codeRenderer struct{}

func (codeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, renderFenced)
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
	reg.Register(ast.KindImage, renderImage)
}

// renderImage shows a Markdown image only when it is a data: URI of a
// raster type, as image parts are shown (dataImage). Any other becomes a
// link to it named by its alt text (the text alone inside a link): a
// remote image would be fetched as the page opens, telling its server
// that the session was read, when and by whom.
func renderImage(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	img := n.(*ast.Image)
	alt := template.HTMLEscapeString(plainText(img, src))
	dest := string(img.Destination)
	switch {
	case imageURL.MatchString(dest):
		_, _ = fmt.Fprintf(w, `<img src="%s" alt="%s">`, template.HTMLEscapeString(dest), alt)
	case inLink(img):
		_, _ = w.WriteString(alt)
	default:
		if alt == "" {
			alt = template.HTMLEscapeString(dest)
		}
		// The sanitizer keeps the href only when its scheme is safe.
		_, _ = fmt.Fprintf(w, `<a href="%s">%s</a>`, util.EscapeHTML(util.URLEscape(img.Destination, true)), alt)
	}
	return ast.WalkSkipChildren, nil
}

// plainText is the text of n's descendants, as an image's alt text.
func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch t := c.(type) {
			case *ast.Text:
				b.Write(t.Segment.Value(src))
			case *ast.String:
				b.Write(t.Value)
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// inLink reports whether n is inside a link (whose anchor it must not
// nest another in).
func inLink(n ast.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Kind() == ast.KindLink || p.Kind() == ast.KindAutoLink {
			return true
		}
	}
	return false
}

// renderRawHTML shows inline HTML in a message as the text it is (a
// transcript shows what was written; nothing of it becomes markup).
func renderRawHTML(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		segs := n.(*ast.RawHTML).Segments
		for i := 0; i < segs.Len(); i++ {
			seg := segs.At(i)
			_, _ = w.WriteString(template.HTMLEscapeString(string(seg.Value(src))))
		}
	}
	return ast.WalkSkipChildren, nil
}

// renderHTMLBlock shows a block of HTML as text, as renderRawHTML does.
func renderHTMLBlock(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	b := n.(*ast.HTMLBlock)
	_, _ = w.WriteString(`<p class="raw">`)
	for i := 0; i < b.Lines().Len(); i++ {
		seg := b.Lines().At(i)
		_, _ = w.WriteString(template.HTMLEscapeString(string(seg.Value(src))))
	}
	if b.HasClosure() {
		_, _ = w.WriteString(template.HTMLEscapeString(string(b.ClosureLine.Value(src))))
	}
	_, err := w.WriteString("</p>\n")
	return ast.WalkSkipChildren, err
}

func renderFenced(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	fb := n.(*ast.FencedCodeBlock)
	var code strings.Builder
	for i := 0; i < fb.Lines().Len(); i++ {
		seg := fb.Lines().At(i)
		code.Write(seg.Value(src))
	}
	lexer := lexers.Get(string(fb.Language(src)))
	if lexer == nil {
		lexer = lexers.Fallback
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code.String())
	if err == nil {
		var b bytes.Buffer
		if err = codeFormatter.Format(&b, styles.Get("github"), it); err == nil {
			_, err = w.Write(b.Bytes())
			return ast.WalkSkipChildren, err
		}
	}
	_, err = w.WriteString("<pre><code>" + template.HTMLEscapeString(code.String()) + "</code></pre>")
	return ast.WalkSkipChildren, err
}

// chromaCSS is the highlighting style sheet: GitHub's colours, and a
// dark style under prefers-color-scheme: dark.
var chromaCSS = func() []byte {
	var b bytes.Buffer
	_ = codeFormatter.WriteCSS(&b, styles.Get("github"))
	b.WriteString("@media (prefers-color-scheme: dark) {\n")
	_ = codeFormatter.WriteCSS(&b, styles.Get("github-dark"))
	b.WriteString("}\n")
	return b.Bytes()
}()

// webItem is one item as a page shows it.
type webItem struct {
	Anchor string // the element id: "i-<seq>" or "i-<seq>-<index>"
	Ref    string // "<seq>" or "<seq>.<index>": a place in the view
	Seq    int64
	Kind   string // "message", "call", "output", "reasoning", "other"
	Role   string
	Label  string        // what the item is, for its header
	HTML   template.HTML // rendered Markdown (messages, reasoning)
	Text   string        // plain text shown as preformatted (tool data)
	Fold   bool          // Text is long: folded
	Images []template.URL
}

// itemCtx is an item with what its template needs of its page.
type itemCtx struct {
	webItem
	ID   string // the session's id
	CSRF string
}

// rawItem is the part of an item the viewer reads.
type rawItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Summary   []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// contentPart is one part of a message's content array.
type contentPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
}

func renderItem(l recall.LiveItem) webItem {
	w := webItem{Anchor: "i-" + strings.ReplaceAll(l.Ref.String(), ".", "-"), Ref: l.Ref.String(), Seq: l.Ref.Seq}
	var it rawItem
	if err := json.Unmarshal(l.Item, &it); err != nil {
		w.Kind, w.Label, w.Text = "other", "item", string(l.Item)
		w.Fold = len(w.Text) > foldBytes
		return w
	}
	switch {
	case it.Type == "message" || it.Type == "" && it.Role != "":
		w.Kind, w.Role, w.Label = "message", it.Role, it.Role
		var text strings.Builder
		var s string
		var parts []contentPart
		if json.Unmarshal(it.Content, &s) == nil {
			text.WriteString(s)
		} else if json.Unmarshal(it.Content, &parts) == nil {
			for _, p := range parts {
				switch {
				case p.Text != "":
					if text.Len() > 0 {
						text.WriteString("\n\n")
					}
					text.WriteString(p.Text)
				case len(p.ImageURL) > 0:
					if u, ok := dataImage(p.ImageURL); ok {
						w.Images = append(w.Images, u)
					}
				}
			}
		}
		w.HTML = renderMarkdown(text.String())
	case strings.HasSuffix(it.Type, "_call") && it.Type != "function_call_output":
		w.Kind, w.Label = "call", "tool call"
		if it.Name != "" {
			w.Label += ": " + it.Name
		}
		args := it.Arguments
		if len(args) == 0 {
			args = it.Input
		}
		w.Text = prettyJSON(args)
		w.Fold = len(w.Text) > foldBytes
	case strings.HasSuffix(it.Type, "_output"):
		w.Kind, w.Label = "output", "tool output"
		w.Text = prettyJSON(it.Output)
		w.Fold = len(w.Text) > foldBytes
	case it.Type == "reasoning":
		w.Kind, w.Label = "reasoning", "reasoning"
		var text strings.Builder
		for _, p := range it.Summary {
			text.WriteString(p.Text + "\n\n")
		}
		w.HTML = renderMarkdown(text.String())
	default:
		w.Kind, w.Label = "other", it.Type
		w.Text = prettyJSON(json.RawMessage(l.Item))
		w.Fold = len(w.Text) > foldBytes
	}
	return w
}

// dataImage returns an image part's URL when it is a data: URI of a
// raster image type (an SVG could carry script; a remote URL would
// leak that the page was read).
func dataImage(raw json.RawMessage) (template.URL, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var o struct {
			URL string `json:"url"`
		}
		if json.Unmarshal(raw, &o) != nil {
			return "", false
		}
		s = o.URL
	}
	if !imageURL.MatchString(s) {
		return "", false
	}
	return template.URL(s), true // #nosec: checked against imageURL
}

// prettyJSON shows a JSON value: a string as its text (tool arguments
// and outputs are often JSON inside a string), anything else indented.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		var b bytes.Buffer
		if t := strings.TrimSpace(s); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Indent(&b, []byte(t), "", "  ") == nil {
			return b.String()
		}
		return s
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") == nil {
		return b.String()
	}
	return string(raw)
}
