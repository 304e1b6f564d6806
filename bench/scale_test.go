package main

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall/filestore"
)

// TestScaleRunsEveryMeasure runs the scale workloads on the real rows, the
// durable file store and its floor, at two tiny project sizes.
func TestScaleRunsEveryMeasure(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cfg := scaleConfig(tinyConfig(), []int{12, 30})
	h := newHarness(cfg, scaleContenders(root), io.Discard)
	ws := scaleWorkloads(cfg)
	for _, w := range ws {
		w.run(ctx, h, w)
	}
	h.dropAll(ctx)
	for id, row := range h.results {
		for name, c := range row {
			if c.err != nil || c.na != "" {
				t.Errorf("%s %s: %v %s", id, name, c.err, c.na)
			}
		}
	}
	for _, w := range ws {
		for _, m := range w.metrics {
			for _, name := range []string{recallRow, scaleFloorRow} {
				if c := h.results[m.id][name]; c == nil || len(c.runs) != cfg.runs {
					t.Errorf("%s %s: %+v, want %d runs", m.id, name, c, cfg.runs)
				}
			}
		}
	}
	r := &report{h: h, workloads: ws, machine: describeMachine(root), command: "go -C bench run . -scale 12,30"}
	md := r.scaleMarkdown()
	for _, want := range []string{
		"| 30 | list cold (floor: readdir + stat) |",
		"| 12 | save p99 (floor: write + fdatasync) |",
		"| undo (floor: ftruncate + fdatasync) | 12 → 30 |",
		"`go -C bench run . -scale 12,30`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "**failed**") {
		t.Errorf("the report shows a failure:\n%s", md)
	}
}

// TestScaleFloorListsTheStoresFolder checks that the list floor reads the
// folder the file store keeps the project in, every log of it.
func TestScaleFloorListsTheStoresFolder(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cs := scaleContenders(root)
	scope := scaleScope(7)
	s, err := cs[0].open(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(tinyConfig(), nil, io.Discard)
	for i := range 7 {
		if err := s.append(ctx, listSessionID(i), h.listItems(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.Open(filestore.Options{Dir: filepath.Join(root, "file-always", scope)})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := st.ProjectDir(benchProject)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := cs[1].open(ctx, scope)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	if got := f.(*fileFloor).listDir; got != dir {
		t.Fatalf("the floor lists %s, the store keeps the project in %s", got, dir)
	}
	names, err := f.list(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, listSessionID(i)) }) {
			t.Errorf("the floor's readdir lacks session %s: %q", listSessionID(i), names)
		}
	}
}

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("10000, 100_000")
	if err != nil || !slices.Equal(got, []int{10_000, 100_000}) {
		t.Errorf("parseSizes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "10k", "0", "1,,2", "-5"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q) accepted", bad)
		}
	}
}
