package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server"
)

// failingEntries is a store whose Entries fails from its failAt-th call
// on (counting from 1; 0 never fails).
type failingEntries struct {
	recall.Store
	calls, failAt atomic.Int64
}

var errDiskGone = errors.New("the disk went away")

func (s *failingEntries) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	if n := s.calls.Add(1); s.failAt.Load() > 0 && n >= s.failAt.Load() {
		return nil, errDiskGone
	}
	return s.Store.Entries(ctx, key, after, limit)
}

// The export routes stream: the body is the export package's bytes, the
// headers come before it, a missing session or a store failing before
// the first byte is still an error answer, and a store failing after it
// cuts the connection and is logged.
func TestExportStreams(t *testing.T) {
	ctx := context.Background()
	st := &failingEntries{Store: memstore.New(memstore.Options{})}
	log := &testkit.SyncBuffer{}
	h, err := server.New(ctx, st, server.Options{Logger: slog.New(slog.NewTextHandler(log, nil)), RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	tok, _, err := server.CreateToken(ctx, st, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	web := webClient(t, srv, tok)
	// 700 items of 1 KB: two pages of the log, and far more than one
	// buffer of output before the second page is read.
	key := recall.Key{Project: "user.alice", Session: "conv_big"}
	var items []recall.Item
	for i := range 700 {
		items = append(items, recall.Message([]string{"user", "assistant"}[i%2], fmt.Sprint(i, strings.Repeat(" lorem ipsum", 80))))
	}
	if _, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{Title: "Big", Items: items}); err != nil {
		t.Fatal(err)
	}
	sess, err := export.Load(ctx, st, key)
	if err != nil {
		t.Fatal(err)
	}

	type route struct {
		name, url string
		f         export.Format
		api       bool
	}
	var routes []route
	for _, f := range []export.Format{export.FormatMarkdown, export.FormatHTML} {
		routes = append(routes, route{"api " + string(f), "/api/v1/sessions/%s/export?format=" + string(f), f, true})
	}
	for _, f := range export.Formats {
		routes = append(routes, route{"web " + string(f), "/s/%s/export?format=" + string(f), f, false})
	}
	get := func(rt route, id string) (*http.Response, []byte, error) {
		req, _ := http.NewRequest("GET", srv.URL+fmt.Sprintf(rt.url, id), nil)
		c := web
		if rt.api {
			req.Header.Set("Authorization", "Bearer "+tok)
			c = srv.Client()
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		return res, body, err
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			st.calls.Store(0)
			st.failAt.Store(0)
			var want bytes.Buffer
			if err := export.Write(&want, rt.f, sess); err != nil {
				t.Fatal(err)
			}
			res, body, err := get(rt, key.Session)
			if err != nil || res.StatusCode != http.StatusOK || !bytes.Equal(body, want.Bytes()) {
				t.Fatalf("status %d, %d bytes (%v); want 200 and the %d bytes of export.Write", res.StatusCode, len(body), err, want.Len())
			}
			if cd := res.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") || !strings.Contains(cd, key.Session+rt.f.Ext()) {
				t.Errorf("Content-Disposition %q", cd)
			}
			if rt.f == export.FormatHTML && res.Header.Get("Content-Security-Policy") == "" || res.Header.Get("Content-Type") == "" {
				t.Errorf("headers %v", res.Header)
			}
			if calls := st.calls.Load(); calls < 2 {
				t.Errorf("the export read the log in %d Entries calls; want pages", calls)
			}

			if res, _, _ := get(rt, "conv_missing"); res.StatusCode != http.StatusNotFound {
				t.Errorf("a missing session: status %d, want 404", res.StatusCode)
			}

			st.calls.Store(0)
			st.failAt.Store(1)
			if res, body, _ := get(rt, key.Session); res.StatusCode != http.StatusInternalServerError || res.Header.Get("Content-Disposition") != "" {
				t.Errorf("the store failing at once: status %d, headers %v, body %.200s; want an error answer", res.StatusCode, res.Header, body)
			}

			// JSONL reads the log once, the others twice: fail the
			// second page of the last reading.
			st.calls.Store(0)
			st.failAt.Store(4)
			if rt.f == export.FormatJSONL {
				st.failAt.Store(2)
			}
			res, body, err = get(rt, key.Session)
			if res.StatusCode != http.StatusOK || err == nil || len(body) == 0 || len(body) >= want.Len() {
				t.Errorf("the store failing midway: status %d, %d of %d bytes, read error %v; want 200, part of the body, and a cut connection",
					res.StatusCode, len(body), want.Len(), err)
			}
			testkit.Eventually(t, 5*time.Second, "the cut export logged", func() bool {
				return strings.Contains(log.String(), "export cut short") && strings.Contains(log.String(), errDiskGone.Error())
			})
		})
	}
}

// TestExportJSONPages checks that the API's JSON export of a long session
// (the view as one list) is the whole view, in order, with its first and
// last ids, read from the store a page at a time rather than whole.
func TestExportJSONPages(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: memstore.New(memstore.Options{})}
	srv := serve(t, st)
	key := localKey("conv_long")
	const n = 2500
	items := make([]recall.Item, n)
	for i := range items {
		items[i] = recall.Message("user", fmt.Sprint("item ", i))
		if i%2 == 1 {
			items[i] = recall.Item(fmt.Sprintf(`{"type":"message","id":"msg_%d","role":"assistant","content":"item %d"}`, i, i))
		}
	}
	if _, err := st.Append(ctx, key, recall.IfNew(), recall.ItemEntries(items...)...); err != nil {
		t.Fatal(err)
	}
	st.calls.Store(0)
	st.items.Store(0)
	code, hdr, body := raw(t, srv, "GET", "/api/v1/sessions/conv_long/export", "")
	if code != http.StatusOK || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("export: %d %s", code, hdr.Get("Content-Type"))
	}
	var list struct {
		Object  string            `json:"object"`
		Data    []json.RawMessage `json:"data"`
		FirstID string            `json:"first_id"`
		LastID  string            `json:"last_id"`
		HasMore bool              `json:"has_more"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("export is not JSON: %v", err)
	}
	if list.Object != "list" || len(list.Data) != n || list.FirstID != "recall-1" || list.LastID != fmt.Sprint("msg_", n-1) || list.HasMore {
		t.Fatalf("export: %q, %d items, first %q, last %q, has_more %v", list.Object, len(list.Data), list.FirstID, list.LastID, list.HasMore)
	}
	for i, d := range list.Data {
		if got := recall.Item(d).Text(); got != fmt.Sprint("item ", i) {
			t.Fatalf("item %d is %s", i, d)
		}
	}
	if calls, read := st.calls.Load(), st.items.Load(); calls < 3 || read != n {
		t.Errorf("the export read %d items in %d calls; want %d in pages (3 or more calls)", read, calls, n)
	}
}
