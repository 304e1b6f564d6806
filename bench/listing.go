package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/recallkit/recall"
)

// runW3 lists the first page of a big and a small project.
func runW3(ctx context.Context, h *harness, w *workload) {
	bigCold, bigWarm, smallCold := w.metrics[0], w.metrics[1], w.metrics[2]
	entrants := h.participants(w)
	for i, n := range h.cfg.listSessions {
		scope := fmt.Sprintf("list%d", n)
		ms := []metric{bigCold, bigWarm}
		if i > 0 {
			ms = []metric{smallCold}
		}
		setupList(ctx, h, entrants, scope, n, ms)
		listRuns(ctx, h, entrants, scope, n, ms, bigWarm)
		if i == 0 {
			copyStateless(h, entrants, bigCold, bigWarm)
		}
		for _, e := range entrants {
			h.dropLogged(ctx, e, scope)
		}
	}
}

// listRuns measures cfg.runs runs of every metric of ms on the first page
// of scope, which holds n sessions: the metric warm on the subject already
// open, the others cold. A stateless entrant sits warm out (see
// copyStateless).
func listRuns(ctx context.Context, h *harness, entrants []*entrant, scope string, n int, ms []metric, warm metric) {
	want := h.firstPage(n)
	for range h.cfg.runs {
		for _, m := range ms {
			isWarm := m == warm
			var es []*entrant
			for _, e := range entrants {
				if isWarm && (e.stateless || h.failed(e, m) || h.sub(ctx, e, scope, m) == nil) {
					continue
				}
				es = append(es, e)
			}
			h.interleave(es, m, func(e *entrant, _ int) (time.Duration, error) {
				return timed(func() error { return listOnce(ctx, h, e, scope, isWarm, want) })
			})
		}
	}
}

// copyStateless gives every stateless entrant its cold list's runs as its
// warm list's: it keeps nothing, so the two are the same operation.
func copyStateless(h *harness, entrants []*entrant, cold, warm metric) {
	for _, e := range entrants {
		if e.stateless {
			c := h.cell(cold, e)
			*h.cell(warm, e) = cell{runs: c.runs, na: c.na, err: c.err}
		}
	}
}

// firstPage is the page a list of a scope of n sessions must return: the
// newest first.
func (h *harness) firstPage(n int) []string {
	want := make([]string, 0, h.cfg.pageSize)
	for j := n - 1; j >= 0 && len(want) < h.cfg.pageSize; j-- {
		want = append(want, listSessionID(j))
	}
	return want
}

// listItems returns the items of list session i. Sessions start at
// different turns, so their titles differ.
func (h *harness) listItems(i int) []recall.Item {
	return h.corpus.session(h.cfg.listItems + i%poolSize)[i%poolSize:]
}

func listSessionID(i int) string { return fmt.Sprintf("s%06d", i) }

// setupWorkers is how many goroutines write one contender's W3 sessions
// (the contenders set up at the same time).
const setupWorkers = 4

// setupList writes n sessions of cfg.listItems items each into scope and
// closes the subject, so that a cold list opens it anew. The contenders
// that own W3 data set up at the same time. A listSeeder gets the sessions
// from setupWorkers goroutines, session i stamped i ms after the first; any
// other subject gets them in order, one save each.
func setupList(ctx context.Context, h *harness, entrants []*entrant, scope string, n int, ms []metric) {
	base := time.Now().UTC().Add(-time.Duration(n) * time.Millisecond).Truncate(time.Millisecond)
	owners := slices.DeleteFunc(slices.Clone(entrants), func(e *entrant) bool { return e.listData != "" })
	eachConcurrently(owners, func(e *entrant) {
		s := h.sub(ctx, e, scope, ms...)
		if s == nil {
			return
		}
		start := time.Now()
		var err error
		if ls, ok := s.(listSeeder); ok {
			err = parallel(n, setupWorkers, func(i int) error {
				return ls.seedAt(ctx, listSessionID(i), h.listItems(i), base.Add(time.Duration(i)*time.Millisecond))
			})
		} else {
			for i := 0; i < n && err == nil; i++ {
				err = s.append(ctx, listSessionID(i), h.listItems(i))
			}
		}
		err = errors.Join(err, s.close())
		delete(e.subs, scope)
		if !h.fail(e, err, ms...) {
			h.logf("  set-up: %s: %s sessions in %v", e.name, thousands(n), time.Since(start).Round(time.Millisecond))
		}
	})
	flushDisks()
}

// parallel calls f(0) ... f(n-1) from workers goroutines and returns the
// first error; after an error no new call starts.
func parallel(n, workers int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil || i >= n
				mu.Unlock()
				if stop {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

// listOnce lists the first page and checks it. Cold, it opens the scope
// and closes it after; warm, it lists on the subject already open.
func listOnce(ctx context.Context, h *harness, e *entrant, scope string, warm bool, want []string) error {
	s := e.subs[scope]
	if !warm {
		var err error
		if s, err = e.open(ctx, scope); err != nil {
			return err
		}
	}
	ids, err := s.list(ctx, h.cfg.pageSize)
	if !warm {
		if cerr := s.close(); err == nil {
			err = cerr
		}
	}
	if err != nil || e.noListCheck {
		return err
	}
	if !slices.Equal(ids, want) {
		return fmt.Errorf("list: got %d sessions starting %q, want %q", len(ids), ids[:min(3, len(ids))], want[:min(3, len(want))])
	}
	return nil
}
