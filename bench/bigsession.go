package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/recallkit/recall"
)

// bigScope holds the big session of W2, W4 and W6.
const (
	bigScope   = "big"
	bigSession = "big-session"
)

// big returns e's subject holding the big session, writing the session the
// first time (see fill; set-up is not timed). A failure is remembered and
// returned again.
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
	if err := fill(ctx, s, bigSession, items); err != nil {
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
		for i, m := range w.metrics {
			limit := 0
			if i == 1 {
				limit = h.cfg.tailItems
			}
			h.interleave(entrants, m, func(e *entrant, _ int) (time.Duration, error) {
				var got []recall.Item
				d, err := timed(func() (err error) {
					got, err = e.subs[bigScope].load(ctx, bigSession, limit)
					return err
				})
				if err == nil {
					err = checkItems(bigSession, got, limit, want) // not timed
				}
				return d, err
			})
		}
	}
}

// runW4 forks the big session, a new fork each time.
func runW4(ctx context.Context, h *harness, w *workload) {
	fork := w.metrics[0]
	entrants := h.bigEntrants(ctx, w)
	want := h.corpus.session(h.cfg.bigItems)
	for run := range h.cfg.runs {
		h.interleave(entrants, fork, func(e *entrant, i int) (time.Duration, error) {
			s := e.subs[bigScope]
			dst := fmt.Sprintf("fork-run%d-%d", run, i)
			d, err := timed(func() error { return s.fork(ctx, bigSession, dst) })
			if err == nil && run == 0 && i == 0 {
				err = verifyLoad(ctx, s, dst, 0, want)
			}
			return d, err
		})
	}
}

// runW6 pops the big session's newest item, checking it, then puts it
// back untimed: every timed pop meets the whole session with an item as its
// newest entry, as a single undo does.
func runW6(ctx context.Context, h *harness, w *workload) {
	pop := w.metrics[0]
	entrants := h.bigEntrants(ctx, w)
	want := h.corpus.session(h.cfg.bigItems)
	for range h.cfg.runs {
		popRuns(ctx, h, entrants, pop, bigScope, bigSession, want[len(want)-1])
	}
}

// popRuns measures one run of pop on session of scope, whose newest item
// is newest: each pop is checked, then its item is put back untimed, so
// every timed pop meets the same session, as a single undo does.
func popRuns(ctx context.Context, h *harness, entrants []*entrant, pop metric, scope, session string, newest recall.Item) {
	h.interleave(entrants, pop, func(e *entrant, i int) (time.Duration, error) {
		s := e.subs[scope]
		var got recall.Item
		d, err := timed(func() (err error) {
			got, err = s.pop(ctx, session)
			return err
		})
		if err == nil && !bytes.Equal(got, newest) {
			err = fmt.Errorf("pop %d returned %.60q, want the newest item %.60q", i+1, got, newest)
		}
		if err == nil {
			err = s.append(ctx, session, []recall.Item{got})
		}
		return d, err
	})
}
