package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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

// ReadJSONL reads a JSONL export (what JSONL writes; several exports one
// after another are one stream) and returns its sessions in file order.
// A subagent record whose header follows its main session's log is
// returned in that session's Subagents; one without it is a session of
// its own.
//
// Every line is checked before anything is returned: a header of a later
// format version, a bad key, an entry before any header, a seq that does
// not grow, an entry without a time, or a line that does not decode (a
// torn last line included) is an error wrapping ErrInvalidLog that names
// the line.
func ReadJSONL(r io.Reader) ([]*Session, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		out  []*Session
		cur  *Session
		main *Session
	)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("export: read line %d: %w", n, err)
		}
		eof := err != nil
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if err := readLine(t, n, &out, &cur, &main); err != nil {
				return nil, err
			}
		}
		if eof {
			break
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no session header", ErrInvalidLog)
	}
	return out, nil
}

// readLine decodes line n and adds it to the sessions read so far.
func readLine(line []byte, n int, out *[]*Session, cur, main **Session) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrInvalidLog, n, fmt.Sprintf(format, args...))
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
		s := &Session{}
		if w.Meta != nil {
			s.Meta = *w.Meta
		}
		s.Meta.Key = *w.Key
		*cur = s
		if !w.Key.IsMain() && *main != nil && (*main).Meta.Key == w.Key.Parent() {
			(*main).Subagents = append((*main).Subagents, s)
			return nil
		}
		if w.Key.IsMain() {
			*main = s
		} else {
			*main = nil
		}
		*out = append(*out, s)
		return nil
	}
	s := *cur
	if s == nil {
		return bad("an entry before any session header: not a recall log export")
	}
	if w.Seq <= 0 {
		return bad("no seq")
	}
	if n := len(s.Entries); n > 0 && w.Seq <= s.Entries[n-1].Seq {
		return bad("seq %d after seq %d", w.Seq, s.Entries[n-1].Seq)
	}
	if w.Time.IsZero() {
		return bad("seq %d has no time", w.Seq)
	}
	s.Entries = append(s.Entries, w.Entry())
	return nil
}
