package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// fallbackOnly hides a store's Fork: recall.StoreSession.Fork on it takes its fallback
// (Load, then Append with IfNew).
type fallbackOnly struct{ recall.Store }

// CompareFork cross-checks a store's native fork (storekit.Forker) against
// recall.StoreSession.Fork's fallback, as testing/fstest checks an optional interface
// against the generic path: it forks src at atSeq natively onto native and
// through the fallback onto fallback, and reports as test errors where the
// two disagree: not the same error, or not the same log but for the times,
// not the same metadata but for the key and the times. It also checks that
// the native fork's Meta is what Stat and Load read, and that its entries
// carry one time (one write). It returns whether both forks were made (a
// caller adds its store's own checks only then) and the native fork's
// error.
func CompareFork(t *testing.T, s recall.Store, src recall.Key, atSeq int64, native, fallback recall.Key) (bool, error) {
	t.Helper()
	ctx := context.Background()
	nm, nerr := recall.NewSession(s, src).Fork(ctx, atSeq, native)
	fm, ferr := recall.NewSession(fallbackOnly{s}, src).Fork(ctx, atSeq, fallback)
	if nerr != nil || ferr != nil {
		same := nerr != nil && ferr != nil
		for _, sentinel := range []error{recall.ErrNotFound, recall.ErrConflict, recall.ErrInvalidKey, recall.ErrInvalidItem} {
			same = same && errors.Is(nerr, sentinel) == errors.Is(ferr, sentinel)
		}
		if !same {
			t.Errorf("fork of %s at %d: native %v, fallback %v", src, atSeq, nerr, ferr)
		}
		return false, nerr
	}
	lm, nlog, err := s.Load(ctx, native)
	if err != nil {
		t.Fatal(err)
	}
	if d := MetaDiff(nm, lm, true); d != "" {
		t.Errorf("fork of %s at %d: the Meta Fork returned differs from Load's: %s", src, atSeq, d)
	}
	if sm, err := s.Stat(ctx, native); err != nil || MetaDiff(sm, lm, true) != "" {
		t.Errorf("fork of %s at %d: Stat differs from Load: %s, %v", src, atSeq, MetaDiff(sm, lm, true), err)
	}
	wm, flog, err := s.Load(ctx, fallback)
	if err != nil {
		t.Fatal(err)
	}
	if d := MetaDiff(fm, wm, true); d != "" {
		t.Errorf("fork of %s at %d: the fallback's Meta differs from Load's: %s", src, atSeq, d)
	}
	wm.Key = native
	if d := MetaDiff(lm, wm, false); d != "" {
		t.Errorf("fork of %s at %d: native fork's metadata differs from the fallback's: %s", src, atSeq, d)
	}
	if len(nlog) != len(flog) {
		t.Fatalf("fork of %s at %d: native log of %d entries, fallback's %d", src, atSeq, len(nlog), len(flog))
	}
	for i := range nlog {
		n, f := nlog[i], flog[i]
		if n.Seq != f.Seq || n.Kind != f.Kind || !bytes.Equal(n.Data, f.Data) || (n.Usage == nil) != (f.Usage == nil) {
			t.Errorf("fork of %s at %d: entry %d: native %d %s %s, fallback %d %s %s", src, atSeq, i, n.Seq, n.Kind, n.Data, f.Seq, f.Kind, f.Data)
		}
		if !n.Time.Equal(nlog[0].Time) {
			t.Errorf("fork of %s at %d: entry %d at %v, the fork entry at %v: one write, one time", src, atSeq, n.Seq, n.Time, nlog[0].Time)
		}
	}
	return true, nil
}

// WithoutForker returns s with its native fork hidden: recall.StoreSession.Fork on it
// takes the fallback (Load, then Append with IfNew).
func WithoutForker(s recall.Store) recall.Store { return fallbackOnly{s} }

// BenchmarkFork times a store's native fork of src against recall.StoreSession.Fork's
// fallback, alternating the two in one loop so that both see the same
// machine, after one untimed fork each way (the first fork of a run pays
// for cold caches and prepared statements). It reports native-ns/op,
// fallback-ns/op and x-fallback (fallback time / native time: above 1 the
// native fork is faster). The forks are removed as it goes.
func BenchmarkFork(b *testing.B, s recall.Store, src recall.Key) {
	b.Helper()
	ctx := context.Background()
	fork := func(st recall.Store, k recall.Key) time.Duration {
		t0 := time.Now()
		if _, err := recall.NewSession(st, src).Fork(ctx, 0, k); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t0)
		if err := s.Remove(ctx, k); err != nil {
			b.Fatal(err)
		}
		return d
	}
	warm := recall.Key{Project: src.Project, Session: "bench-fork-warm"}
	fork(s, warm)
	fork(WithoutForker(s), warm)
	var nt, ft time.Duration
	n := 0
	for b.Loop() {
		nk := recall.Key{Project: src.Project, Session: fmt.Sprint("bench-fork-native", n)}
		fk := recall.Key{Project: src.Project, Session: fmt.Sprint("bench-fork-fallback", n)}
		if n%2 == 0 {
			nt += fork(s, nk)
			ft += fork(WithoutForker(s), fk)
		} else {
			ft += fork(WithoutForker(s), fk)
			nt += fork(s, nk)
		}
		n++
	}
	b.ReportMetric(float64(nt.Nanoseconds())/float64(n), "native-ns/op")
	b.ReportMetric(float64(ft.Nanoseconds())/float64(n), "fallback-ns/op")
	b.ReportMetric(ft.Seconds()/nt.Seconds(), "x-fallback")
}
