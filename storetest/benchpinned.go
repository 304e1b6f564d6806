package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// BenchPinnedListing measures ListOptions.Pinned on s, whose projects
// small and large each hold 5 pinned sessions among many: each loop lists
// the pinned sessions of both, then every session of large filtered by
// hand (what a listing without the filter costs), side by side. It reports
// the time of each (small-ns/op, large-ns/op, scan-ns/op) and the ratios
// x-small = large ÷ small (O(pinned): about 1) and x-scan = scan ÷ large.
func BenchPinnedListing(b *testing.B, s recall.Store, small, large string) {
	ctx := context.Background()
	pinned := func(project string) {
		p, err := s.List(ctx, project, recall.ListOptions{Pinned: true})
		if err == nil && len(p.Sessions) != 5 {
			err = fmt.Errorf("listed %d pinned of %s", len(p.Sessions), project)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	var ts, tl, tw time.Duration
	for b.Loop() {
		t0 := time.Now()
		pinned(small)
		t1 := time.Now()
		pinned(large)
		t2 := time.Now()
		p, err := s.List(ctx, large, recall.ListOptions{Limit: -1})
		if err != nil {
			b.Fatal(err)
		}
		found := 0
		for _, m := range p.Sessions {
			if m.Pinned {
				found++
			}
		}
		if found != 5 {
			b.Fatalf("the whole listing holds %d pinned", found)
		}
		ts, tl, tw = ts+t1.Sub(t0), tl+t2.Sub(t1), tw+time.Since(t2)
	}
	b.ReportMetric(float64(ts.Nanoseconds())/float64(b.N), "small-ns/op")
	b.ReportMetric(float64(tl.Nanoseconds())/float64(b.N), "large-ns/op")
	b.ReportMetric(float64(tw.Nanoseconds())/float64(b.N), "scan-ns/op")
	b.ReportMetric(float64(tl)/float64(ts), "x-small")
	b.ReportMetric(float64(tw)/float64(tl), "x-scan")
}
