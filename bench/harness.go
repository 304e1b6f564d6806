package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// metric is one measured column: a cost per operation (lower is better) or
// a throughput (shown as a rate, higher is better, but kept as a cost per
// item so every ratio reads the same way).
type metric struct {
	id    string // unique key, "W1 p50"
	label string // column header
	rate  bool   // shown as items per second
}

// cell is what one contender scored on one metric.
type cell struct {
	runs []float64 // seconds per operation (per item for a rate), one a run
	na   string    // why the contender cannot do it
	err  error     // why it failed
}

func (c *cell) value() float64 {
	if c == nil || c.na != "" || c.err != nil {
		return math.NaN()
	}
	return median(c.runs)
}

// entrant is a contender taking part in this run, with its open subjects.
type entrant struct {
	contender
	subs map[string]subject // by scope

	// The big session of W2, W4 and W6 is written once, by the first of
	// them the entrant takes part in.
	bigDone bool
	bigErr  error
}

// harness runs the workloads over the entrants and keeps the cells.
type harness struct {
	cfg      config
	corpus   *corpus
	entrants []*entrant

	// mu guards log and results: set-ups run one goroutine per entrant.
	mu  sync.Mutex
	log io.Writer
	// results[metric id][contender name]
	results map[string]map[string]*cell
}

func newHarness(cfg config, contenders []contender, log io.Writer) *harness {
	h := &harness{
		cfg:     cfg,
		corpus:  newCorpus(1),
		log:     log,
		results: map[string]map[string]*cell{},
	}
	for _, c := range contenders {
		h.entrants = append(h.entrants, &entrant{contender: c, subs: map[string]subject{}})
	}
	return h
}

func (h *harness) logf(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(h.log, format+"\n", args...)
}

// cell returns the cell of metric m for e, creating it.
func (h *harness) cell(m metric, e *entrant) *cell {
	h.mu.Lock()
	defer h.mu.Unlock()
	row := h.results[m.id]
	if row == nil {
		row = map[string]*cell{}
		h.results[m.id] = row
	}
	c := row[e.name]
	if c == nil {
		c = &cell{}
		row[e.name] = c
	}
	return c
}

// fail records err on every metric of ms for e: as n/a when err says the
// contender cannot do the operation, as a failure otherwise. It reports
// whether err was not nil.
func (h *harness) fail(e *entrant, err error, ms ...metric) bool {
	if err == nil {
		return false
	}
	for _, m := range ms {
		c := h.cell(m, e)
		if c.na != "" || c.err != nil {
			continue
		}
		if why := naReason(err); why != "" {
			c.na = why
		} else {
			c.err = err
			h.logf("  %s: %s: %v", m.id, e.name, err)
		}
	}
	return true
}

// failed reports whether e already has no result for all of ms.
func (h *harness) failed(e *entrant, ms ...metric) bool {
	for _, m := range ms {
		if c := h.cell(m, e); c.na == "" && c.err == nil {
			return false
		}
	}
	return true
}

// record adds one run's value.
func (h *harness) record(m metric, e *entrant, v time.Duration) {
	c := h.cell(m, e)
	c.runs = append(c.runs, v.Seconds())
}

// interleave measures one run of metric m for every entrant of es that has
// not failed it. It goes round-robin: each round, every entrant that still
// needs samples does one op, until it has spent minRunTime in its ops (at
// least one op) or done maxOpsPerRun of them; the run's value is its mean
// time per op. Interleaving makes the entrants share the same stretch of
// machine load, which on a shared machine matters more than anything else
// to their ratios. op returns the time to count for op number i; it may
// do untimed work besides.
func (h *harness) interleave(es []*entrant, m metric, op func(e *entrant, i int) (time.Duration, error)) {
	type state struct {
		e     *entrant
		spent time.Duration
		n     int
	}
	var live []*state
	for _, e := range es {
		if !h.failed(e, m) {
			live = append(live, &state{e: e})
		}
	}
	for len(live) > 0 {
		live = slices.DeleteFunc(live, func(st *state) bool {
			d, err := op(st.e, st.n)
			if h.fail(st.e, err, m) {
				return true
			}
			st.spent += d
			st.n++
			if st.spent >= h.cfg.minRunTime || st.n >= h.cfg.maxOpsPerRun {
				h.record(m, st.e, st.spent/time.Duration(st.n))
				return true
			}
			return false
		})
	}
}

// timed returns how long f took, and its error.
func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// eachConcurrently calls f for every entrant of es at once, each in its
// own goroutine: set-up is not timed, and most of it waits on fsync or a
// server, so it overlaps well.
func eachConcurrently(es []*entrant, f func(e *entrant)) {
	var wg sync.WaitGroup
	for _, e := range es {
		wg.Go(func() { f(e) })
	}
	wg.Wait()
}

// participants returns the entrants that take part in w, and records n/a
// on w's metrics for the others: the unavailable ones and those that sit w
// out.
func (h *harness) participants(w *workload) []*entrant {
	var out []*entrant
	for _, e := range h.entrants {
		why := e.unavailable
		if why == "" {
			why = e.skip[w.id]
		}
		if why != "" {
			h.fail(e, notAvailable(why), w.metrics...)
			continue
		}
		out = append(out, e)
	}
	return out
}

// sub returns e's subject for scope, opening it the first time, or records
// the failure to open on ms and returns nil.
func (h *harness) sub(ctx context.Context, e *entrant, scope string, ms ...metric) subject {
	if s := e.subs[scope]; s != nil {
		return s
	}
	s, err := e.open(ctx, scope)
	if h.fail(e, err, ms...) {
		return nil
	}
	e.subs[scope] = s
	return s
}

// drop closes e's subject for scope and deletes the scope's data.
func (h *harness) drop(ctx context.Context, e *entrant, scope string) error {
	var errs []error
	if s := e.subs[scope]; s != nil {
		errs = append(errs, s.close())
		delete(e.subs, scope)
	}
	if e.unavailable == "" && e.dropScope != nil && !(e.listData != "" && strings.HasPrefix(scope, "list")) {
		errs = append(errs, e.dropScope(ctx, scope))
	}
	return errors.Join(errs...)
}

// errorCount is the number of cells that failed (n/a is not a failure).
func (h *harness) errorCount() int {
	n := 0
	for _, row := range h.results {
		for _, c := range row {
			if c.err != nil {
				n++
			}
		}
	}
	return n
}

// dropAll drops every scope the workloads left behind.
func (h *harness) dropAll(ctx context.Context) {
	for _, e := range h.entrants {
		scopes := slices.Collect(maps.Keys(e.subs))
		if (e.bigDone || e.bigErr != nil) && !slices.Contains(scopes, bigScope) {
			scopes = append(scopes, bigScope)
		}
		for _, scope := range scopes {
			h.dropLogged(ctx, e, scope)
		}
	}
}

// dropLogged drops e's scope, logging a failure: it costs disk, not results.
func (h *harness) dropLogged(ctx context.Context, e *entrant, scope string) {
	if err := h.drop(ctx, e, scope); err != nil {
		h.logf("  clean-up: %s %s: %v", e.name, scope, err)
	}
}
