package filestore_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
)

// BenchmarkReadItems reads pages of 20 items of a session of 200 items
// and of one of 20,000 (each with a few removes spread over it), the
// first, a middle and the last page, newest first and oldest first. A
// page should cost about the same in both: the small session is the
// baseline. bytes-read/op is what the process read from files per page
// (Linux only), the figure that shows the cost does not grow with the
// session; the time follows it.
func BenchmarkReadItems(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{200, 20_000} {
		s, err := filestore.Open(filestore.Options{Dir: benchDir(b), Sync: filestore.SyncNever})
		if err != nil {
			b.Fatal(err)
		}
		key := recall.Key{Project: "p", Session: "s" + strconv.Itoa(n)}
		fillPaged(b, s, key, n)
		view, _, err := s.Items(ctx, key, 0)
		if err != nil {
			b.Fatal(err)
		}
		const limit = 20
		for _, oldest := range []bool{false, true} {
			order := "newest"
			if oldest {
				order = "oldest"
			}
			// The ref each page starts after: none, the middle of the
			// view, and the item that leaves one page in that order.
			afterLast := view[limit].Ref
			if oldest {
				afterLast = view[len(view)-limit-1].Ref
			}
			for _, pg := range []struct {
				name  string
				after recall.ItemRef
			}{{"first", recall.ItemRef{}}, {"middle", view[len(view)/2].Ref}, {"last", afterLast}} {
				opts := recall.ItemPageOptions{Limit: limit, Oldest: oldest, After: pg.after}
				b.Run(fmt.Sprintf("items=%d/order=%s/page=%s", n, order, pg.name), func(b *testing.B) {
					read := readBytes()
					for b.Loop() {
						page, err := s.ReadItems(ctx, key, opts)
						if err != nil {
							b.Fatal(err)
						}
						if len(page.Items) != limit {
							b.Fatalf("a page of %d items, want %d", len(page.Items), limit)
						}
					}
					if read >= 0 {
						b.ReportMetric(float64(readBytes()-read)/float64(b.N), "bytes-read/op")
					}
				})
			}
		}
		s.Close()
	}
}

// fillPaged writes a session of n 500-byte items, with a remove of an
// older item every n/4 items, in batches of 100.
func fillPaged(b *testing.B, s *filestore.Store, key recall.Key, n int) {
	ctx := context.Background()
	batch := make([]recall.Entry, 0, 100)
	seq := int64(0)
	flush := func() {
		if _, err := s.Append(ctx, key, recall.Guard{}, batch...); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := range n {
		batch = append(batch, item500(i).Entry())
		seq++
		if i%(n/4) == n/8 {
			batch = append(batch, recall.NewEntry(recall.KindRemove, recall.ItemRef{Seq: seq - 3}))
			seq++
		}
		if len(batch) >= 100 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
}

// readBytes returns how many bytes the process has read through system
// calls (rchar in /proc/self/io), or -1 where that is not known.
func readBytes() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for line := range bytes.Lines(data) {
		if v, ok := bytes.CutPrefix(line, []byte("rchar: ")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}
