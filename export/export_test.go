package export

import (
	"context"
	"fmt"
	"io"

	"github.com/recallkit/recall"
)

// StreamPaged is Stream reading n log entries at a time.
func StreamPaged(ctx context.Context, w io.Writer, f Format, st recall.Store, key recall.Key, n int) error {
	return stream(ctx, w, f, st, key, n, true)
}

// StreamTextPaged is StreamText reading n log entries at a time.
func StreamTextPaged(ctx context.Context, w io.Writer, st recall.Store, key recall.Key, n int) error {
	return streamText(ctx, w, st, key, n)
}

// History returns the readable history of s as history hands it to a
// writer, one line per note, turn and part.
func History(s *Session) ([]string, error) {
	r := &record{meta: s.Meta, first: s.Entries}
	mk, err := scan(context.Background(), r, false)
	if err != nil {
		return nil, err
	}
	var ev eventSink
	err = history(context.Background(), r, mk, &ev)
	return ev, err
}

// HistoryModel returns the same as History, from historyModel.
func HistoryModel(s *Session) []string {
	var ev eventSink
	for _, b := range historyModel(s.Entries) {
		if b.Turn == 0 {
			_ = ev.note(b.block)
			continue
		}
		_ = ev.turn(b.block)
		for _, p := range b.Parts {
			_ = ev.part(p)
		}
	}
	return ev
}

// JSONModel writes the JSON export of s from its view as recall.Replay
// gives it whole.
func JSONModel(s *Session) ([]byte, error) { return jsonModel(s) }

// eventSink writes each note, turn and part as a line.
type eventSink []string

func (ev *eventSink) note(b block) error {
	*ev = append(*ev, fmt.Sprintf("note %s %q", stamp(b.Time), b.Note))
	return nil
}

func (ev *eventSink) turn(b block) error {
	*ev = append(*ev, fmt.Sprintf("turn %d %s", b.Turn, stamp(b.Time)))
	return nil
}

func (ev *eventSink) part(p part) error {
	*ev = append(*ev, fmt.Sprintf("part %+v", p))
	return nil
}
