package mirror_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/mirror"
)

// BenchmarkAppend measures the local append latency with the mirror on,
// replica healthy or down, against the bare primary in the same run, for a
// file store (fsync always, the default) and an in-memory primary. Each op
// appends one item to one of 16 sessions. docs/BENCHMARKS.md ("Mirror")
// records the figures.
func BenchmarkAppend(b *testing.B) {
	primaries := []struct {
		name string
		open func(b *testing.B) recall.Store
	}{
		{"file", func(b *testing.B) recall.Store {
			fs, err := filestore.Open(filestore.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			return fs
		}},
		{"mem", func(b *testing.B) recall.Store { return memstore.New(memstore.Options{}) }},
	}
	replicas := []struct {
		name string
		open func(b *testing.B) recall.Store // nil: no mirror
	}{
		{"bare", nil},
		{"mirror-healthy-mem", func(b *testing.B) recall.Store { return memstore.New(memstore.Options{}) }},
		{"mirror-healthy-redis", func(b *testing.B) recall.Store {
			url, prefix := testsvc.RedisPrefix(b)
			return openRedis(b, url, prefix)
		}},
		{"mirror-down", func(b *testing.B) recall.Store {
			f := newFaulty(memstore.New(memstore.Options{}), 1)
			f.setDown(true)
			return f
		}},
	}
	for _, p := range primaries {
		for _, r := range replicas {
			b.Run(p.name+"/"+r.name, func(b *testing.B) {
				st := p.open(b)
				var m *mirror.Store
				if r.open != nil {
					var err error
					m, err = mirror.New(st, r.open(b), mirror.Options{StateDir: b.TempDir()})
					if err != nil {
						b.Fatal(err)
					}
					st = m
				}
				ctx := context.Background()
				var keys []recall.Key
				for i := range 16 {
					keys = append(keys, recall.Key{Project: "bench", Session: fmt.Sprintf("s%02d", i)})
				}
				e := recall.Item(`{"type":"message","role":"user","content":"a message of a typical length, a sentence or two long, to append"}`).Entry()
				i := 0
				for b.Loop() {
					if _, err := st.Append(ctx, keys[i%len(keys)], recall.Guard{}, e); err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.StopTimer()
				if m != nil && r.name != "mirror-down" {
					// The replica kept up, or at least catches up: the
					// figure is not bought by dropping replication.
					fctx, cancel := context.WithTimeout(ctx, time.Minute)
					err := m.Flush(fctx)
					cancel()
					if err != nil {
						b.Fatalf("replica did not catch up: %v", err)
					}
				}
				st.Close()
			})
		}
	}
}

// BenchmarkAppendInterleaved measures the same thing with the two stores
// side by side in one loop: each iteration appends once to a bare primary
// and once to a mirror over a primary of the same kind, in alternating
// order, and times each append. Machine noise (other processes on a shared
// machine) then hits both equally. The mirror's worker replicates in the
// background during both, so this isolates the write path's own cost;
// BenchmarkAppend above includes the worker's competition for the CPU.
// It reports bare-ns/op, mirror-ns/op and their ratio.
func BenchmarkAppendInterleaved(b *testing.B) {
	kinds := []struct {
		name string
		open func(b *testing.B) recall.Store
	}{
		{"file", func(b *testing.B) recall.Store {
			fs, err := filestore.Open(filestore.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			return fs
		}},
		{"mem", func(b *testing.B) recall.Store { return memstore.New(memstore.Options{}) }},
	}
	for _, k := range kinds {
		for _, down := range []bool{false, true} {
			name := k.name + "/healthy"
			if down {
				name = k.name + "/down"
			}
			b.Run(name, func(b *testing.B) {
				bare := k.open(b)
				defer bare.Close()
				replica := newFaulty(memstore.New(memstore.Options{}), 1)
				replica.setDown(down)
				m, err := mirror.New(k.open(b), replica, mirror.Options{StateDir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				ctx := context.Background()
				e := recall.Item(`{"type":"message","role":"user","content":"a message of a typical length, a sentence or two long, to append"}`).Entry()
				var tBare, tMirror time.Duration
				timed := func(st recall.Store, key recall.Key, sum *time.Duration) {
					start := time.Now()
					if _, err := st.Append(ctx, key, recall.Guard{}, e); err != nil {
						b.Fatal(err)
					}
					*sum += time.Since(start)
				}
				i := 0
				for b.Loop() {
					key := recall.Key{Project: "bench", Session: fmt.Sprintf("s%02d", i%16)}
					if i%2 == 0 {
						timed(bare, key, &tBare)
						timed(m, key, &tMirror)
					} else {
						timed(m, key, &tMirror)
						timed(bare, key, &tBare)
					}
					i++
				}
				b.ReportMetric(float64(tBare.Nanoseconds())/float64(i), "bare-ns/op")
				b.ReportMetric(float64(tMirror.Nanoseconds())/float64(i), "mirror-ns/op")
				b.ReportMetric(float64(tMirror)/float64(tBare), "ratio")
			})
		}
	}
}
