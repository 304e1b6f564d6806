package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// subjectCase opens one subject in a fresh directory.
type subjectCase struct {
	name string
	open func(ctx context.Context, dir string) (subject, error)
	// ops the subject supports.
	store, list bool
	// listSorted: list returns the newest first (the file floor does not
	// sort).
	listSorted bool
}

func subjectCases() []subjectCase {
	return []subjectCase{
		{name: "simple JSONL", open: openSimpleJSONL, store: true, list: true, listSorted: true},
		{name: "head/tail", open: openHeadTail, list: true, listSorted: true},
		{name: "file floor", open: openFileFloor, store: true, list: true},
		{name: "LangChainGo", open: func(ctx context.Context, dir string) (subject, error) {
			return openLangChain(ctx, filepath.Join(dir, "lc.db"))
		}, store: true},
		{name: "recall memstore", open: func(context.Context, string) (subject, error) {
			return &storeSubject{store: memstore.New(memstore.Options{})}, nil
		}, store: true, list: true, listSorted: true},
	}
}

// TestSubjects checks that every subject does what the workloads time:
// a benchmark of a baseline that loses items would mean nothing.
func TestSubjects(t *testing.T) {
	ctx := context.Background()
	c := newCorpus(7)
	for _, tc := range subjectCases() {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.open(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			if tc.store {
				checkStoreOps(ctx, t, s, c)
			}
			if tc.list {
				checkList(ctx, t, s, c, tc.listSorted)
			}
		})
	}
}

func checkStoreOps(ctx context.Context, t *testing.T, s subject, c *corpus) {
	t.Helper()
	want := c.session(3 * itemsPerTurn)
	for turn := range 3 {
		for _, save := range c.turn(turn) {
			if err := s.append(ctx, "a", save); err != nil {
				t.Fatalf("append: %v", err)
			}
		}
	}
	for _, limit := range []int{0, 5, 100} {
		got, err := s.load(ctx, "a", limit)
		if err != nil {
			t.Fatalf("load(%d): %v", limit, err)
		}
		exp := want
		if limit > 0 && limit < len(want) {
			exp = want[len(want)-limit:]
		}
		if !equalItems(got, exp) {
			t.Fatalf("load(%d) returned %d items, not the %d saved", limit, len(got), len(exp))
		}
	}
	if err := s.fork(ctx, "a", "b"); err != nil {
		t.Fatalf("fork: %v", err)
	}
	if got, err := s.load(ctx, "b", 0); err != nil || !equalItems(got, want) {
		t.Fatalf("the fork holds %d items (err %v), want the %d of its source", len(got), err, len(want))
	}
	for i := 1; i <= 2; i++ {
		got, err := s.pop(ctx, "a")
		if err != nil || !bytes.Equal(got, want[len(want)-i]) {
			t.Fatalf("pop %d: %.40q (err %v), want the newest item %.40q", i, got, err, want[len(want)-i])
		}
	}
	if got, err := s.load(ctx, "a", 0); err != nil || !equalItems(got, want[:len(want)-2]) {
		t.Fatalf("after 2 pops load returned %d items (err %v), want %d", len(got), err, len(want)-2)
	}
	if got, err := s.load(ctx, "b", 0); err != nil || len(got) != len(want) {
		t.Fatalf("popping the source changed the fork: %d items (err %v)", len(got), err)
	}
}

func checkList(ctx context.Context, t *testing.T, s subject, c *corpus, sorted bool) {
	t.Helper()
	for i := range 5 {
		if err := s.append(ctx, listSessionID(i), c.session(3)); err != nil {
			t.Fatalf("append: %v", err)
		}
		time.Sleep(2 * time.Millisecond) // distinct update times
	}
	ids, err := s.list(ctx, 3)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if !sorted {
		if len(ids) < 5 {
			t.Fatalf("list saw %d sessions, want at least 5", len(ids))
		}
		return
	}
	if want := []string{listSessionID(4), listSessionID(3), listSessionID(2)}; !slices.Equal(ids, want) {
		t.Fatalf("list(3) = %v, want %v", ids, want)
	}
}

func equalItems(a, b []recall.Item) bool {
	return slices.EqualFunc(a, b, func(x, y recall.Item) bool { return bytes.Equal(x, y) })
}

// TestHeadTailLargeFile checks the baseline on a file larger than
// two chunks: the title comes from the head, and a line cut by the chunk
// boundary is not decoded.
func TestHeadTailLargeFile(t *testing.T) {
	ctx := context.Background()
	c := newCorpus(3)
	s, err := openHeadTail(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	items := c.session(400) // about 450 KB, several chunks
	if err := s.append(ctx, "big", items); err != nil {
		t.Fatal(err)
	}
	path := s.(headTail).path("big")
	m, err := headTailMeta(path, "big")
	if err != nil {
		t.Fatal(err)
	}
	if want := c.user[0].Text(); m.title != want {
		t.Errorf("title %.30q, want the first user message %.30q", m.title, want)
	}
	chunk := []byte("partial\"}\n{\"a\":1}\n{\"b\":2}\n{\"cut")
	if got := completeLines(chunk, false, true); len(got) != 2 || string(got[0]) != `{"a":1}` {
		t.Errorf("completeLines of a middle chunk = %q", got)
	}
}
