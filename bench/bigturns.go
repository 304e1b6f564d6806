package main

import (
	"context"
	"fmt"
	"time"

	"github.com/recallkit/recall"
)

// W7 appends durable turns to a session that is already long: each turn
// is one save of a turn's items, as an agent that saves a whole turn at
// once makes it. A store that does deferred work on some saves (an index
// catching up, a checkpoint) shows it here as a p99 far above the p50,
// which W1's short new sessions may never reach.

// bigTurnsScope holds W7's session.
const (
	bigTurnsScope   = "w7"
	bigTurnsSession = "w7-session"
)

// fill writes items to session of s as set-up (not timed): in one call
// when s is a seeder, else in saves of 100 items.
func fill(ctx context.Context, s subject, session string, items []recall.Item) error {
	if sd, ok := s.(seeder); ok {
		return sd.seed(ctx, session, items)
	}
	for i := 0; i < len(items); i += 100 {
		if err := s.append(ctx, session, items[i:min(i+100, len(items))]); err != nil {
			return err
		}
	}
	return nil
}

// runW7 writes a cfg.bigItems-item session per entrant (untimed), then
// times cfg.turns turns a run, each one save of a whole turn, the
// entrants taking turns as in W1. Every run goes on with the same
// session, so it grows by a turn's items a turn.
func runW7(ctx context.Context, h *harness, w *workload) {
	p50, p99 := w.metrics[0], w.metrics[1]
	var entrants []*entrant
	for _, e := range h.participants(w) {
		if s := h.sub(ctx, e, bigTurnsScope, p50, p99); s != nil {
			entrants = append(entrants, e)
		}
	}
	eachConcurrently(entrants, func(e *entrant) {
		start := time.Now()
		err := fill(ctx, e.subs[bigTurnsScope], bigTurnsSession, h.corpus.session(h.cfg.bigItems))
		if err != nil {
			err = fmt.Errorf("set-up: %w", err)
		} else {
			h.logf("  set-up: %s: %s-item session in %v", e.name, thousands(h.cfg.bigItems), time.Since(start).Round(time.Millisecond))
		}
		h.fail(e, err, p50, p99)
	})
	flushDisks()
	for run := range h.cfg.runs {
		lat := map[*entrant][]time.Duration{}
		for t := range h.cfg.turns {
			var turn []recall.Item
			for _, save := range h.corpus.turn(run*h.cfg.turns + t) {
				turn = append(turn, save...)
			}
			for i := range entrants {
				e := entrants[(i+t)%len(entrants)]
				if h.failed(e, p50, p99) {
					continue
				}
				d, err := timed(func() error { return e.subs[bigTurnsScope].append(ctx, bigTurnsSession, turn) })
				if !h.fail(e, err, p50, p99) {
					lat[e] = append(lat[e], d)
				}
			}
		}
		for _, e := range entrants {
			if h.failed(e, p50, p99) {
				continue
			}
			a, b := percentile(lat[e], 0.50), percentile(lat[e], 0.99)
			h.logf("  run %d: %s: p50 %v, p99 %v (%.2f×)", run, e.name, a, b, b.Seconds()/a.Seconds())
			h.record(p50, e, a)
			h.record(p99, e, b)
		}
	}
	for _, e := range entrants {
		h.dropLogged(ctx, e, bigTurnsScope)
	}
}
