package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// pagedSession writes a session of n items in batches, then pops the
// newest three, removes item 10 (a pop and a remove far below the pages
// the tests read) and appends ten more items: four control entries
// whatever n is. It returns the key.
func pagedSession(t testing.TB, s *Store, id string, n int) recall.Key {
	t.Helper()
	ctx := context.Background()
	k := recall.Key{Project: "pages", Session: id}
	add := func(es ...recall.Entry) {
		t.Helper()
		if _, err := s.Append(ctx, k, recall.Guard{}, es...); err != nil {
			t.Fatal(err)
		}
	}
	items := func(n int) []recall.Entry {
		es := make([]recall.Entry, n)
		for i := range es {
			es[i] = benchItem.Entry()
		}
		return es
	}
	for left := n; left > 0; left -= 1000 {
		add(items(min(left, 1000))...)
	}
	for range 3 {
		if _, err := s.Pop(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := json.Marshal(recall.ItemRef{Seq: 10})
	if err != nil {
		t.Fatal(err)
	}
	add(recall.Entry{Kind: recall.KindRemove, Data: ref})
	add(items(10)...)
	return k
}

// pageCase is a page of a pagedSession of n items, by position.
type pageCase struct {
	name string
	opts func(n int) recall.ItemPageOptions
}

// pageLimit is the size of the pages the bound test and the benchmark
// read.
const pageLimit = 50

// pageCases are the first, a middle and the last page of a pagedSession
// of n items, in either order.
var pageCases = []pageCase{
	{"newest/first", func(int) recall.ItemPageOptions { return recall.ItemPageOptions{Limit: pageLimit} }},
	{"newest/middle", func(n int) recall.ItemPageOptions {
		return recall.ItemPageOptions{Limit: pageLimit, After: recall.ItemRef{Seq: int64(n / 2)}}
	}},
	{"newest/last", func(int) recall.ItemPageOptions {
		return recall.ItemPageOptions{Limit: pageLimit, After: recall.ItemRef{Seq: pageLimit + 2}}
	}},
	{"oldest/first", func(int) recall.ItemPageOptions { return recall.ItemPageOptions{Limit: pageLimit, Oldest: true} }},
	{"oldest/middle", func(n int) recall.ItemPageOptions {
		return recall.ItemPageOptions{Limit: pageLimit, Oldest: true, After: recall.ItemRef{Seq: int64(n / 2)}}
	}},
	{"oldest/last", func(n int) recall.ItemPageOptions {
		// The session's last items: n-3 before the pops, 10 after them.
		return recall.ItemPageOptions{Limit: pageLimit, Oldest: true, After: recall.ItemRef{Seq: int64(n - 3 - pageLimit + 10)}}
	}},
}

// countingQuerier counts the rows its queries return (queryRow's single
// rows aside: the sessions row).
type countingQuerier struct {
	querier
	n *int
}

func (c countingQuerier) query(ctx context.Context, sql string, args ...any) (rows, error) {
	rs, err := c.querier.query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return countedRows{rs, c.n}, nil
}

type countedRows struct {
	rows
	n *int
}

func (r countedRows) Next() bool {
	ok := r.rows.Next()
	if ok {
		*r.n++
	}
	return ok
}

// TestReadItemsBound reads the first, a middle and the last page, newest
// and oldest first, of a session of 200 items and one of 20,000, each with
// a pop and a remove far below the pages, and counts the entry rows each
// page reads: at most the first window of seqs (2 * limit + 16, see
// readPage) and the four control entries, for either session. Reading the
// log to find its controls, or a page's window from the end, would read
// thousands. It also checks that the page is the one Items' view gives.
// Under -short the large session has 4,000 items (writing 20,000 was most
// of the test's time), still thirty times the bound.
// It counts readPage's rows, so the newest page too, which ReadItems
// reads with Items' statement when it can (TestPlans bounds that one).
func TestReadItemsBound(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		t.Parallel()
		ctx := context.Background()
		s := newStore(t)
		const bound = 2*pageLimit + 16 + 4
		large := 20_000
		if testing.Short() {
			large = 4_000
		}
		for _, n := range []int{200, large} {
			k := pagedSession(t, s, fmt.Sprint("s", n), n)
			view, _, err := s.Items(ctx, k, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range pageCases {
				opts := c.opts(n)
				var (
					read int
					page recall.ItemPage
				)
				err := s.db.view(ctx, func(ctx context.Context, q querier) (err error) {
					read = 0
					page, err = readPage(ctx, countingQuerier{q, &read}, k, opts)
					return err
				})
				if err != nil {
					t.Fatalf("%d items, %s: %v", n, c.name, err)
				}
				t.Logf("%d items, %s: %d rows", n, c.name, read)
				if read > bound {
					t.Errorf("%d items, %s: read %d rows, want at most %d", n, c.name, read, bound)
				}
				if len(page.Items) != pageLimit {
					t.Errorf("%d items, %s: %d items, want %d", n, c.name, len(page.Items), pageLimit)
				}
				want := view[pageStart(view, opts)]
				if len(page.Items) > 0 && page.Items[0].Ref != want.Ref {
					t.Errorf("%d items, %s: page starts at %+v, want %+v", n, c.name, page.Items[0].Ref, want.Ref)
				}
			}
		}
	})
}

// pageStart returns the index in view, oldest first, of the first item
// of the page opts selects.
func pageStart(view []recall.LiveItem, opts recall.ItemPageOptions) int {
	if opts.Oldest {
		for i, l := range view {
			if opts.After == (recall.ItemRef{}) || l.Ref.Compare(opts.After) > 0 {
				return i
			}
		}
		return 0
	}
	for i := len(view) - 1; i >= 0; i-- {
		if opts.After == (recall.ItemRef{}) || view[i].Ref.Compare(opts.After) < 0 {
			return i
		}
	}
	return 0
}

// TestReadItemsErrors checks what ReadItems shares with the store's other
// reads: a missing session is an empty page, an invalid key and a closed
// store are refused, and an ended context ends the call.
func TestReadItemsErrors(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		ctx := context.Background()
		s := newStore(t)
		page, err := s.ReadItems(ctx, recall.Key{Project: "p", Session: "none"}, recall.ItemPageOptions{Limit: 5})
		if err != nil || len(page.Items) != 0 || page.More || page.LastSeq != 0 {
			t.Errorf("missing session: %+v, %v", page, err)
		}
		if _, err := s.ReadItems(ctx, recall.Key{Project: "p"}, recall.ItemPageOptions{}); !errors.Is(err, recall.ErrInvalidKey) {
			t.Errorf("invalid key: %v, want ErrInvalidKey", err)
		}
		k := recall.Key{Project: "p", Session: "s"}
		if _, err := s.Append(ctx, k, recall.Guard{}, msg("hi").Entry()); err != nil {
			t.Fatal(err)
		}
		ended, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.ReadItems(ended, k, recall.ItemPageOptions{}); !errors.Is(err, context.Canceled) {
			t.Errorf("ended context: %v, want context.Canceled", err)
		}
		s.Close()
		if _, err := s.ReadItems(ctx, k, recall.ItemPageOptions{}); !errors.Is(err, recall.ErrClosed) {
			t.Errorf("closed store: %v, want ErrClosed", err)
		}
	})
}

// BenchmarkReadItems reads the first, a middle and the last page (50
// items), newest and oldest first, of a session of 20,000 items against
// the same page of a session of 200, alternately, in one store. The short
// session is the baseline: store-ns/op is the long session's page,
// raw-ns/op the short one's, and x-raw their ratio, about 1 when a page
// costs the same whatever the session's length.
func BenchmarkReadItems(b *testing.B) {
	benchDialects(b, func(b *testing.B, s *Store) {
		ctx := context.Background()
		short := pagedSession(b, s, "short", 200)
		long := pagedSession(b, s, "long", 20_000)
		analyze(b, s)
		for _, c := range pageCases {
			b.Run(c.name, func(b *testing.B) {
				read := func(k recall.Key, n int) error {
					page, err := s.ReadItems(ctx, k, c.opts(n))
					if err == nil && len(page.Items) != pageLimit {
						err = fmt.Errorf("%d items", len(page.Items))
					}
					return err
				}
				interleave(b, func() error { return read(long, 20_000) }, func() error { return read(short, 200) })
			})
		}
	})
}

// TestMigrateControlsIndex opens a database at schema version 8, written
// before the index of control entries existed, with this package:
// migration 9 indexes the control entries already in the logs, so
// ReadItems finds them.
func TestMigrateControlsIndex(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			q, ts, open := versionDatabase(t, dialect, 8)
			at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			var sid int64
			err := q.queryRow(ctx, `INSERT INTO sessions (project, id, subpath, created_at, updated_at, item_count, last_seq)
				VALUES ('old', 's', '', $1, $1, 4, 6) RETURNING sid`, ts(at)).Scan(&sid)
			if err != nil {
				t.Fatal(err)
			}
			pop, err := json.Marshal(recall.ItemRef{Seq: 5})
			if err != nil {
				t.Fatal(err)
			}
			for seq := 1; seq <= 6; seq++ {
				kind, data := "item", []byte(msg(fmt.Sprint("m", seq)))
				if seq == 6 {
					kind, data = "pop", pop
				}
				if _, err := q.exec(ctx, `INSERT INTO entries (session, seq, kind, payload, time) VALUES ($1, $2, $3, $4, $5)`,
					sid, seq, kind, data, ts(at)); err != nil {
					t.Fatal(err)
				}
			}
			s := open()
			exists := `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'entries_controls'`
			if dialect == "postgres" {
				exists = `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'entries_controls'`
			}
			var n int
			if err := s.db.q().queryRow(ctx, exists).Scan(&n); err != nil || n != 1 {
				t.Fatalf("entries_controls: %d indexes (%v), want 1", n, err)
			}
			page, err := s.ReadItems(ctx, recall.Key{Project: "old", Session: "s"}, recall.ItemPageOptions{Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, l := range page.Items {
				got = append(got, l.Ref.Seq)
			}
			if fmt.Sprint(got) != "[4 3]" || !page.More || page.LastSeq != 6 {
				t.Errorf("page %v, More %v, LastSeq %d; want [4 3], true, 6", got, page.More, page.LastSeq)
			}
		})
	}
}
