package main

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// tinyConfig runs every workload in well under a second.
func tinyConfig() config {
	return config{
		runs:         2,
		minRunTime:   time.Millisecond,
		maxOpsPerRun: 3,
		turns:        3,
		bigItems:     40,
		tailItems:    5,
		listSessions: []int{12, 6},
		listItems:    4,
		pageSize:     5,
		writers:      3,
		writerTurns:  2,
	}
}

// testContenders are fast contenders of every kind: a memstore in the
// reference row, the simple baselines and the file floor.
func testContenders(root string) []contender {
	stores := map[string]recall.Store{}
	inDir := func(slug string, open func(context.Context, string) (subject, error)) func(context.Context, string) (subject, error) {
		return func(ctx context.Context, scope string) (subject, error) {
			return open(ctx, filepath.Join(root, slug, scope))
		}
	}
	return []contender{
		{
			name: recallRow, kind: kindRecall, medium: mediumFile,
			open: storeOpener(func(_ context.Context, scope string) (recall.Store, error) {
				if stores[scope] == nil {
					stores[scope] = memstore.New(memstore.Options{})
				}
				return keepOpen{stores[scope]}, nil
			}),
			dropScope: func(_ context.Context, scope string) error { delete(stores, scope); return nil },
		},
		{name: simpleRow, kind: kindBaseline, medium: mediumFile, open: inDir("simple", openSimpleJSONL), dropScope: removeGlob(filepath.Join(root, "simple"))},
		{name: headTailRow, kind: kindBaseline, medium: mediumFile, open: inDir("simple", openHeadTail),
			listData: simpleRow, stateless: true,
			skip: map[string]string{"W1": "list only", "W2": "list only", "W4": "list only", "W5": "list only", "W6": "list only"}},
		{name: "floor: file", kind: kindFloor, medium: mediumFile, noListCheck: true, stateless: true, open: inDir("floor", openFileFloor)},
		{name: "down", kind: kindPeer, unavailable: "server down"},
	}
}

// keepOpen lets a memstore outlive the cold list's Close.
type keepOpen struct{ recall.Store }

func (keepOpen) Close() error { return nil }

func runTiny(t *testing.T, cs []contender) (*harness, string) {
	t.Helper()
	ctx := context.Background()
	h := newHarness(tinyConfig(), cs, io.Discard)
	ws := workloads(h.cfg)
	for _, id := range runOrder {
		for _, w := range ws {
			if w.id == id {
				w.run(ctx, h, w)
			}
		}
	}
	h.dropAll(ctx)
	r := &report{h: h, workloads: ws, machine: describeMachine(t.TempDir()), command: "go -C bench run . -test"}
	return h, r.markdown()
}

func TestHarnessRunsEveryWorkload(t *testing.T) {
	h, md := runTiny(t, testContenders(t.TempDir()))
	if n := h.errorCount(); n > 0 {
		for id, row := range h.results {
			for name, c := range row {
				if c.err != nil {
					t.Errorf("%s %s: %v", id, name, c.err)
				}
			}
		}
		t.Fatalf("%d cells failed", n)
	}
	for _, w := range workloads(h.cfg) {
		if !strings.Contains(md, "### "+w.id+" · ") {
			t.Errorf("the report has no %s table", w.id)
		}
		for _, m := range w.metrics {
			for _, name := range []string{recallRow, simpleRow} {
				if c := h.results[m.id][name]; w.id != "W3" && (c == nil || len(c.runs) != h.cfg.runs) {
					t.Errorf("%s %s: %v runs, want %d", m.id, name, c, h.cfg.runs)
				}
			}
		}
	}
	// head/tail lists the files simple JSONL wrote, and its warm list is
	// its cold one.
	cold, warm := h.results["W3 big cold"][headTailRow], h.results["W3 big warm"][headTailRow]
	if cold == nil || len(cold.runs) != h.cfg.runs || warm == nil || !slices.Equal(cold.runs, warm.runs) {
		t.Errorf("head/tail did not list: cold %+v, warm %+v", cold, warm)
	}
	for _, want := range []string{"n/a: server down", "n/a: list only", "| W1 save p50 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// wrongList is the simple baseline listing the oldest sessions first.
type wrongList struct{ *simpleJSONL }

func (w wrongList) list(ctx context.Context, limit int) ([]string, error) {
	ids, err := w.simpleJSONL.list(ctx, 1<<30)
	for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
		ids[i], ids[j] = ids[j], ids[i]
	}
	return ids[:min(limit, len(ids))], err
}

// losesItems is the simple baseline dropping the last item of every save.
type losesItems struct{ *simpleJSONL }

func (l losesItems) append(ctx context.Context, session string, items []recall.Item) error {
	return l.simpleJSONL.append(ctx, session, items[:len(items)-1])
}

func (l losesItems) seed(ctx context.Context, session string, items []recall.Item) error {
	return l.simpleJSONL.seed(ctx, session, items[:len(items)-1])
}

// TestHarnessCatchesWrongResults proves the checks bite: a contender that
// lists the wrong page or loses items fails instead of scoring.
func TestHarnessCatchesWrongResults(t *testing.T) {
	root := t.TempDir()
	wrap := func(slug string, f func(*simpleJSONL) subject) func(context.Context, string) (subject, error) {
		return func(ctx context.Context, scope string) (subject, error) {
			s, err := openSimpleJSONL(ctx, filepath.Join(root, slug, scope))
			if err != nil {
				return nil, err
			}
			return f(s.(*simpleJSONL)), nil
		}
	}
	cs := testContenders(root)[:1]
	cs = append(cs,
		contender{name: "wrong list", kind: kindBaseline, medium: mediumFile, open: wrap("wl", func(s *simpleJSONL) subject { return wrongList{s} })},
		contender{name: "loses items", kind: kindBaseline, medium: mediumFile, open: wrap("li", func(s *simpleJSONL) subject { return losesItems{s} })},
	)
	h, md := runTiny(t, cs)
	if c := h.results["W3 big cold"]["wrong list"]; c == nil || c.err == nil {
		t.Errorf("a wrong first page was not caught: %+v", c)
	}
	for _, id := range []string{"W1 p50", "W2 all", "W6 pop"} {
		if c := h.results[id]["loses items"]; c == nil || c.err == nil {
			t.Errorf("%s: lost items were not caught: %+v", id, c)
		}
	}
	if !strings.Contains(md, "**failed**") {
		t.Error("the report does not show the failures")
	}
}
