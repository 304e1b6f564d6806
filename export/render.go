package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// This file reduces a session's log to what people read, the model the
// Markdown and HTML writers share: turns of parts, with notes where the
// history changed (a fork, a compaction, a clear), handed to the writer
// one at a time as the log is read.

// Folding: a block longer than this is folded (<details>).
const (
	foldLines = 25
	foldBytes = 2500
)

// block is the start of a turn (a user message and what followed it) or
// a note.
type block struct {
	Turn int // 1-based; 0 for a note
	Time time.Time
	Note string
}

// part is one item of the history.
type part struct {
	// Kind is "message", "call", "output", "reasoning", "item" (any
	// other type, shown as its JSON) or "damaged".
	Kind    string
	Role    string // a message's role
	Type    string // the item's type
	Name    string // the function a call names
	CallID  string
	Text    string  // message text, reasoning summary
	Code    string  // a call's arguments (pretty JSON), an output, an item's JSON
	Lang    string  // the fence language of Code: "json" or ""
	Images  []image // a message's or an output's images
	Error   bool    // an output or call marked as failed
	Removed bool    // removed from the view later (undo, pop)
	Summary bool    // written by a compaction in place of older items
	Time    time.Time
	// Item is the item as stored, for HistoryItems; nil for a damaged
	// one.
	Item recall.Item
}

// Fold reports whether the part's code is long enough to fold.
func (p part) Fold() bool {
	return len(p.Code) > foldBytes || strings.Count(p.Code, "\n") >= foldLines
}

// Lines counts the lines of the part's code.
func (p part) Lines() int { return strings.Count(strings.TrimRight(p.Code, "\n"), "\n") + 1 }

// image is one image of a message: a data: URI (shown inline by the
// HTML writer when it is a raster image) or any other reference, shown
// as text.
type image struct {
	URL  string // the image_url as stored
	Data bool   // URL is a data: URI of a raster image, safe to inline
	Mime string
	Size int // bytes of the decoded data (approximately), for a data URI
}

// dataImage matches the data: URIs the HTML writer inlines: base64 raster
// images only (no SVG, which may hold scripts).
var dataImage = regexp.MustCompile(`^data:(image/(?:png|jpeg|gif|webp));base64,[A-Za-z0-9+/]+={0,2}$`)

func newImage(url string) image {
	if m := dataImage.FindStringSubmatch(url); m != nil {
		return image{URL: url, Data: true, Mime: m[1], Size: (len(url) - strings.IndexByte(url, ',') - 1) * 3 / 4}
	}
	return image{URL: url}
}

// historySink receives a record's history as it is read.
type historySink interface {
	// note is a note where a fork, compaction or clear changed the view.
	note(b block) error
	// turn starts a turn; its parts follow.
	turn(b block) error
	// part is one part of the turn started last.
	part(p part) error
}

// history reads r's log (again: mk is what a first pass found in it) and
// hands sink every item the log ever held, in log order, grouped in
// turns, with notes where a fork, compaction or clear changed the view.
// Items a compaction kept verbatim are not repeated; its summary is.
func history(ctx context.Context, r *record, mk *marks, sink historySink) error {
	h := &historyState{mk: mk, sink: sink}
	h.tail.reset(h.nextCompactionSize())
	return r.each(ctx, h.entry)
}

// historyState is history's place in the log.
type historyState struct {
	mk    *marks
	sink  historySink
	turns int
	// inTurn is set once a turn starts, cleared by a note: a part after
	// a note starts a turn.
	inTurn bool
	// tail is the newest items of the view that are still in it when the
	// next compaction (mk.compactions[next]) comes.
	tail viewTail
	next int
}

func (h *historyState) nextCompactionSize() int {
	if h.next < len(h.mk.compactions) {
		return h.mk.compactions[h.next].items
	}
	return 0
}

// keep adds an item that enters the view to the tail, if it is still in
// the view when the next compaction comes.
func (h *historyState) keep(ref recall.ItemRef, it recall.Item) {
	if h.next < len(h.mk.compactions) && h.mk.inViewAt(ref, h.mk.compactions[h.next].seq) {
		h.tail.push(it)
	}
}

func (h *historyState) note(t time.Time, text string) error {
	h.inTurn = false
	return h.sink.note(block{Time: t, Note: text})
}

func (h *historyState) add(p part) error {
	if p.Kind == "message" && p.Role == "user" || !h.inTurn {
		h.turns++
		h.inTurn = true
		if err := h.sink.turn(block{Turn: h.turns, Time: p.Time}); err != nil {
			return err
		}
	}
	return h.sink.part(p)
}

func (h *historyState) entry(e recall.Entry) error {
	switch e.Kind {
	case recall.KindItem:
		p := describe(e.Data)
		it, ok := e.Item()
		if !ok || p.Kind == "damaged" {
			p = part{Kind: "damaged", Text: fmt.Sprintf("a damaged item of %d bytes (not a JSON object) is kept in the log at seq %d", len(e.Data), e.Seq)}
		}
		ref := recall.ItemRef{Seq: e.Seq}
		p.Time, p.Removed = e.Time, h.mk.named(ref)
		if ok {
			h.keep(ref, it)
			if p.Kind != "damaged" {
				p.Item = it
			}
		}
		return h.add(p)
	case recall.KindFork:
		var f recall.ForkOrigin
		if json.Unmarshal(e.Data, &f) == nil {
			return h.note(e.Time, fmt.Sprintf("Forked from session %s at seq %d.", f.Key.Session, f.Seq))
		}
	case recall.KindClear:
		h.tail.reset(h.tail.size)
		return h.note(e.Time, "Cleared: the model started afresh here.")
	case recall.KindCompaction:
		var c recall.Compaction
		if json.Unmarshal(e.Data, &c) != nil {
			return nil
		}
		return h.compaction(e, c)
	}
	return nil
}

// compaction notes what c replaced, shows its summary items, and makes
// its items the view.
func (h *historyState) compaction(e recall.Entry, c recall.Compaction) error {
	kept := keptCopies(h.tail.view(), c.Items)
	for h.next < len(h.mk.compactions) && h.mk.compactions[h.next].seq <= e.Seq {
		h.next++
	}
	h.tail.reset(h.nextCompactionSize())
	for j, it := range c.Items {
		h.keep(recall.ItemRef{Seq: e.Seq, Index: j}, it)
	}
	if err := h.note(e.Time, compactionNote(c, kept)); err != nil {
		return err
	}
	for j, it := range c.Items[:len(c.Items)-kept] {
		p := describe(it)
		p.Time, p.Removed, p.Summary = e.Time, h.mk.named(recall.ItemRef{Seq: e.Seq, Index: j}), true
		if p.Kind != "damaged" {
			p.Item = it
		}
		if err := h.add(p); err != nil {
			return err
		}
	}
	return nil
}

// compactionNote is the note on compaction c, which kept the view's
// newest kept items verbatim.
func compactionNote(c recall.Compaction, kept int) string {
	strategy := c.Strategy
	if strategy == "" {
		strategy = "compaction"
	}
	keptNote := ""
	if kept > 0 {
		keptNote = fmt.Sprintf(" and the newest %s kept", plural(kept, "item"))
	}
	return fmt.Sprintf("Compacted (%s): the %s before this point were replaced by %s%s.",
		strategy, plural(max(c.Replaced-kept, 0), "item"), plural(len(c.Items)-kept, "summary item"), keptNote)
}

// keptCopies returns how many of a compaction's items, at its end, are
// verbatim copies of the newest items of view, the view the compaction
// replaced: the items it kept as they were, after the summary items that
// stand for the rest. The note on a compaction counts them with it, and
// the history does not show them again.
func keptCopies(view, items []recall.Item) int {
	for n := min(len(view), len(items)); n > 0; n-- {
		match := true
		for k := range n {
			if !bytes.Equal(view[len(view)-n+k], items[len(items)-n+k]) {
				match = false
				break
			}
		}
		if match {
			return n
		}
	}
	return 0
}

func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	if strings.HasSuffix(thing, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(thing, "y"))
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// fields is an item decoded leniently: a field of an unexpected type is
// simply absent, so odd items still render.
type fields map[string]json.RawMessage

func (f fields) str(name string) string {
	var s string
	_ = json.Unmarshal(f[name], &s)
	return s
}

// describe reduces one item to a part.
func describe(it []byte) part {
	var f fields
	if json.Unmarshal(it, &f) != nil {
		return part{Kind: "damaged"}
	}
	p := part{Type: f.str("type"), Role: f.str("role"), CallID: f.str("call_id")}
	if p.Type == "" && p.Role != "" {
		p.Type = "message"
	}
	status := f.str("status")
	var isErr bool
	_ = json.Unmarshal(f["is_error"], &isErr)
	p.Error = isErr || status == "failed" || status == "incomplete" && p.Type != "message"
	switch {
	case p.Type == "message":
		p.Kind = "message"
		p.Text, p.Images = content(f["content"])
	case p.CallID != "" && strings.HasSuffix(p.Type, "_call_output"):
		p.Kind = "output"
		var s string
		if json.Unmarshal(f["output"], &s) == nil {
			p.Code = s
		} else {
			p.Code, p.Images = content(f["output"])
			if p.Code == "" && len(p.Images) == 0 && len(f["output"]) > 0 {
				p.Code, p.Lang = pretty(f["output"]), "json"
			}
		}
	case p.CallID != "" && strings.HasSuffix(p.Type, "_call"):
		p.Kind, p.Name = "call", f.str("name")
		switch {
		case f["arguments"] != nil:
			p.Code, p.Lang = prettyString(f.str("arguments"))
		case f["input"] != nil:
			p.Code = f.str("input")
		case f["action"] != nil:
			p.Code, p.Lang = pretty(f["action"]), "json"
		}
	case p.Type == "reasoning":
		p.Kind = "reasoning"
		var r struct {
			Summary []struct {
				Text string `json:"text"`
			} `json:"summary"`
		}
		_ = json.Unmarshal(it, &r)
		var texts []string
		for _, s := range r.Summary {
			texts = append(texts, s.Text)
		}
		p.Text = strings.Join(texts, "\n\n")
		if c, _ := content(f["content"]); p.Text == "" {
			p.Text = c
		}
		if p.Text == "" {
			p.Text = "(no summary)"
		}
	default:
		p.Kind, p.Code, p.Lang = "item", pretty(it), "json"
	}
	return p
}

// content returns the text and images of a message's content: a plain
// string, or an array of parts (input_text, output_text, refusal,
// input_image, ...).
func content(raw json.RawMessage) (string, []image) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []fields
	if json.Unmarshal(raw, &parts) != nil {
		return "", nil
	}
	var (
		texts  []string
		images []image
	)
	for _, p := range parts {
		switch t := p.str("type"); {
		case p["text"] != nil:
			texts = append(texts, p.str("text"))
		case t == "refusal":
			texts = append(texts, "(refused) "+p.str("refusal"))
		case t == "input_image" || t == "image":
			url := p.str("image_url")
			if url == "" && p["file_id"] != nil {
				url = "file " + p.str("file_id")
			}
			images = append(images, newImage(url))
		case t == "input_file":
			texts = append(texts, "(file "+p.str("filename")+")")
		}
	}
	return strings.Join(texts, "\n\n"), images
}

// pretty indents JSON; what does not parse is returned as it is.
func pretty(raw []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, bytes.TrimSpace(raw), "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// prettyString indents a JSON text held in a string (a call's
// arguments), and says whether it was JSON.
func prettyString(s string) (string, string) {
	if !json.Valid([]byte(s)) {
		return s, ""
	}
	return pretty([]byte(s)), "json"
}
