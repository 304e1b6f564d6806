package export_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
)

// genStore is a store of one session of n items of about 1 KB each (a
// pop every 1,000 entries) that it makes up as they are read, so the
// heap holds only what the reader keeps. It serves Stat and Entries, and
// counts the entries it hands out at once.
type genStore struct {
	recall.Store // any other method panics
	key          recall.Key
	n            int64
	longest      int
}

var genText = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 22)

func (g *genStore) entry(seq int64) recall.Entry {
	t := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(seq) * time.Second)
	if seq%1000 == 0 {
		d, _ := json.Marshal(recall.ItemRef{Seq: seq - 1})
		return recall.Entry{Seq: seq, Kind: recall.KindPop, Time: t, Data: d}
	}
	var it recall.Item
	switch seq % 3 {
	case 0:
		it = recall.Message("user", genText)
	case 1:
		it = call(fmt.Sprint("c", seq), "read_file", `{"path":"`+genText[:40]+`"}`)
	default:
		it = output(fmt.Sprint("c", seq-1), genText)
	}
	return recall.Entry{Seq: seq, Kind: recall.KindItem, Time: t, Data: json.RawMessage(it)}
}

func (g *genStore) Stat(_ context.Context, key recall.Key) (recall.Meta, error) {
	if key != g.key {
		return recall.Meta{}, recall.ErrNotFound
	}
	return recall.Meta{Key: key, Title: "generated", Created: g.entry(1).Time, Updated: g.entry(g.n).Time,
		ItemCount: int(g.n - 2*(g.n/1000)), LastSeq: g.n}, nil
}

func (g *genStore) Entries(_ context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	if key != g.key {
		return nil, recall.ErrNotFound
	}
	var es []recall.Entry
	for seq := after + 1; seq <= g.n && (limit <= 0 || len(es) < limit); seq++ {
		es = append(es, g.entry(seq))
	}
	g.longest = max(g.longest, len(es))
	return es, nil
}

func (g *genStore) List(context.Context, string, recall.ListOptions) (recall.Page, error) {
	return recall.Page{}, nil
}

// heapWriter discards what it is given, and samples the heap in use
// every few writes (each a buffer of 64 KB from Stream).
type heapWriter struct {
	writes int
	bytes  int64
	peak   uint64
}

func (h *heapWriter) Write(p []byte) (int, error) {
	if h.writes%4 == 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		h.peak = max(h.peak, ms.HeapInuse)
	}
	h.writes++
	h.bytes += int64(len(p))
	return len(p), nil
}

// peakHeap streams the generated session of n items in format f and
// returns the most heap in use while it did, beyond what was in use
// before, and how much it wrote.
func peakHeap(t *testing.T, f export.Format, n int64) (uint64, int64) {
	g := &genStore{key: recall.Key{Project: "p", Session: "big"}, n: n}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := &heapWriter{}
	if err := export.Stream(context.Background(), h, f, g, g.key); err != nil {
		t.Fatal(err)
	}
	if g.longest > 512 {
		t.Errorf("%s: Entries returned %d entries at once", f, g.longest)
	}
	return h.peak - min(h.peak, ms.HeapInuse), h.bytes
}

// An export's memory does not grow with the session: the heap in use
// while 100,000 items (some 110 MB of log) are exported is what it is for
// 10,000, in every format.
func TestStreamMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("exports 440,000 items")
	}
	const bound = 24 << 20
	for _, f := range export.Formats {
		small, _ := peakHeap(t, f, 10_000)
		big, size := peakHeap(t, f, 100_000)
		t.Logf("%s: %d MB written; heap in use grew by %.1f MB for 10,000 items, %.1f MB for 100,000",
			f, size>>20, float64(small)/(1<<20), float64(big)/(1<<20))
		if big > bound || big > 2*small+8<<20 {
			t.Errorf("%s: the heap in use grew by %d MB exporting 100,000 items, %d MB for 10,000; want under %d MB for both",
				f, big>>20, small>>20, bound>>20)
		}
	}
}
