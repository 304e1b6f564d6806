package export

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"

	"github.com/recallkit/recall"
)

// CSP is the Content-Security-Policy of the HTML export, set by a meta
// tag first in its head: no script, no fetch, no frame, no form, no
// external style or image; only the page's own inline style and images
// that are data: URIs.
const CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

// HTML writes the session as one self-contained page: inline CSS, no
// script (none is needed to read it, and its Content-Security-Policy, CSP,
// forbids any), nothing fetched, so it works offline; light or dark as
// the reader's system prefers. It shows what Markdown shows, long blocks
// folded in <details>.
//
// Every piece of content goes through html/template's contextual
// escaping, so a hostile title, message, tool output, label or metadata
// value is shown as text and runs nothing. An image is shown inline only
// when it is a data: URI of a raster image (PNG, JPEG, GIF, WebP); any
// other image reference is shown as text and never fetched.
func HTML(w io.Writer, s *Session) error {
	return render(context.Background(), w, FormatHTML, memSource(s))
}

func writeHTML(ctx context.Context, o output, src *source) error {
	mk, err := scan(ctx, src.main, false)
	if err != nil {
		return err
	}
	if err := page.ExecuteTemplate(o, "head", newHTMLHead(src.main.meta)); err != nil {
		return fmt.Errorf("export: html: %w", err)
	}
	sink := &htmlSink{o: o}
	if err := sink.blocks(ctx, src.main, mk); err != nil {
		return err
	}
	err = eachSubagent(ctx, src, true, func(r *record, mk *marks) error {
		if err := page.ExecuteTemplate(o, "subagent", r.meta.Key.Subpath); err != nil {
			return fmt.Errorf("export: html: %w", err)
		}
		if err := sink.blocks(ctx, r, mk); err != nil {
			return err
		}
		_, err := o.WriteString("\n</section>")
		return err
	})
	if err != nil {
		return err
	}
	if err := page.ExecuteTemplate(o, "foot", nil); err != nil {
		return fmt.Errorf("export: html: %w", err)
	}
	return nil
}

// htmlHead is what the page's head template reads.
type htmlHead struct {
	Title    string
	CSP      string
	Meta     [][2]string // name, value
	Labels   []string
	Metadata [][2]string
}

// htmlBlock is what the note and turn templates read.
type htmlBlock struct {
	block
	When string
}

// htmlPart is what the part template reads.
type htmlPart struct {
	part
	Class  string // a fixed class name, never taken from the item
	Head   string
	Images []htmlImage
}

type htmlImage struct {
	Src  template.URL // set only for a data: URI checked by dataImage
	Text string
}

func newHTMLHead(m recall.Meta) htmlHead {
	h := htmlHead{Title: m.Title, CSP: CSP, Labels: m.Labels}
	if h.Title == "" {
		h.Title = "Session " + m.Key.Session
	}
	h.Meta = [][2]string{
		{"Session", m.Key.Session},
		{"Project", m.Key.Project},
		{"Created", stamp(m.Created)},
		{"Updated", stamp(m.Updated)},
		{"Items", fmt.Sprint(m.ItemCount)},
	}
	if !m.Usage.IsZero() {
		h.Meta = append(h.Meta, [2]string{"Usage", fmt.Sprintf("%d tokens (%d in, %d out)", m.Usage.TotalTokens, m.Usage.InputTokens, m.Usage.OutputTokens)})
	}
	if st := state(m.Archived, m.Pinned); st != "" {
		h.Meta = append(h.Meta, [2]string{"State", st})
	}
	if f := m.ForkedFrom; f != nil {
		h.Meta = append(h.Meta, [2]string{"Forked from", fmt.Sprintf("%s at seq %d", f.Key.Session, f.Seq)})
	}
	for _, k := range slices.Sorted(maps.Keys(m.Metadata)) {
		h.Metadata = append(h.Metadata, [2]string{k, m.Metadata[k]})
	}
	return h
}

func newHTMLPart(p part) htmlPart {
	hp := htmlPart{part: p, Class: partClass(p), Head: plainHead(p)}
	for _, im := range p.Images {
		if im.Data {
			hp.Images = append(hp.Images, htmlImage{Src: template.URL(im.URL), Text: fmt.Sprintf("image (%s, %s)", im.Mime, size(im.Size))})
		} else {
			hp.Images = append(hp.Images, htmlImage{Text: "image: " + im.URL})
		}
	}
	return hp
}

// htmlSink writes a history as the page's sections: a turn's section
// stays open until the next note or turn, or the history's end.
type htmlSink struct {
	o      output
	inTurn bool
}

// blocks writes r's history, and ends it.
func (s *htmlSink) blocks(ctx context.Context, r *record, mk *marks) error {
	if err := history(ctx, r, mk, s); err != nil {
		return err
	}
	s.endTurn()
	_, err := s.o.WriteString("\n")
	return err
}

func (s *htmlSink) endTurn() {
	if s.inTurn {
		s.o.WriteString("\n</section>")
		s.inTurn = false
	}
}

func (s *htmlSink) execute(name string, data any) error {
	if err := page.ExecuteTemplate(s.o, name, data); err != nil {
		return fmt.Errorf("export: html: %w", err)
	}
	return s.o.err()
}

func (s *htmlSink) note(b block) error {
	s.endTurn()
	return s.execute("note", htmlBlock{block: b, When: stamp(b.Time)})
}

func (s *htmlSink) turn(b block) error {
	s.endTurn()
	s.inTurn = true
	return s.execute("turn", htmlBlock{block: b, When: stamp(b.Time)})
}

func (s *htmlSink) part(p part) error { return s.execute("part", newHTMLPart(p)) }

// partClass is the CSS class of a part, from a fixed set.
func partClass(p part) string {
	switch {
	case p.Kind == "message" && (p.Role == "user" || p.Role == "assistant" || p.Role == "system" || p.Role == "developer"):
		return "msg " + p.Role
	case p.Kind == "message":
		return "msg"
	case p.Kind == "output" && p.Error:
		return "tool output error"
	case p.Kind == "call", p.Kind == "output":
		return "tool " + p.Kind
	case p.Kind == "reasoning", p.Kind == "damaged":
		return p.Kind
	}
	return "item"
}

var page = template.Must(template.New("page").Parse(pageTemplate))

// pageTemplate is the page, in the pieces the writer executes one after
// another as it reads the log: the head (up to <main>), a note, the start
// of a turn, a part of it, the heading of a subagent record, the foot.
// Each starts and ends outside any tag, so each is escaped on its own as
// it would be in one page. The CSP meta tag comes first in the head, so
// it governs everything after it.
const pageTemplate = `{{define "head"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="color-scheme" content="light dark">
<meta name="generator" content="recall export">
<title>{{.Title}}</title>
<style>
:root { --bg: #ffffff; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --code: #f6f8fa;
  --user: #ddf4ff; --assistant: #f6f8fa; --tool: #fff8c5; --error: #ffebe9; --note: #fbefff; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --code: #151b23;
    --user: #0c2d6b; --assistant: #151b23; --tool: #3b2e00; --error: #5d0f12; --note: #2d1a3f; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 60rem; padding: 1.5rem; background: var(--bg); color: var(--fg);
  font: 16px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; }
h1 { font-size: 1.6rem; margin: 0 0 .5rem; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; border-bottom: 1px solid var(--line); padding-bottom: .3rem; margin-top: 2rem; }
h2 time, .head time { color: var(--muted); font-weight: normal; font-size: .85em; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; color: var(--muted); margin: 0 0 1rem; }
dl.meta dt { font-weight: 600; }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
.part { border: 1px solid var(--line); border-radius: 6px; margin: .75rem 0; padding: .5rem .75rem; overflow-wrap: anywhere; }
.part .head { font-weight: 600; font-size: .9rem; margin-bottom: .25rem; }
.msg.user { background: var(--user); }
.msg.assistant { background: var(--assistant); }
.tool { background: var(--tool); }
.tool.error { background: var(--error); }
.reasoning { font-style: italic; color: var(--muted); }
.damaged, .note { background: var(--note); }
.note { border-left: 4px solid var(--muted); padding: .5rem .75rem; margin: 1.5rem 0; }
.removed { opacity: .6; }
.text { white-space: pre-wrap; }
pre { background: var(--code); border: 1px solid var(--line); border-radius: 6px; padding: .5rem; overflow-x: auto; margin: .25rem 0; }
code { font: .85rem/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
summary { cursor: pointer; font-weight: 600; font-size: .9rem; }
img { max-width: 100%; height: auto; display: block; margin: .25rem 0; }
.image { color: var(--muted); font-size: .9rem; }
footer { color: var(--muted); font-size: .8rem; margin-top: 2rem; border-top: 1px solid var(--line); padding-top: .5rem; }
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<dl class="meta">
{{- range .Meta}}
<dt>{{index . 0}}</dt><dd>{{index . 1}}</dd>
{{- end}}
{{- if .Labels}}
<dt>Labels</dt><dd>{{range $i, $l := .Labels}}{{if $i}}, {{end}}<code>{{$l}}</code>{{end}}</dd>
{{- end}}
{{- if .Metadata}}
<dt>Metadata</dt><dd>{{range $i, $kv := .Metadata}}{{if $i}}, {{end}}<code>{{index $kv 0}}</code>: <code>{{index $kv 1}}</code>{{end}}</dd>
{{- end}}
</dl>
</header>
<main>
{{end}}
{{- define "foot"}}
</main>
<footer>Exported by recall. This page runs no script and loads nothing.</footer>
</body>
</html>
{{end}}
{{- define "subagent"}}
<section class="subagent">
<h2>Subagent <code>{{.}}</code></h2>
{{end}}
{{- define "note"}}
<p class="note">{{.Note}} <time>{{.When}}</time></p>
{{- end}}
{{- define "turn"}}
<section class="turn" id="turn-{{.Turn}}">
<h2>Turn {{.Turn}} <time>{{.When}}</time></h2>
{{- end}}
{{- define "part"}}
<div class="part {{.Class}}{{if .Removed}} removed{{end}}">
{{- if eq .Kind "message"}}
<div class="head">{{.Head}}</div>
{{- if .Text}}
<div class="text">{{.Text}}</div>
{{- end}}
{{- else if eq .Kind "reasoning"}}
<div class="head">Reasoning</div>
<div class="text">{{.Text}}</div>
{{- else if eq .Kind "damaged"}}
<div class="text">{{.Text}}</div>
{{- else if .Fold}}
<details><summary>{{.Head}}{{if .CallID}} · {{.CallID}}{{end}} ({{.Lines}} lines)</summary>
<pre><code>{{.Code}}</code></pre>
</details>
{{- else}}
<div class="head">{{.Head}}{{if .CallID}} · <code>{{.CallID}}</code>{{end}}</div>
<pre><code>{{.Code}}</code></pre>
{{- end}}
{{- range .Images}}
{{- if .Src}}
<img src="{{.Src}}" alt="{{.Text}}">
{{- else}}
<p class="image">{{.Text}}</p>
{{- end}}
{{- end}}
</div>
{{- end}}`
