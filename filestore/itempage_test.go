package filestore

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
)

// pageThrough reads the whole view of key with ReadItems, limit items a
// page, each page after the last one's last item, and returns the items
// in the order read and the LastSeq of every page.
func pageThrough(t *testing.T, s *Store, key recall.Key, limit int, oldest bool) ([]recall.LiveItem, []int64) {
	t.Helper()
	var got []recall.LiveItem
	var lasts []int64
	opts := recall.ItemPageOptions{Limit: limit, Oldest: oldest}
	for range 10_000 {
		page, err := s.ReadItems(context.Background(), key, opts)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Items...)
		lasts = append(lasts, page.LastSeq)
		if !page.More {
			return got, lasts
		}
		opts.After = page.Items[len(page.Items)-1].Ref
	}
	t.Fatal("paging never ends")
	return nil, nil
}

// Pages of a log with damaged, blank, long and torn lines (as a crash or
// another program leaves them) hold the view recall.Replay derives from
// the committed entries, in both orders, whatever the page's size.
func TestReadItemsDamagedLog(t *testing.T) {
	for _, n := range []int{1, 5, 120} {
		rng := rand.New(rand.NewPCG(7, uint64(n)))
		log, committed := damagedLog(t, rng, n)
		s, err := Open(Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		key := recall.Key{Project: "p", Session: "s", Subpath: "agents/a1"}
		l, err := s.locate(key)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(l.path, log, 0o600); err != nil {
			t.Fatal(err)
		}
		_, view := recall.Replay(key, committed)
		for _, limit := range []int{1, 3, 50} {
			for _, oldest := range []bool{false, true} {
				want := slices.Clone(view)
				if !oldest {
					slices.Reverse(want)
				}
				got, lasts := pageThrough(t, s, key, limit, oldest)
				if !slices.EqualFunc(got, want, func(a, b recall.LiveItem) bool {
					return a.Ref == b.Ref && string(a.Item) == string(b.Item)
				}) {
					t.Fatalf("n %d limit %d oldest %v: paged %d items, want %d", n, limit, oldest, len(got), len(want))
				}
				for _, last := range lasts {
					if last != int64(n) {
						t.Fatalf("n %d: a page's LastSeq is %d, want %d", n, last, n)
					}
				}
			}
		}
		s.Close()
	}
}

// ReadItems refuses what Items refuses, with the same errors, wrapped
// with its own name; a session that does not exist is an empty page.
func TestReadItemsErrors(t *testing.T) {
	ctx := context.Background()
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	key := recall.Key{Project: "p", Session: "s"}
	if _, err := s.Append(ctx, key, recall.Guard{}, recall.Message("user", "hi").Entry()); err != nil {
		t.Fatal(err)
	}
	page, err := s.ReadItems(ctx, recall.Key{Project: "p", Session: "none"}, recall.ItemPageOptions{})
	if err != nil || len(page.Items) != 0 || page.More || page.LastSeq != 0 {
		t.Errorf("ReadItems of a missing session = %+v, %v; want an empty page", page, err)
	}
	for _, bad := range []recall.Key{{Project: "p", Session: "../x"}, {Project: "", Session: "s"}, {Project: "p", Session: "a#b"}} {
		_, _, want := s.Items(ctx, bad, 0)
		_, err := s.ReadItems(ctx, bad, recall.ItemPageOptions{})
		if !errors.Is(err, recall.ErrInvalidKey) || !errors.Is(want, recall.ErrInvalidKey) {
			t.Errorf("ReadItems(%+v) = %v (Items: %v), want ErrInvalidKey", bad, err, want)
		}
		if !strings.HasPrefix(err.Error(), "filestore: read items ") {
			t.Errorf("ReadItems(%+v) = %q, not wrapped with its name", bad, err)
		}
	}
	s.Close()
	if _, err := s.ReadItems(ctx, key, recall.ItemPageOptions{}); !errors.Is(err, recall.ErrClosed) {
		t.Errorf("ReadItems after Close = %v, want ErrClosed", err)
	}
}

// Pages read while another goroutine appends are each one snapshot: the
// page of the view of the log as it was at the page's LastSeq (the log
// only grows, so the final log cut at that seq is that log).
func TestReadItemsWhileWriting(t *testing.T) {
	ctx := context.Background()
	s, err := Open(Options{Dir: t.TempDir(), Sync: SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := recall.Key{Project: "p", Session: "s"}
	item := recall.Message("user", strings.Repeat("words ", 30)).Entry()
	if _, err := s.Append(ctx, key, recall.Guard{}, item); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for i := range 200 {
			es := []recall.Entry{item, item, recall.NewEntry(recall.KindRemove, recall.ItemRef{Seq: int64(1 + 3*i)})}
			if i%50 == 49 {
				es = append(es, recall.NewEntry(recall.KindClear, nil))
			}
			if _, err := s.Append(ctx, key, recall.Guard{}, es...); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	type read struct {
		opts recall.ItemPageOptions
		page recall.ItemPage
	}
	var reads []read
	rng := rand.New(rand.NewPCG(3, 4))
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		opts := recall.ItemPageOptions{Limit: 1 + rng.IntN(6), Oldest: rng.IntN(2) == 0}
		if n := len(reads); n > 0 && rng.IntN(2) == 0 {
			opts.After = recall.ItemRef{Seq: 1 + rng.Int64N(reads[n-1].page.LastSeq)}
		}
		page, err := s.ReadItems(ctx, key, opts)
		if err != nil {
			t.Fatal(err)
		}
		reads = append(reads, read{opts, page})
	}
	_, entries, err := s.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reads {
		cut := entries[:r.page.LastSeq] // seqs are 1, 2, ...: entry i has seq i+1
		_, view := recall.Replay(key, cut)
		want, err := recall.NewSession(replayStore{view: view, last: r.page.LastSeq}, key).ReadItems(ctx, r.opts)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(r.page.Items, want.Items, func(a, b recall.LiveItem) bool { return a.Ref == b.Ref }) || r.page.More != want.More {
			t.Fatalf("ReadItems(%+v) at LastSeq %d: %d items (more %v), want %d (more %v)", r.opts, r.page.LastSeq, len(r.page.Items), r.page.More, len(want.Items), want.More)
		}
	}
	t.Logf("%d pages read while writing", len(reads))
}

// replayStore is a recall.Store that answers Items from a view, for
// recall.StoreSession.ReadItems's generic path; its other methods are never called.
type replayStore struct {
	recall.Store
	view []recall.LiveItem
	last int64
}

func (r replayStore) Items(context.Context, recall.Key, int) ([]recall.LiveItem, int64, error) {
	return r.view, r.last, nil
}
