package export

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/recallkit/recall"
)

// pageSize is how many log entries Stream asks the store for at a time.
// An export holds about one such page, never the whole log.
const pageSize = 512

// Stream renders the session key of st in format f to w as it reads it:
// the log a page at a time (Store.Entries), each page rendered and
// written through a buffer before the next is read, so an export's
// memory is bounded by a page of entries, not by the session. It writes
// the same bytes Write writes for what Load returns; subagent records
// are read one after another in the same way.
//
// Markdown and HTML must know, before they render an item, whether a
// later entry removes it, and what a compaction kept; JSON writes only
// the items still in the view at the end. Those formats read the log
// twice: a first pass keeps what removes items (one small record per
// removal) and where the view was reset, the second renders. JSONL reads
// it once.
//
// Stream writes nothing to w until it has read the session's metadata,
// the first page of its log (and, for Markdown, HTML and JSON, the whole
// first pass), and the listing of its subagent records, and, for JSON,
// checked every item it is to write: an unknown format
// (ErrUnknownFormat), a missing session (an error wrapping
// recall.ErrNotFound) or a store failing then is an error with w
// untouched. An error after that (a store failing midway, w failing)
// ends the export where it stands, and w holds part of it.
//
// The metadata is the session's as Stat reads it first; the log is read
// up to its LastSeq, so entries appended during the export are left out
// and the header and the history agree.
func Stream(ctx context.Context, w io.Writer, f Format, st recall.Store, key recall.Key) error {
	return stream(ctx, w, f, st, key, pageSize, true)
}

// StreamRecord is Stream for the one session record key: the subagent
// records under a main session are left out, and the rest is the same.
// 'recall show --full' renders a session with it, and adds what it shows
// of the subagents only when asked.
func StreamRecord(ctx context.Context, w io.Writer, f Format, st recall.Store, key recall.Key) error {
	return stream(ctx, w, f, st, key, pageSize, false)
}

// stream is Stream, or StreamRecord without withSubagents, reading page
// entries at a time (its tests read fewer).
func stream(ctx context.Context, w io.Writer, f Format, st recall.Store, key recall.Key, page int, withSubagents bool) error {
	if !slices.Contains(Formats, f) {
		return fmt.Errorf("%w %q", ErrUnknownFormat, f)
	}
	src, err := openSource(ctx, st, key, withSubagents && f != FormatJSON, page)
	if err != nil {
		return err
	}
	return render(ctx, w, f, src)
}

// source is what the writers render: a session record and the subagent
// records under it.
type source struct {
	main *record
	// subs open the subagent records, oldest first, one at a time as
	// the writer comes to them; a nil record is one removed since the
	// listing, which is skipped.
	subs []func(context.Context) (*record, error)
}

// record is one session record as the writers read it: its metadata and
// its log, read a page at a time as many times as a writer needs.
type record struct {
	meta recall.Meta
	// first is the first page of the log, read when the record is
	// opened so that a missing record is known before anything of it is
	// written, and given to the first reading only. For a record held in
	// memory it is the whole log.
	first []recall.Entry
	// next reads the page after seq after; nil for a record in memory.
	next func(ctx context.Context, after int64) ([]recall.Entry, error)
	// page is how many entries next asks for: a shorter page is the last.
	page int
}

// memSource is s, held in memory, as a source.
func memSource(s *Session) *source {
	src := &source{main: &record{meta: s.Meta, first: s.Entries}}
	for _, sub := range s.Subagents {
		src.subs = append(src.subs, func(context.Context) (*record, error) {
			return &record{meta: sub.Meta, first: sub.Entries}, nil
		})
	}
	return src
}

// openSource opens the session key of st for Stream: its metadata, the
// first page of its log and, when withSubagents is set and key is a main
// session, the listing of its subagent records, in Load's order.
func openSource(ctx context.Context, st recall.Store, key recall.Key, withSubagents bool, page int) (*source, error) {
	main, err := openRecord(ctx, st, key, page)
	if err != nil {
		return nil, err
	}
	src := &source{main: main}
	if !withSubagents || !key.IsMain() {
		return src, nil
	}
	subs, err := subagents(ctx, st, key)
	if err != nil {
		return nil, err
	}
	for _, sm := range subs {
		src.subs = append(src.subs, func(ctx context.Context) (*record, error) {
			r, err := openRecord(ctx, st, sm.Key, page)
			if errors.Is(err, recall.ErrNotFound) {
				return nil, nil // removed since the listing
			}
			return r, err
		})
	}
	return src, nil
}

// openRecord reads the metadata of key and the first page of its log,
// and reads the rest page entries at a time.
func openRecord(ctx context.Context, st recall.Store, key recall.Key, page int) (*record, error) {
	m, err := st.Stat(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("export: load %s: %w", key, err)
	}
	r := &record{meta: m, page: page, next: func(ctx context.Context, after int64) ([]recall.Entry, error) {
		es, err := st.Entries(ctx, key, after, page)
		if err != nil {
			return nil, fmt.Errorf("export: load %s after seq %d: %w", key, after, err)
		}
		return es, nil
	}}
	if m.LastSeq > 0 {
		if r.first, err = r.next(ctx, 0); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// each calls fn with every entry of the log in Seq order, and stops at
// fn's first error. A stored log is read a page at a time up to the
// LastSeq of the record's metadata: a page shorter than asked for is the
// last, and entries appended since the metadata was read are left out.
func (r *record) each(ctx context.Context, fn func(recall.Entry) error) error {
	if r.next == nil {
		for _, e := range r.first {
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	}
	es, read := r.first, r.first != nil
	r.first = nil // a later reading reads the first page again: it is not held
	var after int64
	for after < r.meta.LastSeq {
		if !read {
			var err error
			if es, err = r.next(ctx, after); err != nil {
				return err
			}
		}
		read = false
		for _, e := range es {
			if e.Seq > r.meta.LastSeq {
				return nil
			}
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(es) < r.page {
			return nil
		}
		after = es[len(es)-1].Seq
	}
	return nil
}

// eachSubagent opens src's subagent records in turn and calls fn with
// each, and with its marks when marked is set (nil otherwise). A record
// removed before anything of it is written is skipped, as Load skips it.
func eachSubagent(ctx context.Context, src *source, marked bool, fn func(*record, *marks) error) error {
	for _, open := range src.subs {
		r, err := open(ctx)
		if err != nil {
			return err
		}
		if r == nil {
			continue
		}
		var mk *marks
		if marked {
			mk, err = scan(ctx, r, false)
			if errors.Is(err, recall.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
		}
		if err := fn(r, mk); err != nil {
			return err
		}
	}
	return nil
}

// output is what a writer renders to: a buffer over the destination,
// which remembers the destination's first error so that a writer stops
// reading the store as soon as nobody reads what it writes.
type output struct {
	*bufio.Writer
	dst *stickyWriter
}

// err returns the destination's first error, or nil.
func (o output) err() error { return o.dst.err }

// stickyWriter remembers the first error of w and writes nothing after it.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

// render writes src in format f to w.
func render(ctx context.Context, w io.Writer, f Format, src *source) error {
	var write func(context.Context, output, *source) error
	switch f {
	case FormatMarkdown:
		write = writeMarkdown
	case FormatHTML:
		write = writeHTML
	case FormatJSON:
		write = func(ctx context.Context, o output, src *source) error { return writeJSON(ctx, o, src.main) }
	case FormatJSONL:
		write = writeJSONL
	default:
		return fmt.Errorf("%w %q", ErrUnknownFormat, f)
	}
	return emit(w, string(f), func(o output) error { return write(ctx, o, src) })
}

// emit runs write over an output to w and flushes it. When w failed,
// its first error is returned, wrapped and named by what, whatever write
// returned: a writer that stops at o.err() may report the stop as
// something else.
func emit(w io.Writer, what string, write func(output) error) error {
	dst := &stickyWriter{w: w}
	o := output{Writer: bufio.NewWriterSize(dst, 64<<10), dst: dst}
	err := write(o)
	if err == nil {
		err = o.Flush()
	}
	if o.err() != nil {
		return fmt.Errorf("export: %s: %w", what, o.err())
	}
	return err
}
