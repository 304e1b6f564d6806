package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/recallkit/recall"
)

// Idempotency keys.
//
// A POST that carries an Idempotency-Key header is done once per user and
// key: sent again within IdempotencyTTL (a retry after a lost response,
// on this server or any other over the same store) it gets the first
// response, status and body, replayed with the header
// Idempotent-Replayed: true, and writes nothing.
//
// The record lives in the store, so every replica sees it: a session of
// the reserved project IdempotencyProject whose ID is a hash of the user
// and the key. Its newest item is its state:
//
//  1. reserved: written before the handler runs, by Create (IfNew) for a
//     new key, or by an append guarded by the record's last seq when an
//     old record is taken over. Of two requests racing with one key,
//     exactly one reserves; the other waits up to idempotencyWait for the
//     first to finish and replays its result, or, if it is still running,
//     gets a 409 the SDKs retry (x-should-retry is not set to false).
//  2. result: the handler's status and body, appended (guarded by the
//     reservation's seq) when the outcome is final: a 2xx or a 4xx other
//     than 408, 409 and 429. A body over idemChunk bytes is written as
//     "chunk" items of idemChunk bytes, in the same batch just before the
//     result, which holds their number, the body's size and its SHA-256:
//     an answer of any size the server can send (a write of many MiB
//     echoes them) is kept in items far below any store's item limit, so
//     a retry of a large write gets its answer too, and never runs it
//     again.
//  3. released: appended instead when the outcome says to try again (408,
//     409, 429, 5xx), so a retry runs the request anew.
//
// A record whose newest item is older than IdempotencyTTL is ignored and
// taken over by the next request with the key. A reservation that got no
// outcome within idempotencyPending (its server died mid-request) is
// taken over too; if that server had written before it died, the retry
// writes again: the one case where a retry can duplicate. Records idle
// for twice the TTL are removed by an occasional sweep (recall.Cleanup of
// the project, run after about one new reservation in idempotencySweepEvery).
//
// The same key with a different request (method, path, query or body) is
// a 400: a key names one request.

// IdempotencyProject is the store project that holds idempotency records.
const IdempotencyProject = ReservedPrefix + "idempotency"

// IdempotencyTTL is how long a request's result is replayed for its key.
const IdempotencyTTL = 24 * time.Hour

const (
	// idempotencyPending is how long a reservation may wait for its
	// outcome before another request with the key may take it over: far
	// longer than any request runs.
	idempotencyPending = 2 * time.Minute
	// idempotencyWait is how long a request waits for a concurrent one
	// with the same key before it answers 409.
	idempotencyWait = 3 * time.Second
	// idempotencySweepEvery is the inverse of the chance that a new
	// reservation starts a sweep of old records.
	idempotencySweepEvery = 1000
	// maxIdempotencyKeyLen bounds the header's value.
	maxIdempotencyKeyLen = 255
)

// idemChunk is the most of a result's body one item of its record holds
// (see above): base64 makes it about 350 KiB of JSON.
const idemChunk = 256 << 10

// idemRecord is one item of an idempotency record.
type idemRecord struct {
	State       string    `json:"state"` // "reserved", "result", "released" or "chunk"
	At          time.Time `json:"at"`
	Fingerprint string    `json:"fingerprint"`
	Status      int       `json:"status,omitempty"`
	ContentType string    `json:"content_type,omitempty"`
	// Body is the answer's body, or a chunk's part of it; a result whose
	// body is in chunks has none, but their number, and the body's size
	// and SHA-256 (hex).
	Body   []byte `json:"body,omitempty"`
	Chunks int    `json:"chunks,omitempty"`
	Size   int    `json:"size,omitempty"`
	Digest string `json:"digest,omitempty"`
}

// resultEntries returns the entries that record a final answer: the
// result item, after its body's chunks when it is over idemChunk bytes.
func resultEntries(out idemRecord) []recall.Entry {
	if len(out.Body) <= idemChunk {
		return []recall.Entry{out.item().Entry()}
	}
	body := out.Body
	sum := sha256.Sum256(body)
	out.Body, out.Size, out.Digest = nil, len(body), hex.EncodeToString(sum[:])
	var es []recall.Entry
	for len(body) > 0 {
		n := min(len(body), idemChunk)
		es = append(es, idemRecord{State: "chunk", At: out.At, Fingerprint: out.Fingerprint, Body: body[:n]}.item().Entry())
		body = body[n:]
	}
	out.Chunks = len(es)
	return append(es, out.item().Entry())
}

// errBadRecord reports a result whose chunks are not the body it
// describes.
var errBadRecord = errors.New("server: idempotency record: the chunks of a result do not make its body")

// loadChunks fills in the body of rec, a result in chunks, the newest
// item of the record at rk whose seq is at: it reads the chunks, and
// reports false when the record has changed since (read it again).
func (s *Server) loadChunks(ctx context.Context, rk recall.Key, at recall.ItemRef, rec *idemRecord) (bool, error) {
	live, _, err := s.store.Items(ctx, rk, rec.Chunks+1)
	if err != nil {
		return false, err
	}
	if len(live) == 0 || live[len(live)-1].Ref != at {
		return false, nil
	}
	if len(live) != rec.Chunks+1 {
		return false, errBadRecord
	}
	body := make([]byte, 0, rec.Size)
	for _, l := range live[:rec.Chunks] {
		var c idemRecord
		if err := json.Unmarshal(l.Item, &c); err != nil || c.State != "chunk" {
			return false, errBadRecord
		}
		body = append(body, c.Body...)
	}
	if sum := sha256.Sum256(body); len(body) != rec.Size || hex.EncodeToString(sum[:]) != rec.Digest {
		return false, errBadRecord
	}
	rec.Body = body
	return true, nil
}

func (rec idemRecord) item() recall.Item {
	b, _ := json.Marshal(rec) // the record always marshals
	return b
}

// idempotent wraps a POST handler with Idempotency-Key handling (see
// above). A request without the header, or not a POST, goes straight to
// h. With the header, h's answer, an error it returns included (written
// by the api adapter), is recorded as it goes out.
func (s *Server) idempotent(h handlerFunc) handlerFunc {
	answer := s.api(h)
	return func(w http.ResponseWriter, r *http.Request) error {
		key := r.Header.Get("Idempotency-Key")
		if key == "" || r.Method != http.MethodPost {
			return h(w, r)
		}
		if len(key) > maxIdempotencyKeyLen {
			return invalidParam("Idempotency-Key", "The Idempotency-Key header is longer than %d bytes.", maxIdempotencyKeyLen)
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody()))
		if err != nil {
			return bodyError(err, s.maxBody())
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		u, _ := userFrom(r.Context())
		rk := idempotencyKey(u.Name, key)
		fp := fingerprint(r, body)

		seq, replay, err := s.reserve(r.Context(), rk, fp)
		if err != nil {
			return err
		}
		if replay != nil {
			w.Header().Set("Content-Type", replay.ContentType)
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(replay.Status)
			_, _ = w.Write(replay.Body)
			return nil
		}

		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		panicked := true
		defer func() {
			if panicked { // release the key for a retry; the panic goes on to the recovery middleware
				s.recordOutcome(r, rk, seq, idemRecord{State: "released", At: time.Now().UTC(), Fingerprint: fp})
			}
		}()
		answer(rec, r)
		panicked = false

		out := idemRecord{State: "released", At: time.Now().UTC(), Fingerprint: fp}
		if final(rec.status) {
			out.State, out.Status, out.ContentType, out.Body = "result", rec.status, rec.Header().Get("Content-Type"), rec.body.Bytes()
		}
		s.recordOutcome(r, rk, seq, out)
		return nil
	}
}

// recordOutcome appends a request's outcome to its record, guarded by the
// seq of its reservation. It is written even when the client has gone:
// the client's retry must find it.
func (s *Server) recordOutcome(r *http.Request, rk recall.Key, seq int64, out idemRecord) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
	defer cancel()
	if _, err := s.store.Append(ctx, rk, recall.IfLastSeq(seq), resultEntries(out)...); err != nil {
		s.log.ErrorContext(ctx, "idempotency: recording the outcome failed; a retry will run the request again",
			"route", r.Pattern, "state", out.State, "status", out.Status, "err", err)
	}
}

// final reports whether a response with status is the request's outcome
// for good, to be replayed, rather than one a retry may change.
func final(status int) bool {
	switch {
	case status >= 500, status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooManyRequests:
		return false
	}
	return true
}

// idempotencyKey returns the record's key for a user's Idempotency-Key.
func idempotencyKey(user, key string) recall.Key {
	sum := sha256.Sum256([]byte(user + "\x00" + key))
	return recall.Key{Project: IdempotencyProject, Session: "k" + hex.EncodeToString(sum[:])}
}

// fingerprint identifies the request a key was first used with.
func fingerprint(r *http.Request, body []byte) string {
	h := sha256.New()
	h.Write([]byte(r.Method + " " + r.URL.EscapedPath() + "?" + r.URL.RawQuery + "\n"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// reserve makes the request the one that runs for its key, returning the
// seq of its reservation; or returns the result to replay.
func (s *Server) reserve(ctx context.Context, rk recall.Key, fp string) (int64, *idemRecord, error) {
	deadline := time.Now().Add(idempotencyWait)
	for {
		live, last, err := s.store.Items(ctx, rk, 1)
		if err != nil {
			return 0, nil, err
		}
		now := time.Now().UTC()
		mine := idemRecord{State: "reserved", At: now, Fingerprint: fp}
		if last == 0 {
			m, err := recall.NewSession(s.store, rk).Create(ctx, recall.CreateOptions{Items: []recall.Item{mine.item()}})
			if errors.Is(err, recall.ErrConflict) {
				continue // another request reserved it first
			}
			if err != nil {
				return 0, nil, err
			}
			if rand.IntN(idempotencySweepEvery) == 0 {
				s.background(s.sweepIdempotency)
			}
			return m.LastSeq, nil, nil
		}
		var rec idemRecord
		var at recall.ItemRef
		if len(live) == 1 {
			_ = json.Unmarshal(live[0].Item, &rec) // a bad record is taken over below
			at = live[0].Ref
		}
		age := now.Sub(rec.At)
		switch {
		case rec.At.IsZero(), age > IdempotencyTTL, rec.State == "released",
			rec.State == "reserved" && age > idempotencyPending:
			n, err := s.store.Append(ctx, rk, recall.IfLastSeq(last), mine.item().Entry())
			if errors.Is(err, recall.ErrConflict) || errors.Is(err, recall.ErrNotFound) {
				continue // changed or swept meanwhile: look again
			}
			if err != nil {
				return 0, nil, err
			}
			return n, nil, nil
		case rec.Fingerprint != fp:
			return 0, nil, &APIError{
				Status:  http.StatusBadRequest,
				Message: "This Idempotency-Key was already used with a different request; a key names one request (method, path and body).",
				Type:    "invalid_request_error",
				Param:   "Idempotency-Key",
				Code:    "idempotency_key_reused",
			}
		case rec.State == "result" && rec.Chunks > 0:
			same, err := s.loadChunks(ctx, rk, at, &rec)
			if err != nil {
				return 0, nil, err
			}
			if same {
				return 0, &rec, nil
			}
			continue // taken over meanwhile: look again
		case rec.State == "result":
			return 0, &rec, nil
		}
		// Reserved by a request still running: wait for its outcome.
		if time.Now().After(deadline) {
			return 0, nil, &APIError{
				Status:  http.StatusConflict,
				Message: "A request with this Idempotency-Key is still in progress; retry it shortly.",
				Type:    "invalid_request_error",
				Param:   "Idempotency-Key",
				Code:    "idempotency_key_in_use",
			}
		}
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sweepIdempotency removes the records idle for twice IdempotencyTTL.
func (s *Server) sweepIdempotency(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rep, err := recall.Cleanup(ctx, s.store, recall.CleanupOptions{
		OlderThan: time.Now().Add(-2 * IdempotencyTTL),
		Project:   IdempotencyProject,
		Purge:     true, // the server's own records, not users' sessions: no trash
	})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return // the server is closing
		}
		s.log.WarnContext(ctx, "idempotency: sweeping old records failed", "err", err)
		return
	}
	s.log.DebugContext(ctx, "idempotency: swept old records", "removed", strconv.Itoa(len(rep.Removed)))
}

// recorder passes a response through and keeps a copy of its status,
// and body for the idempotency record.
type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
	body   bytes.Buffer
}

func (rec *recorder) WriteHeader(status int) {
	if !rec.wrote {
		rec.status, rec.wrote = status, true
	}
	rec.ResponseWriter.WriteHeader(status)
}

func (rec *recorder) Write(b []byte) (int, error) {
	rec.wrote = true
	rec.body.Write(b)
	return rec.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer underneath.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }
