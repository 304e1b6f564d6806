package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/jsonl"
)

// LogVersion is the version of the JSONL export format JSONL writes and
// ReadJSONL reads. A file of a later version is refused, not guessed at.
const LogVersion = 1

// header is the first line of each session in a JSONL export.
type header struct {
	Version int         `json:"recall_log"`
	Key     recall.Key  `json:"key"`
	Meta    recall.Meta `json:"meta"`
}

// JSONL writes s as recall's own log, the lossless export: for the session
// and then for each subagent record, a header line
//
//	{"recall_log":1,"key":{…},"meta":{…}}
//
// followed by one line per entry of its log, in the file store's line
// shape:
//
//	{"seq":3,"kind":"item","time":"2025-06-01T10:00:00.123456Z","usage":{…},"data":{…}}
//
// "data" holds the payload's bytes verbatim. A payload that cannot sit on
// one line unchanged (an item with line breaks or blanks around it, or
// bytes that are not JSON, as a damaged entry may hold) is written as a
// JSON string in "data_text", or in "data_b64" when it is not UTF-8, so
// ReadJSONL gives back the very bytes. Nothing of the log is left out:
// removed and compacted items, titles, metadata changes, damaged entries.
func JSONL(w io.Writer, s *Session) error {
	return render(context.Background(), w, FormatJSONL, memSource(s))
}

func writeJSONL(ctx context.Context, o output, src *source) error {
	if err := writeLog(ctx, o, src.main); err != nil {
		return err
	}
	return eachSubagent(ctx, src, false, func(r *record, _ *marks) error {
		return writeLog(ctx, o, r)
	})
}

// writeLog writes r's header line and its log.
func writeLog(ctx context.Context, o output, r *record) error {
	h, err := json.Marshal(header{Version: LogVersion, Key: r.meta.Key, Meta: r.meta})
	if err != nil {
		return fmt.Errorf("export: jsonl header of %s: %w", r.meta.Key, err)
	}
	o.Write(h)
	o.WriteByte('\n')
	var buf []byte
	return r.each(ctx, func(e recall.Entry) error {
		buf, err = jsonl.AppendEntry(buf[:0], e, jsonl.Options{EscapeHTML: true})
		if err != nil {
			return fmt.Errorf("export: jsonl %s seq %d: time: %w", r.meta.Key, e.Seq, err)
		}
		o.Write(buf)
		return o.err()
	})
}

// wireLine is any line of a JSONL export as encoding/json sees it: a
// header (recall_log set) or an entry.
type wireLine struct {
	Version int          `json:"recall_log"`
	Key     *recall.Key  `json:"key"`
	Meta    *recall.Meta `json:"meta"`
	jsonl.Line
}

// LogLine is one line of a JSONL export, as ScanJSONL reads it: the
// header of a session's log (Header set), or one entry of the log of the
// session whose header came last.
type LogLine struct {
	// Header, on a header line, is the session's metadata; Header.Key
	// names it.
	Header *recall.Meta
	// Nested reports the header of a subagent record that follows the log
	// of its main session (or of a record under it): ReadJSONL returns it
	// in that session's Subagents, ImportJSONL imports it under wherever
	// that session went. A subagent record that is not nested is a session
	// of its own.
	Nested bool
	// Entry, on an entry line, is the entry.
	Entry recall.Entry
	// N is the line's number, from 1.
	N int
}

// ScanJSONL reads a JSONL export (what JSONL writes; several exports one
// after another are one stream) one line at a time, and yields each line
// that is not blank, in file order. It holds one line, never the export.
//
// Each line is checked as it is read: a header of a later format version,
// a bad key, an entry before any header, a seq that does not grow, an
// entry without a time, a line that does not decode (a torn last line
// included), or an export without a header yields an error wrapping
// ErrInvalidLog that names the line, and the scan ends. To check a whole
// export before acting on it, scan it twice.
func ScanJSONL(r io.Reader) iter.Seq2[LogLine, error] {
	return func(yield func(LogLine, error) bool) {
		br := bufio.NewReaderSize(r, 64<<10)
		var sc logScan
		for n := 1; ; n++ {
			line, err := br.ReadBytes('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				yield(LogLine{}, fmt.Errorf("export: read line %d: %w", n, err))
				return
			}
			eof := err != nil
			if t := bytes.TrimSpace(line); len(t) > 0 {
				l, err := sc.line(t, n)
				if !yield(l, err) || err != nil {
					return
				}
			}
			if eof {
				break
			}
		}
		if sc.key == nil {
			yield(LogLine{}, fmt.Errorf("%w: no session header", ErrInvalidLog))
		}
	}
}

// logScan is what ScanJSONL knows of the lines before: the session whose
// log is read, its last seq, and the main session records can nest under.
type logScan struct {
	key     *recall.Key
	last    int64
	mainKey *recall.Key
}

// line decodes and checks line n.
func (sc *logScan) line(line []byte, n int) (LogLine, error) {
	bad := func(format string, args ...any) (LogLine, error) {
		return LogLine{}, fmt.Errorf("%w: line %d: %s", ErrInvalidLog, n, fmt.Sprintf(format, args...))
	}
	var w wireLine
	if err := json.Unmarshal(line, &w); err != nil {
		return bad("%v", err)
	}
	if w.Version != 0 {
		if w.Version > LogVersion {
			return bad("format version %d; this program reads up to %d: upgrade recall", w.Version, LogVersion)
		}
		if w.Version < 0 || w.Key == nil {
			return bad("a header needs a key")
		}
		if err := w.Key.Validate(); err != nil {
			return bad("%v", err)
		}
		m := recall.Meta{}
		if w.Meta != nil {
			m = *w.Meta
		}
		m.Key = *w.Key
		l := LogLine{Header: &m, N: n}
		sc.key, sc.last = w.Key, 0
		switch {
		case w.Key.IsMain():
			sc.mainKey = w.Key
		case sc.mainKey != nil && *sc.mainKey == w.Key.Parent():
			l.Nested = true
		default:
			sc.mainKey = nil
		}
		return l, nil
	}
	switch {
	case sc.key == nil:
		return bad("an entry before any session header: not a recall log export")
	case w.Seq <= 0:
		return bad("no seq")
	case w.Seq <= sc.last:
		return bad("seq %d after seq %d", w.Seq, sc.last)
	case w.Time.IsZero():
		return bad("seq %d has no time", w.Seq)
	}
	sc.last = w.Seq
	return LogLine{Entry: w.Entry(), N: n}, nil
}

// ReadJSONL reads a JSONL export whole (see ScanJSONL) and returns its
// sessions in file order, each holding its whole log: for a small export,
// or one to look at. A subagent record whose header follows its main
// session's log is returned in that session's Subagents; one without it
// is a session of its own. Every line is checked before anything is
// returned. ImportJSONL imports an export of any size without holding it.
func ReadJSONL(r io.Reader) ([]*Session, error) {
	var out []*Session
	var cur, main *Session
	for l, err := range ScanJSONL(r) {
		if err != nil {
			return nil, err
		}
		if l.Header == nil {
			cur.Entries = append(cur.Entries, l.Entry)
			continue
		}
		cur = &Session{Meta: *l.Header}
		switch {
		case l.Nested:
			main.Subagents = append(main.Subagents, cur)
			continue
		case l.Header.Key.IsMain():
			main = cur
		default:
			main = nil
		}
		out = append(out, cur)
	}
	return out, nil
}
