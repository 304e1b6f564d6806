package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/recallkit/recall"
)

// workload is one table of the report.
type workload struct {
	id, title string
	// what says exactly what is measured.
	what    string
	metrics []metric
	run     func(ctx context.Context, h *harness, w *workload)
}

// workloads returns W1 to W6 sized by cfg, in report order. They run in
// another order (see runOrder): W2, W4 and W6 share the big session.
func workloads(cfg config) []*workload {
	bigList, smallList := cfg.listSessions[0], cfg.listSessions[1]
	return []*workload{{
		id:    "W1",
		title: "Chat turns",
		what: fmt.Sprintf("%d turns, each saved as the agent makes it: the user's message, then the tool call "+
			"with its output (one batch of 2), then the assistant's answer (%d saves, %d items of %d to %d "+
			"bytes). Every save is durable and timed on its own; the table gives the median over runs of "+
			"each run's p50 and p99 save latency.",
			cfg.turns, 3*cfg.turns, itemsPerTurn*cfg.turns, minItemSize, maxItemSize),
		metrics: []metric{{id: "W1 p50", label: "save p50"}, {id: "W1 p99", label: "save p99"}},
		run:     runW1,
	}, {
		id:    "W2",
		title: "Resume",
		what: fmt.Sprintf("Load a %s-item session in full, and load only its newest %d items, in the process "+
			"that keeps the store open (the OS page cache is warm).", thousands(cfg.bigItems), cfg.tailItems),
		metrics: []metric{{id: "W2 all", label: "load all"}, {id: "W2 tail", label: fmt.Sprintf("load last %d", cfg.tailItems)}},
		run:     runW2,
	}, {
		id:    "W3",
		title: "Session list",
		what: fmt.Sprintf("The first page (%d) of the session list of a project holding %s sessions of %d items, "+
			"then of one holding %s. *Cold* opens the store, lists and closes it, as `recall ls` does in a new "+
			"process; *warm* lists on a store that is already open. A contender that keeps no state lists the "+
			"same way in both and is measured once.", cfg.pageSize, thousands(bigList), cfg.listItems, thousands(smallList)),
		metrics: []metric{
			{id: "W3 big cold", label: fmt.Sprintf("%s cold", thousands(bigList))},
			{id: "W3 big warm", label: fmt.Sprintf("%s warm", thousands(bigList))},
			{id: "W3 small cold", label: fmt.Sprintf("%s cold", thousands(smallList))},
		},
		run: runW3,
	}, {
		id:      "W4",
		title:   "Fork",
		what:    fmt.Sprintf("Fork the whole %s-item session into a new session.", thousands(cfg.bigItems)),
		metrics: []metric{{id: "W4 fork", label: "fork"}},
		run:     runW4,
	}, {
		id:    "W5",
		title: "Concurrent writers",
		what: fmt.Sprintf("%d goroutines, each writing its own session: %d chat turns of 3 durable saves (%s items "+
			"in all), started together; items saved per second of wall time.",
			cfg.writers, cfg.writerTurns, thousands(cfg.writers*cfg.writerTurns*itemsPerTurn)),
		metrics: []metric{{id: "W5 rate", label: "items/s", rate: true}},
		run:     runW5,
	}, {
		id:    "W6",
		title: "Undo",
		what: fmt.Sprintf("PopItem on the %s-item session: remove the newest item and return it, durably. "+
			"Each pop is timed alone and its item is then saved back (not timed), so every pop is a single undo "+
			"on the whole session.", thousands(cfg.bigItems)),
		metrics: []metric{{id: "W6 pop", label: "pop"}},
		run:     runW6,
	}}
}

// runOrder is the order workloads run in: the writers first, then the three
// that share the big session (W6 last, as it shrinks it), then the lists.
var runOrder = []string{"W1", "W5", "W2", "W4", "W6", "W3"}

// bigScope holds the big session of W2, W4 and W6.
const (
	bigScope   = "big"
	bigSession = "big-session"
)

// runW1 times every save of cfg.turns chat turns, in a new session per run.
func runW1(ctx context.Context, h *harness, w *workload) {
	p50, p99 := w.metrics[0], w.metrics[1]
	entrants := h.participants(w)
	for run := range h.cfg.runs {
		for _, e := range entrants {
			s := h.sub(ctx, e, "w1", p50, p99)
			if s == nil || h.failed(e, p50, p99) {
				continue
			}
			session := fmt.Sprintf("w1-run%d", run)
			lat := make([]time.Duration, 0, 3*h.cfg.turns)
			var err error
			for t := 0; t < h.cfg.turns && err == nil; t++ {
				for _, save := range h.corpus.turn(t) {
					start := time.Now()
					if err = s.append(ctx, session, save); err != nil {
						break
					}
					lat = append(lat, time.Since(start))
				}
			}
			if err == nil && run == 0 {
				err = verifyLoad(ctx, s, session, 0, h.corpus.session(itemsPerTurn*h.cfg.turns))
				if naReason(err) != "" {
					err = nil // a floor that cannot read back
				}
			}
			if h.fail(e, err, p50, p99) {
				continue
			}
			h.record(p50, e, percentile(lat, 0.50))
			h.record(p99, e, percentile(lat, 0.99))
		}
	}
	for _, e := range entrants {
		h.dropLogged(ctx, e, "w1")
	}
}

// runW5 runs cfg.writers concurrent writers, each on its own session.
func runW5(ctx context.Context, h *harness, w *workload) {
	rate := w.metrics[0]
	items := h.cfg.writers * h.cfg.writerTurns * itemsPerTurn
	entrants := h.participants(w)
	for run := range h.cfg.runs {
		for _, e := range entrants {
			s := h.sub(ctx, e, "w5", rate)
			if s == nil || h.failed(e, rate) {
				continue
			}
			var (
				wg   sync.WaitGroup
				mu   sync.Mutex
				errs []error
			)
			start := time.Now()
			for wr := range h.cfg.writers {
				session := fmt.Sprintf("w5-run%d-writer%d", run, wr)
				wg.Go(func() {
					for t := range h.cfg.writerTurns {
						for _, save := range h.corpus.turn(wr*h.cfg.writerTurns + t) {
							if err := s.append(ctx, session, save); err != nil {
								mu.Lock()
								errs = append(errs, err)
								mu.Unlock()
								return
							}
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			if len(errs) > 0 {
				h.fail(e, errs[0], rate)
				continue
			}
			h.record(rate, e, elapsed/time.Duration(items))
		}
	}
	for _, e := range entrants {
		h.dropLogged(ctx, e, "w5")
	}
}

// big returns e's subject holding the big session, writing the session the
// first time: in one call when the subject is a seeder, else in saves of
// 100 items (set-up is not timed). A failure is
// remembered and returned again.
func (h *harness) big(ctx context.Context, e *entrant) (subject, error) {
	if e.bigDone || e.bigErr != nil {
		return e.subs[bigScope], e.bigErr
	}
	s, err := e.open(ctx, bigScope)
	if err != nil {
		e.bigErr = err
		return nil, err
	}
	e.subs[bigScope] = s
	items := h.corpus.session(h.cfg.bigItems)
	start := time.Now()
	if sd, ok := s.(seeder); ok {
		err = sd.seed(ctx, bigSession, items)
	} else {
		for i := 0; i < len(items) && err == nil; i += 100 {
			err = s.append(ctx, bigSession, items[i:min(i+100, len(items))])
		}
	}
	if err != nil {
		e.bigErr = fmt.Errorf("set-up: %w", err)
		return nil, e.bigErr
	}
	e.bigDone = true
	h.logf("  set-up: %s: %s-item session in %v", e.name, thousands(len(items)), time.Since(start).Round(time.Millisecond))
	return s, nil
}

// bigEntrants returns w's participants that hold the big session, writing
// it first where it is missing, all entrants at once.
func (h *harness) bigEntrants(ctx context.Context, w *workload) []*entrant {
	es := h.participants(w)
	eachConcurrently(es, func(e *entrant) { _, _ = h.big(ctx, e) })
	flushDisks()
	var out []*entrant
	for _, e := range es {
		if _, err := h.big(ctx, e); !h.fail(e, err, w.metrics...) {
			out = append(out, e)
		}
	}
	return out
}

// runW2 loads the big session, all of it and its tail.
func runW2(ctx context.Context, h *harness, w *workload) {
	entrants := h.bigEntrants(ctx, w)
	want := h.corpus.session(h.cfg.bigItems)
	for range h.cfg.runs {
		for _, e := range entrants {
			s := e.subs[bigScope]
			for i, m := range w.metrics {
				if h.failed(e, m) {
					continue
				}
				limit := 0
				if i == 1 {
					limit = h.cfg.tailItems
				}
				d, err := repeat(h.cfg.minRunTime, h.cfg.maxOpsPerRun, func(int) error {
					return verifyLoad(ctx, s, bigSession, limit, want)
				})
				if !h.fail(e, err, m) {
					h.record(m, e, d)
				}
			}
		}
	}
}

// runW4 forks the big session, a new fork each time.
func runW4(ctx context.Context, h *harness, w *workload) {
	fork := w.metrics[0]
	entrants := h.bigEntrants(ctx, w)
	want := h.corpus.session(h.cfg.bigItems)
	for run := range h.cfg.runs {
		for _, e := range entrants {
			s := e.subs[bigScope]
			if h.failed(e, fork) {
				continue
			}
			d, err := repeat(h.cfg.minRunTime, h.cfg.maxOpsPerRun, func(i int) error {
				return s.fork(ctx, bigSession, fmt.Sprintf("fork-run%d-%d", run, i))
			})
			if err == nil && run == 0 {
				err = verifyLoad(ctx, s, "fork-run0-0", 0, want)
			}
			if !h.fail(e, err, fork) {
				h.record(fork, e, d)
			}
		}
	}
}

// runW6 pops the big session's newest item, checking it, then puts it
// back untimed: every timed pop meets the whole session with an item as its
// newest entry, as a single undo does.
func runW6(ctx context.Context, h *harness, w *workload) {
	pop := w.metrics[0]
	entrants := h.bigEntrants(ctx, w)
	want := h.corpus.session(h.cfg.bigItems)
	newest := want[len(want)-1]
	for range h.cfg.runs {
		for _, e := range entrants {
			s := e.subs[bigScope]
			if h.failed(e, pop) {
				continue
			}
			var (
				timed time.Duration
				n     int
				err   error
			)
			for err == nil && n < h.cfg.maxOpsPerRun && (n == 0 || timed < h.cfg.minRunTime) {
				start := time.Now()
				var got recall.Item
				got, err = s.pop(ctx, bigSession)
				timed += time.Since(start)
				n++
				if err == nil && !bytes.Equal(got, newest) {
					err = fmt.Errorf("pop %d returned %.60q, want the newest item %.60q", n, got, newest)
				}
				if err == nil {
					err = s.append(ctx, bigSession, []recall.Item{got})
				}
			}
			if !h.fail(e, err, pop) {
				h.record(pop, e, timed/time.Duration(n))
			}
		}
	}
}

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
		want := make([]string, 0, h.cfg.pageSize)
		for j := n - 1; j >= 0 && len(want) < h.cfg.pageSize; j-- {
			want = append(want, listSessionID(j))
		}
		for range h.cfg.runs {
			for _, e := range entrants {
				for _, m := range ms {
					if h.failed(e, m) || m == bigWarm && e.stateless {
						continue
					}
					warm := m == bigWarm
					if warm && h.sub(ctx, e, scope, m) == nil {
						continue
					}
					d, err := repeat(h.cfg.minRunTime, h.cfg.maxOpsPerRun, func(int) error {
						return listOnce(ctx, h, e, scope, warm, want)
					})
					if !h.fail(e, err, m) {
						h.record(m, e, d)
					}
				}
			}
		}
		if i == 0 {
			for _, e := range entrants {
				if e.stateless {
					c := h.cell(bigCold, e)
					*h.cell(bigWarm, e) = cell{runs: c.runs, na: c.na, err: c.err}
				}
			}
		}
		for _, e := range entrants {
			h.dropLogged(ctx, e, scope)
		}
	}
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
		items := func(i int) []recall.Item {
			// Sessions start at different turns, so their titles differ.
			return h.corpus.session(h.cfg.listItems + i%poolSize)[i%poolSize:]
		}
		var err error
		if ls, ok := s.(listSeeder); ok {
			err = parallel(n, setupWorkers, func(i int) error {
				return ls.seedAt(ctx, listSessionID(i), items(i), base.Add(time.Duration(i)*time.Millisecond))
			})
		} else {
			for i := 0; i < n && err == nil; i++ {
				err = s.append(ctx, listSessionID(i), items(i))
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

// flushDisks writes every dirty page out after a set-up, so that the
// kernel's write-back of set-up data does not slow the fsyncs measured
// next.
func flushDisks() { syscall.Sync() }

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

// verifyLoad loads the newest limit items of session and checks them
// against want, the whole session: the count, and the first and last item.
func verifyLoad(ctx context.Context, s subject, session string, limit int, want []recall.Item) error {
	got, err := s.load(ctx, session, limit)
	if err != nil {
		return err
	}
	if limit > 0 {
		want = want[len(want)-min(limit, len(want)):]
	}
	switch {
	case len(got) != len(want):
		return fmt.Errorf("load %s: %d items, want %d", session, len(got), len(want))
	case len(got) == 0:
		return nil
	case !bytes.Equal(got[0], want[0]) || !bytes.Equal(got[len(got)-1], want[len(want)-1]):
		return fmt.Errorf("load %s: the first or last item differs from what was saved", session)
	}
	return nil
}

// dropLogged drops e's scope, logging a failure: it costs disk, not results.
func (h *harness) dropLogged(ctx context.Context, e *entrant, scope string) {
	if err := h.drop(ctx, e, scope); err != nil {
		h.logf("  clean-up: %s %s: %v", e.name, scope, err)
	}
}

// thousands formats n with comma separators: 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
