package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/export"
)

// Bounds of GET …/entries.
const (
	defaultEntriesLimit = 100
	maxEntriesLimit     = 1000
)

// sessionEntries pages through a session's whole log, every kind of
// entry with its seq (recall.Entry's JSON): after=SEQ continues after
// the last seq of the previous page. subpath= reads a subagent record's
// log instead.
func (s *Server) sessionEntries(w http.ResponseWriter, r *http.Request) error {
	key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	if _, err := s.stat(r.Context(), key); isTrashed(err) {
		return sessionErr(err, key) // the session, or its records
	}
	if sub := r.URL.Query().Get("subpath"); sub != "" {
		key.Subpath = sub
		if key.Validate() != nil {
			return invalidParam("subpath", "Invalid subpath %q.", shorten(sub))
		}
	}
	after, err := intParam(r, "after", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", defaultEntriesLimit, 1, maxEntriesLimit)
	if err != nil {
		return err
	}
	es, err := s.store.Entries(r.Context(), key, after, int(limit)+1)
	if err != nil {
		return sessionErr(err, key)
	}
	more := len(es) > int(limit)
	if more {
		es = es[:limit]
	}
	if es == nil {
		es = []recall.Entry{}
	}
	var last int64
	if len(es) > 0 {
		last = es[len(es)-1].Seq
	}
	writeJSON(w, http.StatusOK, struct {
		Object  string         `json:"object"`
		Data    []recall.Entry `json:"data"`
		LastSeq int64          `json:"last_seq"`
		HasMore bool           `json:"has_more"`
	}{"list", es, last, more})
	return nil
}

// exportItems streams the view of key as one list (writeList's
// envelope), oldest first, reading it a page at a time (recall.StoreSession.ReadItems)
// and writing each page before the next is read, so the memory it holds
// does not grow with the session. The first page is read before anything
// is written, so a store failing then is still a clean error; a page that
// fails later cuts the connection (half a list is not a list).
func (s *Server) exportItems(w http.ResponseWriter, r *http.Request, key recall.Key) error {
	ctx := r.Context()
	opts := recall.ItemPageOptions{Oldest: true, Limit: exportPage}
	page, err := recall.NewSession(s.store, key).ReadItems(ctx, opts)
	if err != nil {
		return sessionErr(err, key)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="`+key.Session+`.json"`)
	w.WriteHeader(http.StatusOK)
	b := append(make([]byte, 0, 64<<10), `{"object":"list","data":[`...)
	var first, last []byte // the ids, as JSON strings
	for n := 0; ; {
		for _, l := range page.Items {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			h := headOf(l.Item)
			b = appendShown(b, l, h)
			last = appendItemID(last[:0], h, l.Ref)
			if first == nil {
				first = slices.Clone(last)
			}
			if len(b) >= 32<<10 {
				if _, err := w.Write(b); err != nil {
					return nil // the client went away
				}
				b = b[:0]
			}
		}
		if !page.More {
			break
		}
		opts.After = page.Items[len(page.Items)-1].Ref
		if page, err = recall.NewSession(s.store, key).ReadItems(ctx, opts); err != nil {
			s.log.ErrorContext(ctx, "export cut short", "session", key.Session, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
	if first == nil {
		first, last = []byte(`""`), []byte(`""`)
	}
	b = append(b, `],"first_id":`...)
	b = append(b, first...)
	b = append(b, `,"last_id":`...)
	b = append(b, last...)
	b = append(b, `,"has_more":false}`+"\n"...)
	_, _ = w.Write(b)
	return nil
}

// exportPage is how many entries a JSONL export reads a time.
const exportPage = 1000

// exportSession answers the session as a file: format=json (the
// default) is the Conversations API's item list of its whole view, the
// items as GET /v1/conversations/{id}/items shows them, oldest first;
// format=jsonl is its raw entry log, one recall.Entry a line, lossless;
// format=markdown (or md) and format=html are the export package's
// readable renderings of its whole history, subagent records included.
func (s *Server) exportSession(w http.ResponseWriter, r *http.Request) (err error) {
	key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	if _, err := s.stat(r.Context(), key); err != nil {
		return sessionErr(err, key)
	}
	defer s.recordExport(r, key, &err)
	switch format := r.URL.Query().Get("format"); format {
	case "", "json":
		return s.exportItems(w, r, key)
	case "jsonl":
		return s.exportEntries(w, r, key)
	case "markdown", "md", "html":
		f, _ := export.ParseFormat(format)
		return sessionErr(s.streamExport(w, r, f, key, func(h http.Header) {
			ct := "text/markdown; charset=utf-8"
			if f == export.FormatHTML {
				// The page is self-contained and runs nothing; say so to
				// the browser too, whatever its own meta tag says.
				ct = "text/html; charset=utf-8"
				h.Set("Content-Security-Policy", export.CSP)
			}
			h.Set("Content-Type", ct)
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Content-Disposition", `attachment; filename="`+key.Session+f.Ext()+`"`)
		}), key)
	default:
		return invalidParam("format", "Unknown export format %q; use json, jsonl, markdown or html.", shorten(format))
	}
}

// exportEntries streams the raw entry log of key, one recall.Entry a
// line, a page of exportPage entries at a time. The first page is read
// before anything is written, so a missing session is still a clean 404.
func (s *Server) exportEntries(w http.ResponseWriter, r *http.Request, key recall.Key) error {
	ctx := r.Context()
	es, err := s.store.Entries(ctx, key, 0, exportPage)
	if err != nil {
		return sessionErr(err, key)
	}
	w.Header().Set("Content-Type", "application/jsonl")
	w.Header().Set("Content-Disposition", `attachment; filename="`+key.Session+`.jsonl"`)
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for len(es) > 0 {
		for _, e := range es {
			if err := enc.Encode(e); err != nil {
				return nil // the client went away
			}
		}
		if len(es) < exportPage {
			return nil
		}
		if es, err = s.store.Entries(ctx, key, es[len(es)-1].Seq, exportPage); err != nil {
			// Half a file is out: cut the connection rather than end
			// it as if the file were whole.
			s.log.ErrorContext(ctx, "export cut short", "session", key.Session, "err", err)
			panic(http.ErrAbortHandler)
		}
	}
	return nil
}

// forkRequest is the body of POST …/fork. At is where to fork: a JSON
// number is a seq of the log (the view as it stood after that entry), a
// string is an item id as the Conversations API shows it (the view up
// to and with that item; an item kept inside a compaction forks at the
// compaction, with every item it holds). Absent: the whole session.
type forkRequest struct {
	At    json.RawMessage `json:"at"`
	Title *string         `json:"title"`
}

// forkSession copies a session's view at a point into a new session of
// the same user and answers the new session (201).
func (s *Server) forkSession(w http.ResponseWriter, r *http.Request) error {
	var body forkRequest
	key, err := s.sessionBody(w, r, &body)
	if err != nil {
		return err
	}
	ctx := r.Context()
	m, err := s.stat(ctx, key)
	if err != nil {
		return sessionErr(err, key)
	}
	at, err := s.forkPoint(ctx, key, m.LastSeq, body.At)
	if err != nil {
		return err
	}
	if err := checkTitle(body.Title); err != nil {
		return err
	}
	newKey := recall.Key{Project: key.Project, Session: newConversationID()}
	fm, err := recall.NewSession(s.store, key).Fork(ctx, at, newKey)
	if err != nil {
		return sessionErr(err, key)
	}
	if body.Title != nil {
		if fm, err = recall.NewSession(s.store, newKey).SetTitle(ctx, *body.Title, recall.TitleUser); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusCreated, sessionOf(fm))
	return nil
}

// forkPoint returns the seq a fork of the session at key, whose last seq
// is last, is taken at, as the request's "at" names it (see forkRequest);
// 0 for the whole session.
func (s *Server) forkPoint(ctx context.Context, key recall.Key, last int64, raw json.RawMessage) (int64, error) {
	switch at := bytes.TrimSpace(raw); {
	case len(at) == 0 || string(at) == "null":
		return 0, nil
	case at[0] == '"':
		var id string
		if err := json.Unmarshal(at, &id); err != nil {
			return 0, invalidParam("at", "Invalid 'at': %v.", err)
		}
		l, err := s.findItem(ctx, key, id)
		var ae *APIError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Param == "item_id" {
			err = invalidParam("at", "No item with id %q in session %s.", shorten(id), key.Session)
		}
		if err != nil {
			return 0, sessionErr(err, key)
		}
		return l.Ref.Seq, nil
	default:
		n, err := strconv.ParseInt(string(at), 10, 64)
		if err != nil || n < 1 || n > last {
			return 0, invalidParam("at", "Invalid 'at': %s; a seq from 1 to %d, or an item id.", shorten(string(at)), last)
		}
		return n, nil
	}
}

// compactRequest is the body of POST …/compact; every field is optional.
type compactRequest struct {
	// Keep is the least number of newest items kept verbatim; 0 keeps
	// none beyond what keeps calls with their outputs. Default:
	// compact.DefaultKeepLast.
	Keep *int `json:"keep"`
	// Instructions is extra guidance for the summary.
	Instructions string `json:"instructions"`
}

// maxInstructionsLen bounds compaction instructions.
const maxInstructionsLen = 8 << 10

// compactSession compacts a session with Options.Compactor, as `recall
// compact` does, and answers what it did.
func (s *Server) compactSession(w http.ResponseWriter, r *http.Request) error {
	var body compactRequest
	key, err := s.sessionBody(w, r, &body)
	if err != nil {
		return err
	}
	if s.opts.Compactor == nil {
		return &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "no_model", NoRetry: true,
			Message: "Compaction needs a model, and this server has none configured (start recall serve with a model: OPENAI_API_KEY, OPENAI_BASE_URL, --model)."}
	}
	args, err := body.args()
	if err != nil {
		return err
	}
	ctx := r.Context()
	if _, err := s.stat(ctx, key); err != nil {
		return sessionErr(err, key)
	}
	res, err := compact.NewSession(s.store, key, s.opts.Compactor, compact.Options{}).RunCompaction(ctx, args)
	switch {
	case errors.Is(err, recall.ErrNotFound):
		return sessionNotFound(key.Session)
	case errors.Is(err, recall.ErrConflict):
		return &APIError{Status: http.StatusConflict, Type: "invalid_request_error", Code: "conflict",
			Message: "The session kept changing while it was compacted; try again."}
	case err != nil:
		s.log.ErrorContext(ctx, "compaction failed", "session", key.Session, "err", err)
		return &APIError{Status: http.StatusBadGateway, Type: "server_error", Code: "model_error",
			Message: fmt.Sprintf("The model could not compact the session: %v", err)}
	}
	writeJSON(w, http.StatusOK, struct {
		Object string `json:"object"`
		ID     string `json:"id"`
		agent.CompactionResult
	}{"session.compaction", key.Session, res})
	return nil
}

// args returns the compaction the request asks for, forced.
func (c compactRequest) args() (agent.CompactionArgs, error) {
	args := agent.CompactionArgs{Force: true, Instructions: c.Instructions} // KeepLast 0: the default
	if c.Keep != nil {
		switch k := *c.Keep; {
		case k < 0 || k > 1<<20:
			return args, invalidParam("keep", "Invalid 'keep': %d; expected 0 or more.", k)
		case k == 0:
			args.KeepLast = -1 // CompactionArgs: negative keeps none
		default:
			args.KeepLast = k
		}
	}
	if len(c.Instructions) > maxInstructionsLen || strings.ContainsRune(c.Instructions, 0) {
		return args, invalidParam("instructions", "The instructions are longer than %d bytes or hold a NUL.", maxInstructionsLen)
	}
	return args, nil
}

// streamExport writes the export of key in format f to w as the export
// package reads it (export.Stream), the headers set by headers sent with
// its first byte. It returns an error only when nothing was sent yet:
// the caller answers it, a missing session as 404. After the first byte
// an error can only end the response: it is logged (unless the client
// went away) and the connection is cut, so the client sees a broken
// download rather than a short one that looks whole.
func (s *Server) streamExport(w http.ResponseWriter, r *http.Request, f export.Format, key recall.Key, headers func(http.Header)) error {
	ctx := r.Context()
	ew := &exportWriter{w: w, headers: headers}
	err := export.Stream(ctx, ew, f, s.store, key)
	switch {
	case err == nil:
		ew.start() // an empty export still gets its headers
		return nil
	case !ew.started:
		return err
	case ew.err != nil || errors.Is(err, context.Canceled):
		return nil // the client went away: there is nobody to tell
	}
	s.log.ErrorContext(ctx, "export cut short", "session", key.Session, "format", string(f), "err", err)
	panic(http.ErrAbortHandler)
}

// exportWriter sends an export's headers and status with its first byte,
// and remembers the first error of the connection.
type exportWriter struct {
	w       http.ResponseWriter
	headers func(http.Header)
	started bool
	err     error
}

func (ew *exportWriter) start() {
	if !ew.started {
		ew.started = true
		ew.headers(ew.w.Header())
		ew.w.WriteHeader(http.StatusOK)
	}
}

func (ew *exportWriter) Write(p []byte) (int, error) {
	ew.start()
	n, err := ew.w.Write(p)
	if err != nil && ew.err == nil {
		ew.err = err
	}
	return n, err
}
