package export

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/recallkit/recall"
)

// StreamText writes the whole history of the one session record key of
// st to w as plain text for a terminal: the history Markdown and HTML
// show, from the same reading of the log (every item the log ever held,
// in turns, a compaction's summary items and items removed later marked,
// and a note set between rules where a fork, a compaction or a clear
// changed what the model saw). It writes the history alone, with no
// title or metadata and none of the subagent records under a main
// session: a terminal's caller heads it as it likes ('recall show
// --full' prints its own header).
//
// The text is the session's as stored: control characters in it are not
// escaped, which a caller writing to a terminal must do. Like Stream it
// reads the log a page at a time, twice, so its memory is bounded by a
// page, not by the session, and a missing session (an error wrapping
// recall.ErrNotFound) is an error before anything is written.
func StreamText(ctx context.Context, w io.Writer, st recall.Store, key recall.Key) error {
	return streamText(ctx, w, st, key, pageSize)
}

// streamText is StreamText reading page entries at a time.
func streamText(ctx context.Context, w io.Writer, st recall.Store, key recall.Key, page int) error {
	r, err := openRecord(ctx, st, key, page)
	if err != nil {
		return err
	}
	return emit(w, "text", func(o output) error {
		mk, err := scan(ctx, r, false)
		if err != nil {
			return err
		}
		return history(ctx, r, mk, &textSink{o: o})
	})
}

// HistoryItems calls fn with every item of the whole history of the one
// session record key of st, in log order: the items StreamText, Markdown
// and HTML show, those removed later included. A compaction's summary
// items come where the compaction stands; the items it kept verbatim are
// not repeated, as they stand earlier. A damaged item (not a JSON
// object) is left out. It reads the log as StreamText does, a page at a
// time, and stops at fn's first error.
func HistoryItems(ctx context.Context, st recall.Store, key recall.Key, fn func(recall.Item) error) error {
	r, err := openRecord(ctx, st, key, pageSize)
	if err != nil {
		return err
	}
	mk, err := scan(ctx, r, false)
	if err != nil {
		return err
	}
	return history(ctx, r, mk, itemSink(fn))
}

// itemSink hands on the items of a history, for HistoryItems.
type itemSink func(recall.Item) error

func (itemSink) note(block) error { return nil }

func (itemSink) turn(block) error { return nil }

func (s itemSink) part(p part) error {
	if p.Item == nil {
		return nil
	}
	return s(p.Item)
}

// textRule sets a note apart from the turns around it.
const textRule = "────────────────────────────────────────"

// textSink writes a history as plain text: a line per turn, and each part
// under a heading naming it (with its marks), its text indented by two
// spaces, as recall show prints the view.
type textSink struct {
	o output
	// started is set once a block is written: a blank line goes between
	// blocks, none before the first or after the last.
	started bool
}

// block starts a block, after a blank line unless it is the first.
func (s *textSink) block() {
	if s.started {
		s.o.WriteString("\n")
	}
	s.started = true
}

func (s *textSink) note(bl block) error {
	s.block()
	fmt.Fprintf(s.o, "%s\n%s\n%s\n", textRule, strings.Join(strings.Fields(bl.Note), " "), textRule)
	return s.o.err()
}

func (s *textSink) turn(bl block) error {
	s.block()
	fmt.Fprintf(s.o, "── Turn %d · %s ──\n", bl.Turn, stamp(bl.Time))
	return s.o.err()
}

func (s *textSink) part(p part) error {
	s.block()
	if p.Kind == "damaged" {
		fmt.Fprintf(s.o, "(%s)\n", p.Text)
		return s.o.err()
	}
	head, body := plainHead(p), p.Text
	switch p.Kind {
	case "call", "output", "item":
		body = p.Code
	}
	fmt.Fprintf(s.o, "%s:\n", head)
	if body = strings.TrimRight(body, "\n"); strings.TrimSpace(body) != "" {
		for _, line := range strings.Split(body, "\n") {
			s.o.WriteString(strings.TrimRight("  "+line, " ") + "\n")
		}
	}
	for _, im := range p.Images {
		if im.Data {
			fmt.Fprintf(s.o, "  (image: %s, %s, inline data not shown)\n", im.Mime, size(im.Size))
		} else {
			fmt.Fprintf(s.o, "  (image: %s)\n", im.URL)
		}
	}
	return s.o.err()
}
