package opencode

import (
	stdjson "encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
)

// opencode keeps a session as rows (or files) it updates in place: a
// message is written, then rewritten as its answer streams in, its tools
// run and its tokens are counted. The import reads a session as the
// stream of its settled messages, one line each: the line holds what the
// message gives recall (its items, time, usage), so the import's offset
// and digest are taken over what was imported. A session that gained
// messages is appended to; one whose imported messages changed (an undo
// after the import, a message deleted) is reported (importer.ErrChanged),
// never merged.

// line is the stream line of one message.
type line struct {
	ID         string        `json:"id"`
	Time       int64         `json:"time"`
	Compaction bool          `json:"compaction,omitempty"`
	Usage      *recall.Usage `json:"usage,omitempty"`
	Items      []recall.Item `json:"items"`
	Bad        int           `json:"bad,omitempty"`
}

// settled returns how many messages, from the first, are settled: not
// hidden by a pending undo, and done being written (an assistant message
// completed or failed; any message a later one follows). The messages
// after them are left for a later import, counted as "unfinished" or
// "reverted".
func settled(msgs []message, rev *revert) (n int, why string) {
	limit := len(msgs)
	if rev != nil && rev.MessageID != "" {
		for i, m := range msgs {
			if m.id >= rev.MessageID {
				limit = i
				break
			}
		}
	}
	for i, m := range msgs[:limit] {
		later := i < len(msgs)-1
		done := later || m.info.Role == "assistant" && (m.info.Time.Completed != nil || m.info.Error != nil)
		if !done {
			return i, "unfinished"
		}
	}
	if limit < len(msgs) {
		return limit, "reverted"
	}
	return limit, ""
}

// stream is a session as the import reads it: the lines of its settled
// messages, and the records each line gives.
type stream struct {
	data  []byte
	lines []streamLine
}

// streamLine is what one line of a stream gives its target.
type streamLine struct {
	recs  []importer.Record
	model string // the model its message names, when it gives items
}

// streamOf turns a session's messages into its stream, counting in t
// (Skip, Lines) the messages and parts it leaves out; title, when the
// session is titled, is written with the records of its last message.
func streamOf(t *importer.Transcript, msgs []message, rev *revert, title string) *stream {
	n, why := settled(msgs, rev)
	t.Lines += len(msgs) - n // the stream's lines are counted as they are read
	for range msgs[n:] {
		t.Skip(why)
	}
	s := &stream{}
	last := -1 // the last line with records
	for i := range msgs[:n] {
		m := &msgs[i]
		for range m.bad {
			t.Skip("malformed")
		}
		items, compaction := m.items(t.Skip)
		at := time.UnixMilli(int64(m.info.Time.Created)).UTC().Truncate(time.Microsecond)
		l := line{ID: m.id, Time: at.UnixMicro(), Compaction: compaction, Items: items, Bad: m.bad}
		var sl streamLine
		if m.info.Role == "assistant" && len(items) > 0 {
			l.Usage = m.info.usage()
			sl.model = m.info.ModelID
		}
		b, _ := stdjson.Marshal(l) // a line always encodes
		s.data = append(append(s.data, b...), '\n')
		if compaction {
			sl.recs = append(sl.recs, importer.Record{
				Entry:      recall.Entry{Kind: recall.KindCompaction, Time: at},
				Compaction: &recall.Compaction{Items: []recall.Item{}, Strategy: "opencode"},
			})
		}
		for j, it := range items {
			e := recall.Entry{Kind: recall.KindItem, Time: at, Data: stdjson.RawMessage(it)}
			if j == 0 {
				e.Usage = l.Usage
			}
			sl.recs = append(sl.recs, importer.Record{Entry: e})
		}
		if len(sl.recs) > 0 {
			last = len(s.lines)
		}
		s.lines = append(s.lines, sl)
	}
	if e, ok := titleEntry(title); ok && last >= 0 {
		recs := s.lines[last].recs
		e.Time = recs[len(recs)-1].Entry.Time
		s.lines[last].recs = append(recs, importer.Record{Entry: e})
	}
	return s
}

// placeholder matches the title opencode gives a session until it names
// it (Session.createDefaultTitle).
var placeholder = regexp.MustCompile(`^(New|Child) session - \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$`)

// titleEntry returns the title entry of a session's title, written with
// the records of its last message: a title changes in place, so it is not
// part of the stream, and one given later is written with the next
// messages. A placeholder or an empty title gives none.
func titleEntry(title string) (recall.Entry, bool) {
	title = strings.Join(strings.Fields(strings.ReplaceAll(title, "\x00", "")), " ")
	if title == "" || placeholder.MatchString(title) {
		return recall.Entry{}, false
	}
	return recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: title, Source: recall.TitleAuto}), true
}
