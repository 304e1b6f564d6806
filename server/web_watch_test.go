package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
)

// liveEnv is a server over a counting memory store whose pollers of live
// pages poll only when the test kicks them (watch.kick).
func liveEnv(t *testing.T) (*env, *countingStore) {
	old := livePoll
	livePoll = time.Hour
	t.Cleanup(func() { livePoll = old })
	st := &countingStore{Store: memstore.New(memstore.Options{})}
	return newEnv(t, st, Options{RateLimit: -1}, nil), st
}

// TestLiveWatchersShared opens a thousand live streams (two hundred under
// -short) on ten sessions: each poll costs the store one Stat per session,
// whatever the number of pages; a write reaches every page; and when the
// pages close, the pollers stop and the goroutines return to their number
// before.
func TestLiveWatchersShared(t *testing.T) {
	ctx := context.Background()
	e, st := liveEnv(t)
	alice := User{Name: "alice"}
	const sessions = 10
	pages := testkit.Size(200, 1000)
	var keys []recall.Key
	for i := range sessions {
		k := recall.Key{Project: alice.Project(), Session: fmt.Sprintf("conv_live%d", i)}
		if _, err := recall.NewSession(st, k).Create(ctx, recall.CreateOptions{Items: []recall.Item{recall.Message("user", "start")}}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}

	// Open the pages' streams; each counts the items events it reads.
	baseline := runtime.NumGoroutine()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1}}
	streamCtx, closeStreams := context.WithCancel(ctx)
	defer closeStreams()
	var got atomic.Int64 // pages that received the item written below
	done := make(chan struct{}, pages)
	for i := range pages {
		req, _ := http.NewRequestWithContext(streamCtx, "GET", e.ts.URL+"/s/"+keys[i%sessions].Session+"/events", nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: e.tokens["alice"]})
		res, err := client.Do(req) // returns once subscribed: the head comes after
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK {
			t.Fatalf("page %d: status %d", i, res.StatusCode)
		}
		go func() {
			defer func() { res.Body.Close(); done <- struct{}{} }()
			sc := bufio.NewScanner(res.Body)
			for sc.Scan() {
				if sc.Text() == "event: items" {
					got.Add(1)
				}
			}
		}()
	}
	watchers := func() []*watch {
		e.srv.watches.mu.Lock()
		defer e.srv.watches.mu.Unlock()
		var ws []*watch
		for _, w := range e.srv.watches.w {
			ws = append(ws, w)
		}
		return ws
	}
	if n := len(watchers()); n != sessions {
		t.Fatalf("%d pollers for %d pages on %d sessions, want one a session", n, pages, sessions)
	}

	// Three polls of every session: three Stats a session, nothing more.
	st.sessionStats.Store(0)
	for round := int64(1); round <= 3; round++ {
		for _, w := range watchers() {
			w.kick <- struct{}{}
		}
		testkit.Eventually(t, 10*time.Second, "a poll of every session", func() bool { return st.sessionStats.Load() >= round*sessions })
	}
	if n := st.sessionStats.Load(); n != 3*sessions {
		t.Fatalf("three polls of %d sessions watched by %d pages: %d Stats, want %d", sessions, pages, n, 3*sessions)
	}

	// A write to every session reaches every page at the next poll.
	for _, k := range keys {
		if _, err := st.Append(ctx, k, recall.Guard{}, recall.Message("assistant", "new").Entry()); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range watchers() {
		w.kick <- struct{}{}
	}
	testkit.Eventually(t, 30*time.Second, "the new item on every page", func() bool { return got.Load() == int64(pages) })

	// The pages close; at their next poll the pollers find no one and stop.
	closeStreams()
	for range pages {
		<-done
	}
	testkit.Eventually(t, 10*time.Second, "every stream's handler to return", func() bool {
		ws := watchers()
		for _, w := range ws {
			select {
			case w.kick <- struct{}{}:
			default:
			}
		}
		return len(ws) == 0
	})
	// The server's goroutines (a poller a session, a handler a page) and
	// the client's are all gone.
	testkit.Eventually(t, 10*time.Second, "the goroutines to return to their number before the pages opened", func() bool {
		return runtime.NumGoroutine() <= baseline
	})
}

// TestLiveStalled: when the store fails, the page is told (a stalled
// event) and the server logs it once; when the store is back, the page
// gets the items it missed.
func TestLiveStalled(t *testing.T) {
	ctx := context.Background()
	e, st := liveEnv(t)
	k := recall.Key{Project: User{Name: "alice"}.Project(), Session: "conv_stalled"}
	if _, err := recall.NewSession(st, k).Create(ctx, recall.CreateOptions{Items: []recall.Item{recall.Message("user", "start")}}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", e.ts.URL+"/s/"+k.Session+"/events", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: e.tokens["alice"]})
	res, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				events <- ev
			}
		}
		close(events)
	}()
	kick := func() {
		e.srv.watches.mu.Lock()
		w := e.srv.watches.w[k]
		e.srv.watches.mu.Unlock()
		w.kick <- struct{}{}
	}
	next := func(want string) {
		t.Helper()
		select {
		case ev := <-events:
			if ev != want {
				t.Fatalf("event %q, want %q", ev, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s event", want)
		}
	}
	st.failStats.Store(true)
	kick()
	next("stalled")
	kick() // failing again: nothing new to say
	if _, err := st.Append(ctx, k, recall.Guard{}, recall.Message("assistant", "written meanwhile").Entry()); err != nil {
		t.Fatal(err)
	}
	st.failStats.Store(false)
	kick()
	next("items")
	next("meta")
	if n := strings.Count(e.log.String(), "live updates: reading the session failed"); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, e.log.String())
	}
}
