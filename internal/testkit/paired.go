package testkit

import (
	"testing"
	"time"
)

// Paired is the loop of a benchmark that compares an operation with its
// baseline in the same run: it runs base and op alternately, b.N times
// each, the first of the two swapping every iteration, so both see the
// same machine at the same moments. It reports each one's time per call
// (base-us/op, op-us/op) and x-base, base's time over op's: op's speed as
// a fraction of the baseline's. On a shared machine that ratio is the
// figure to trust (docs/BENCHMARKS.md); the absolute times drift with the
// load.
func Paired(b *testing.B, base, op func()) {
	b.Helper()
	var tBase, tOp time.Duration
	i := 0
	for b.Loop() {
		first, second := base, op
		if i%2 == 1 {
			first, second = op, base
		}
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		t2 := time.Now()
		if i%2 == 0 {
			tBase, tOp = tBase+t1.Sub(t0), tOp+t2.Sub(t1)
		} else {
			tOp, tBase = tOp+t1.Sub(t0), tBase+t2.Sub(t1)
		}
		i++
	}
	n := float64(b.N) * float64(time.Microsecond)
	b.ReportMetric(float64(tBase)/n, "base-us/op")
	b.ReportMetric(float64(tOp)/n, "op-us/op")
	b.ReportMetric(float64(tBase)/float64(tOp), "x-base")
}
