package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// runW1 times every save of cfg.turns chat turns, in a new session per run.
// The entrants take turns, turn by turn, so they share the machine's load.
// Each turn starts one entrant further along: a save's fsync also pays for
// the file system journal that the entrant before it left (a database
// server's own fsyncs, unsynced writes), so a fixed order would always
// hand one entrant the same neighbour. With a fixed order the file floor
// always followed recall's file store, whose fsync had just emptied the
// journal, and ran about 10% faster than it does in rotation.
func runW1(ctx context.Context, h *harness, w *workload) {
	entrants := h.participants(w)
	for run := range h.cfg.runs {
		turnRuns(ctx, h, entrants, "w1", run, w.metrics[0], w.metrics[1])
	}
	for _, e := range entrants {
		h.dropLogged(ctx, e, "w1")
	}
}

// turnRuns measures run number run of p50 and p99: cfg.turns chat turns
// saved into a new session of scope, every save timed on its own, the
// entrants taking turns as runW1 says. The first run reads the session
// back and checks it.
func turnRuns(ctx context.Context, h *harness, entrants []*entrant, scope string, run int, p50, p99 metric) {
	session := fmt.Sprintf("%s-run%d", scope, run)
	lat := map[*entrant][]time.Duration{}
	for t := range h.cfg.turns {
		for i := range entrants {
			e := entrants[(i+t)%len(entrants)]
			s := h.sub(ctx, e, scope, p50, p99)
			if s == nil || h.failed(e, p50, p99) {
				continue
			}
			for _, save := range h.corpus.turn(t) {
				d, err := timed(func() error { return s.append(ctx, session, save) })
				if h.fail(e, err, p50, p99) {
					break
				}
				lat[e] = append(lat[e], d)
			}
		}
	}
	for _, e := range entrants {
		if h.failed(e, p50, p99) {
			continue
		}
		if run == 0 {
			err := verifyLoad(ctx, e.subs[scope], session, 0, h.corpus.session(itemsPerTurn*h.cfg.turns))
			if naReason(err) != "" {
				err = nil // a floor that cannot read back
			}
			if h.fail(e, err, p50, p99) {
				continue
			}
		}
		h.record(p50, e, percentile(lat[e], 0.50))
		h.record(p99, e, percentile(lat[e], 0.99))
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
