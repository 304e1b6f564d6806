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
