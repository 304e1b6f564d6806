package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// TestIdempotencyRecordAges checks what an old record does to a request
// with its key: a result older than IdempotencyTTL is not replayed, a
// reservation abandoned longer than idempotencyPending is taken over, and
// a fresh reservation (a request still running) makes the request wait
// and then answer a 409 the SDKs retry.
func TestIdempotencyRecordAges(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	s, err := New(ctx, st, Options{Auth: AuthNone, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	post := func(key string) (int, http.Header, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/conversations", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(b)
	}
	// plant writes a record for key as if a request had left it.
	plant := func(key string, rec idemRecord) {
		rec.Fingerprint = fingerprint(httptest.NewRequest("POST", "/v1/conversations", nil), []byte(`{}`))
		if _, err := recall.NewSession(st, idempotencyKey(DefaultUser, key)).Create(ctx, recall.CreateOptions{Items: []recall.Item{rec.item()}}); err != nil {
			t.Fatal(err)
		}
	}
	conversations := func() int {
		p, err := st.List(ctx, User{Name: DefaultUser}.Project(), recall.ListOptions{Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		return len(p.Sessions)
	}

	// A result of yesterday is not replayed: the request runs.
	plant("old", idemRecord{State: "result", At: time.Now().Add(-IdempotencyTTL - time.Minute), Status: 200, ContentType: "application/json", Body: []byte(`{"id":"conv_old"}`)})
	status, hdr, body := post("old")
	if status != 200 || strings.Contains(body, "conv_old") || hdr.Get("Idempotent-Replayed") != "" || conversations() != 1 {
		t.Errorf("expired record: %d %s", status, body)
	}
	// ... and the new result is what the key replays now.
	status, hdr, again := post("old")
	if status != 200 || again != body || hdr.Get("Idempotent-Replayed") != "true" || conversations() != 1 {
		t.Errorf("replay after the takeover: %d %s, want %s", status, again, body)
	}

	// A result within the TTL is replayed as it was recorded.
	plant("recent", idemRecord{State: "result", At: time.Now().Add(-IdempotencyTTL + time.Minute), Status: 201, ContentType: "application/json", Body: []byte(`{"id":"conv_recent"}`)})
	if status, _, body := post("recent"); status != 201 || body != `{"id":"conv_recent"}` || conversations() != 1 {
		t.Errorf("recent record: %d %s", status, body)
	}

	// A reservation abandoned by a server that died is taken over.
	plant("abandoned", idemRecord{State: "reserved", At: time.Now().Add(-idempotencyPending - time.Second)})
	if status, _, body := post("abandoned"); status != 200 || !strings.Contains(body, `"conv_`) || conversations() != 2 {
		t.Errorf("abandoned reservation: %d %s", status, body)
	}

	// A request still running: wait, then a retryable 409.
	plant("running", idemRecord{State: "reserved", At: time.Now()})
	start := time.Now()
	status, hdr, body = post("running")
	if status != http.StatusConflict || hdr.Get("x-should-retry") == "false" || !strings.Contains(body, "still in progress") || conversations() != 2 {
		t.Errorf("running request: %d %s %v", status, body, hdr)
	}
	if waited := time.Since(start); waited < idempotencyWait {
		t.Errorf("answered after %v, want a wait of %v first", waited, idempotencyWait)
	}
}

// TestDerivedIDs checks the derived id form and that nothing else parses
// as one.
func TestDerivedIDs(t *testing.T) {
	for _, ref := range []recall.ItemRef{{Seq: 1}, {Seq: 42}, {Seq: 7, Index: 3}, {Seq: 1 << 40, Index: 1}} {
		id := derivedID(ref)
		if got, ok := parseDerivedID(id); !ok || got != ref {
			t.Errorf("%q parses as %v %v, want %v", id, got, ok, ref)
		}
	}
	if derivedID(recall.ItemRef{Seq: 12}) != "recall-12" || derivedID(recall.ItemRef{Seq: 12, Index: 2}) != "recall-12.2" {
		t.Errorf("the documented form changed")
	}
	for _, id := range []string{"", "recall-", "recall-0", "recall--1", "recall-007", "recall-+7", "recall-7.0", "recall-7.", "recall-7.x", "recall-7.1.1", "msg_1", "Recall-7", "recall-99999999999999999999"} {
		if ref, ok := parseDerivedID(id); ok {
			t.Errorf("%q parses as %v", id, ref)
		}
	}
}

// TestIdempotencyReleasesOnPanic checks that a handler that panics leaves
// its key released, so the retry runs at once instead of waiting for the
// reservation to be abandoned.
func TestIdempotencyReleasesOnPanic(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	s, err := New(context.Background(), st, Options{Auth: AuthNone, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	h := s.api(s.idempotent(func(w http.ResponseWriter, r *http.Request) error {
		runs++
		if runs == 1 {
			panic("handler bug")
		}
		writeJSON(w, http.StatusOK, map[string]int{"run": runs})
		return nil
	}))
	call := func() (rec *httptest.ResponseRecorder, panicked any) {
		defer func() { panicked = recover() }()
		req := httptest.NewRequest("POST", "/v1/conversations", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "k")
		req = req.WithContext(withUser(req.Context(), User{Name: DefaultUser}))
		rec = httptest.NewRecorder()
		h(rec, req)
		return rec, nil
	}
	if _, p := call(); p != "handler bug" {
		t.Fatalf("the panic did not go on: %v", p)
	}
	rec, p := call()
	if p != nil || rec.Code != 200 || !strings.Contains(rec.Body.String(), `"run":2`) {
		t.Errorf("the retry after a panic: %v %d %s", p, rec.Code, rec.Body)
	}
}

// TestIdempotencySweep checks that the sweep removes records idle for
// twice the TTL and keeps the others.
func TestIdempotencySweep(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	s, err := New(ctx, st, Options{Auth: AuthNone, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	plant := func(key string, at time.Time) recall.Key {
		rk := idempotencyKey("u", key)
		rec := idemRecord{State: "result", At: at, Status: 200, Body: []byte(`{}`)}
		if _, err := st.Import(ctx, rk,
			recall.Entry{Seq: 1, Kind: recall.KindCreate, Time: at},
			recall.Entry{Seq: 2, Kind: recall.KindItem, Time: at, Data: []byte(rec.item())}); err != nil {
			t.Fatal(err)
		}
		return rk
	}
	old := plant("old", time.Now().Add(-2*IdempotencyTTL-time.Hour))
	recent := plant("recent", time.Now().Add(-IdempotencyTTL-time.Hour))
	s.sweepIdempotency(ctx)
	if _, err := st.Stat(ctx, old); err == nil {
		t.Errorf("the sweep kept a record idle for 2 days and an hour")
	}
	if _, err := st.Stat(ctx, recent); err != nil {
		t.Errorf("the sweep removed a record idle for a day and an hour: %v", err)
	}
}

// TestCloseStopsBackgroundWork checks that Close cancels the work the
// server runs between requests (the idempotency sweep runs this way),
// waits for it to return, and that nothing starts after it.
func TestCloseStopsBackgroundWork(t *testing.T) {
	st := memstore.New(memstore.Options{})
	defer st.Close()
	s, err := New(context.Background(), st, Options{Auth: AuthNone, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	started, stopped := make(chan struct{}), make(chan struct{})
	s.background(func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		close(stopped)
	})
	<-started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Close returned before the background work did")
	}
	ran := make(chan struct{}, 1)
	s.background(func(context.Context) { ran <- struct{}{} })
	if err := s.Close(); err != nil { // waits for anything started
		t.Fatal(err)
	}
	if len(ran) != 0 {
		t.Fatal("background work started after Close")
	}
}
