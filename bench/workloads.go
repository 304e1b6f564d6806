package main

import (
	"bytes"
	"context"
	"fmt"
	"syscall"

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

// workloads returns W1 to W7 sized by cfg, in report order. They run in
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
	}, {
		id:    "W7",
		title: "Turns on a long session",
		what: fmt.Sprintf("%d chat turns appended to a %s-item session, each turn one durable save of its %d items "+
			"(as an agent that saves a turn at once). Each save is timed on its own; the table gives the median over "+
			"runs of each run's p50 and p99 save latency. The p99 shows what a store's deferred work (an index "+
			"catching up, a checkpoint) costs the save that does it.",
			cfg.turns, thousands(cfg.bigItems), itemsPerTurn),
		metrics: []metric{{id: "W7 p50", label: "turn p50"}, {id: "W7 p99", label: "turn p99"}},
		run:     runW7,
	}}
}

// runOrder is the order workloads run in: the writers first (W7 on its own
// long session), then the three
// that share the big session (W6 last, as it writes to it), then the lists.
var runOrder = []string{"W1", "W5", "W7", "W2", "W4", "W6", "W3"}

// verifyLoad loads the newest limit items of session and checks them.
func verifyLoad(ctx context.Context, s subject, session string, limit int, want []recall.Item) error {
	got, err := s.load(ctx, session, limit)
	if err != nil {
		return err
	}
	return checkItems(session, got, limit, want)
}

// checkItems checks that got is the newest limit items (all when limit <=
// 0) of want, the whole session, in order and byte for byte.
func checkItems(session string, got []recall.Item, limit int, want []recall.Item) error {
	if limit > 0 {
		want = want[len(want)-min(limit, len(want)):]
	}
	if len(got) != len(want) {
		return fmt.Errorf("load %s: %d items, want %d", session, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			return fmt.Errorf("load %s: item %d of %d differs from what was saved", session, i, len(got))
		}
	}
	return nil
}

// flushDisks writes every dirty page out after a set-up, so that the
// kernel's write-back of set-up data does not slow the fsyncs measured
// next.
func flushDisks() { syscall.Sync() }
