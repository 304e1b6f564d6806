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

// mapSession turns a session's messages into the stream and records of
// tg.
func mapSession(t *importer.Transcript, tg *importer.Target, msgs []message, rev *revert) {
	n, why := settled(msgs, rev)
	t.Lines += len(msgs)
	for range msgs[n:] {
		t.Skip(why)
	}
	for i := range msgs[:n] {
		m := &msgs[i]
		for range m.bad {
			t.Skip("malformed")
		}
		items, compaction := m.items(t.Skip)
		at := time.UnixMilli(int64(m.info.Time.Created)).UTC().Truncate(time.Microsecond)
		l := line{ID: m.id, Time: at.UnixMicro(), Compaction: compaction, Items: items, Bad: m.bad}
		if m.info.Role == "assistant" && len(items) > 0 {
			l.Usage = m.info.usage()
			if m.info.ModelID != "" {
				tg.Model = m.info.ModelID
			}
		}
		b, _ := stdjson.Marshal(l) // a line always encodes
		t.Data = append(append(t.Data, b...), '\n')
		end := int64(len(t.Data))
		if compaction {
			tg.Records = append(tg.Records, importer.Record{
				End:        end,
				Entry:      recall.Entry{Kind: recall.KindCompaction, Time: at},
				Compaction: &recall.Compaction{Items: []recall.Item{}, Strategy: "opencode"},
			})
		}
		for j, it := range items {
			e := recall.Entry{Kind: recall.KindItem, Time: at, Data: stdjson.RawMessage(it)}
			if j == 0 {
				e.Usage = l.Usage
			}
			tg.Records = append(tg.Records, importer.Record{End: end, Entry: e})
		}
	}
}

// placeholder matches the title opencode gives a session until it names
// it (Session.createDefaultTitle).
var placeholder = regexp.MustCompile(`^(New|Child) session - \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$`)

// addTitle writes the session's title with the records of its last
// message: a title changes in place, so it is not part of the stream, and
// one given later is written with the next messages.
func addTitle(tg *importer.Target, title string) {
	title = strings.Join(strings.Fields(strings.ReplaceAll(title, "\x00", "")), " ")
	n := len(tg.Records)
	if title == "" || placeholder.MatchString(title) || n == 0 {
		return
	}
	e := recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: title, Source: recall.TitleAuto})
	e.Time = tg.Records[n-1].Entry.Time
	tg.Records = append(tg.Records, importer.Record{End: tg.Records[n-1].End, Entry: e})
}
