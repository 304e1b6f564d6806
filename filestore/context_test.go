package filestore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/storekit"
)

// Every method called with a context that has already ended returns its
// error (wrapped: errors.Is works) and changes nothing on disk.
func TestEndedContext(t *testing.T) {
	home := t.TempDir()
	s := openStore(t, home)
	bg := context.Background()
	key := recall.Key{Project: "p", Session: "s"}
	item := recall.Message("user", "hi").Entry()
	if _, err := s.Append(bg, key, recall.Guard{}, item, item); err != nil {
		t.Fatal(err)
	}
	comp := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: 2, Items: []recall.Item{recall.Message("user", "summary")}})
	if _, err := s.Append(bg, key, recall.IfLastSeq(2), comp); err != nil {
		t.Fatal(err)
	}
	s.Close()

	cancelled, cancel := context.WithCancel(bg)
	cancel()
	expired, cancel2 := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer cancel2()
	fresh := recall.Key{Project: "p", Session: "fresh"}
	for _, c := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		ctx := c.ctx
		calls := map[string]func(s *filestore.Store) error{
			"Append":       func(s *filestore.Store) error { _, err := s.Append(ctx, key, recall.Guard{}, item); return err },
			"Append new":   func(s *filestore.Store) error { _, err := s.Append(ctx, fresh, recall.Guard{}, item); return err },
			"Append empty": func(s *filestore.Store) error { _, err := s.Append(ctx, key, recall.IfExists()); return err },
			"Import":       func(s *filestore.Store) error { _, err := s.Import(ctx, fresh, withSeq(item, 1)); return err },
			"Pop":          func(s *filestore.Store) error { _, err := s.Pop(ctx, key); return err },
			"Remove":       func(s *filestore.Store) error { return s.Remove(ctx, key) },
			"Purge":        func(s *filestore.Store) error { _, err := s.Purge(ctx, key); return err },
			"Cleanup": func(s *filestore.Store) error {
				_, err := s.Cleanup(ctx, recall.CleanupOptions{OlderThan: time.Now().Add(time.Hour)})
				return err
			},
			"Items":    func(s *filestore.Store) error { _, _, err := s.Items(ctx, key, 0); return err },
			"Items(1)": func(s *filestore.Store) error { _, _, err := s.Items(ctx, key, 1); return err },
			"Stat":     func(s *filestore.Store) error { _, err := s.Stat(ctx, key); return err },
			"Load":     func(s *filestore.Store) error { _, _, err := s.Load(ctx, key); return err },
			"Entries":  func(s *filestore.Store) error { _, err := s.Entries(ctx, key, 0, 0); return err },
			"ReadItems": func(s *filestore.Store) error {
				_, err := s.ReadItems(ctx, key, recall.ItemPageOptions{Limit: 1})
				return err
			},
			"List":                     func(s *filestore.Store) error { _, err := s.List(ctx, "", recall.ListOptions{}); return err },
			"Projects":                 func(s *filestore.Store) error { _, err := s.Projects(ctx); return err },
			"recall.StoreSession.Fork": func(s *filestore.Store) error { _, err := recall.NewSession(s, key).Fork(ctx, 0, fresh); return err },
			"recall.StoreSession.Create": func(s *filestore.Store) error {
				_, err := recall.NewSession(s, fresh).Create(ctx, recall.CreateOptions{})
				return err
			},
		}
		for name, call := range calls {
			before := snapshot(t, home)
			s := openStore(t, home)
			err := call(s)
			s.Close()
			if !errors.Is(err, c.want) {
				t.Errorf("%s under an ended context = %v, want %v", name, err, c.want)
			}
			if after := snapshot(t, home); !equalSnapshots(before, after) {
				t.Errorf("%s under an ended context changed the disk:\nbefore %v\nafter  %v", name, before, after)
			}
		}
	}
}

func withSeq(e recall.Entry, seq int64) recall.Entry {
	e.Seq, e.Time = seq, storekit.Now()
	return e
}

// countdown is a context that ends after its Err has said "not yet" n
// times: a context cancelled at a chosen point of a read, as a caller's
// cancel from another goroutine would land mid-scan.
type countdown struct {
	context.Context
	left atomic.Int64
	once sync.Once
	done chan struct{}
}

func newCountdown(n int64) *countdown {
	c := &countdown{Context: context.Background(), done: make(chan struct{})}
	c.left.Store(n)
	return c
}

func (c *countdown) Err() error {
	if c.left.Add(-1) >= 0 {
		return nil
	}
	c.once.Do(func() { close(c.done) })
	return context.Canceled
}

func (c *countdown) Done() <-chan struct{} { return c.done }

// The reads of a large log look at their context as they go: cancelled
// after the first few looks, Load, Items, Entries, Stat and List stop with
// context.Canceled instead of reading on; with more room they complete.
func TestCancelMidScan(t *testing.T) {
	bg := context.Background()
	home := t.TempDir()
	s, err := filestore.Open(filestore.Options{Dir: home, Sync: filestore.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	key := recall.Key{Project: "big", Session: "s"}
	// a 4 MiB log: 2,048 items of 2 KiB in batches of 64
	pad := strings.Repeat("x", 2000)
	for b := range 32 {
		var batch []recall.Item
		for i := range 64 {
			batch = append(batch, recall.Message("user", fmt.Sprintf("%d-%d %s", b, i, pad)))
		}
		if _, err := s.Append(bg, key, recall.Guard{}, recall.ItemEntries(batch...)...); err != nil {
			t.Fatal(err)
		}
	}
	// many logs for List to derive
	for i := range 100 {
		if _, err := s.Append(bg, recall.Key{Project: "many", Session: fmt.Sprintf("s%03d", i)}, recall.Guard{}, recall.Message("user", pad).Entry()); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	reads := map[string]func(ctx context.Context, s *filestore.Store) error{
		"Load":     func(ctx context.Context, s *filestore.Store) error { _, _, err := s.Load(ctx, key); return err },
		"Items(0)": func(ctx context.Context, s *filestore.Store) error { _, _, err := s.Items(ctx, key, 0); return err },
		// a tail longer than the first block, read in several
		"Items(1500)": func(ctx context.Context, s *filestore.Store) error { _, _, err := s.Items(ctx, key, 1500); return err },
		"Entries":     func(ctx context.Context, s *filestore.Store) error { _, err := s.Entries(ctx, key, 0, 0); return err },
		"Entries(end)": func(ctx context.Context, s *filestore.Store) error {
			_, err := s.Entries(ctx, key, 1500, 0)
			return err
		},
		// a page in the middle of the log, oldest first: the controls are
		// read from the end, then the page's place is searched for
		"ReadItems": func(ctx context.Context, s *filestore.Store) error {
			_, err := s.ReadItems(ctx, key, recall.ItemPageOptions{Limit: 10, Oldest: true, After: recall.ItemRef{Seq: 1000}})
			return err
		},
		// a new store has no record: Stat derives it from the log
		"Stat": func(ctx context.Context, s *filestore.Store) error { _, err := s.Stat(ctx, key); return err },
		"List": func(ctx context.Context, s *filestore.Store) error {
			_, err := s.List(ctx, "many", recall.ListOptions{})
			return err
		},
		"Projects": func(ctx context.Context, s *filestore.Store) error { _, err := s.Projects(ctx); return err },
		"Cleanup": func(ctx context.Context, s *filestore.Store) error {
			_, err := s.Cleanup(ctx, recall.CleanupOptions{OlderThan: time.Now().Add(-time.Hour)})
			return err
		},
	}
	// With no index and a new store, nothing is cached: every log is
	// read or derived from the disk.
	dropIndex := func() { dropIndexes(t, home, "big", "many") }
	for name, read := range reads {
		// Each read looks at ctx once before it starts and then as it goes.
		// Three looks get it well into the work and never to the end.
		dropIndex()
		fs, err := filestore.Open(filestore.Options{Dir: home})
		if err != nil {
			t.Fatal(err)
		}
		ctx := newCountdown(3)
		if err := read(ctx, fs); !errors.Is(err, context.Canceled) {
			t.Errorf("%s cancelled mid-scan = %v, want context.Canceled", name, err)
		}
		fs.Close()
		dropIndex()
		fs, err = filestore.Open(filestore.Options{Dir: home})
		if err != nil {
			t.Fatal(err)
		}
		if err := read(bg, fs); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		fs.Close()
	}

	// A real cancel from another goroutine stops a Load of the log.
	s = openStore(t, home)
	start := time.Now()
	if _, _, err := s.Load(bg, key); err != nil {
		t.Fatal(err)
	}
	whole := time.Since(start)
	ctx, cancel := context.WithCancel(bg)
	time.AfterFunc(whole/10, cancel)
	start = time.Now()
	_, _, err = s.Load(ctx, key)
	t.Logf("a whole Load takes %v; cancelled after %v, it returned after %v: %v", whole, whole/10, time.Since(start), err)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Load cancelled after a tenth of its time = %v, want context.Canceled", err)
	}
}
