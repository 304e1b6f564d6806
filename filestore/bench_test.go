package filestore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/durable"
	"github.com/recallkit/recall/internal/fsys"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storekit"
)

// The benchmarks run with raw baselines in the same run, so that ratios
// mean something on a busy machine. docs/BENCHMARKS.md has the figures and
// the command. Data goes to $RECALL_BENCH_DIR when set (to measure another
// disk), else to the test's temporary directory.

// reportCPU adds the CPU time per operation to a benchmark's results
// (cpu-ms/op): on a machine shared with other work, it shows what an
// operation costs when wall time mostly shows how long it waited for a CPU.
func reportCPU(b *testing.B) func() {
	start := fsys.CPUTime()
	return func() {
		b.ReportMetric(float64(fsys.CPUTime()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
}

func benchDir(b *testing.B) string {
	if d := os.Getenv("RECALL_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "filestore-bench-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// item500 returns a 500-byte message item.
func item500(i int) recall.Item {
	head := fmt.Sprintf(`{"type":"message","role":"user","content":"%08d `, i)
	return recall.Item(head + strings.Repeat("x", 500-len(head)-2) + `"}`)
}

// BenchmarkAppend compares a durable (SyncAlways) append of one 500-byte
// item, through Session.AddItems, with its raw baseline: a bare loop of a
// 500-byte write and an fdatasync (the call the store makes) on an
// O_APPEND file, and the same with a full fsync.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	it := item500(0)
	line := append([]byte(it), '\n')
	raw := func(b *testing.B, full bool) func() {
		f, err := os.OpenFile(filepath.Join(benchDir(b), "raw"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		return func() {
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
			if full {
				err = f.Sync()
			} else {
				err = durable.SyncData(f) // the store's sync: fdatasync on Linux
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	store := func(b *testing.B) func() {
		s, err := filestore.Open(filestore.Options{Dir: benchDir(b)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		sess := recall.NewSession(s, recall.Key{Project: "bench", Session: "append"})
		if err := sess.AddItems(ctx, it); err != nil { // the log exists: measure appends, not creation
			b.Fatal(err)
		}
		return func() {
			if err := sess.AddItems(ctx, it); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("raw-fdatasync", func(b *testing.B) {
		op := raw(b, false)
		for b.Loop() {
			op()
		}
	})
	b.Run("raw-fsync", func(b *testing.B) {
		op := raw(b, true)
		for b.Loop() {
			op()
		}
	})
	b.Run("AddItems", func(b *testing.B) {
		op := store(b)
		for b.Loop() {
			op()
		}
	})
	b.Run("AddItems-vs-raw-fdatasync", func(b *testing.B) { testkit.Paired(b, raw(b, false), store(b)) })
	b.Run("AddItems-vs-raw-fsync", func(b *testing.B) { testkit.Paired(b, raw(b, true), store(b)) })
}

// makeSession writes a session of n 500-byte items with SyncNever, in
// batches, and returns its store, key and log path.
func makeSession(b *testing.B, dir string, n int) (*filestore.Store, recall.Key, string) {
	b.Helper()
	s, err := filestore.Open(filestore.Options{Dir: dir, Sync: filestore.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	key := recall.Key{Project: "bench", Session: fmt.Sprintf("items-%d", n)}
	ctx := context.Background()
	const batch = 1000
	for i := 0; i < n; i += batch {
		var items []recall.Item
		for j := i; j < min(n, i+batch); j++ {
			items = append(items, item500(j))
		}
		if err := recall.NewSession(s, key).AddItems(ctx, items...); err != nil {
			b.Fatal(err)
		}
	}
	return s, key, logPath(b, s, key)
}

// BenchmarkLoad compares loading every item of a 10,000-item session with
// its raw baseline: reading the log, splitting it into lines and checking
// each with json.Valid. Throughputs are over the log's size.
func BenchmarkLoad(b *testing.B) {
	s, key, path := makeSession(b, benchDir(b), 10_000)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	raw := func() {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for line := range bytes.Lines(data) {
			if json.Valid(line) {
				n++
			}
		}
		if n != 10_000 {
			b.Fatalf("%d valid lines", n)
		}
	}
	getItems := func() {
		items, err := recall.NewSession(s, key).GetItems(ctx, 0)
		if err != nil || len(items) != 10_000 {
			b.Fatal(len(items), err)
		}
	}
	load := func() {
		_, es, err := s.Load(ctx, key)
		if err != nil || len(es) != 10_000 {
			b.Fatal(len(es), err)
		}
	}
	for _, bm := range []struct {
		name string
		op   func()
	}{{"raw-read-split-valid", raw}, {"GetItems-all", getItems}, {"Load", load}} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(fi.Size())
			for b.Loop() {
				bm.op()
			}
		})
	}
	b.Run("GetItems-all-vs-raw", func(b *testing.B) { testkit.Paired(b, raw, getItems) })
	b.Run("Load-vs-raw", func(b *testing.B) { testkit.Paired(b, raw, load) })
}

// BenchmarkGetItems20 reads the newest 20 items of sessions of 1,000 and
// 100,000 items: the cost must not grow with the session. The paired run
// reports x-base = time on 1,000 items / time on 100,000 items.
func BenchmarkGetItems20(b *testing.B) {
	dir := benchDir(b)
	ctx := context.Background()
	ops := map[int]func(){}
	for _, n := range []int{1_000, 100_000} {
		s, key, _ := makeSession(b, dir, n)
		sess := recall.NewSession(s, key)
		ops[n] = func() {
			items, err := sess.GetItems(ctx, 20)
			if err != nil || len(items) != 20 {
				b.Fatal(len(items), err)
			}
		}
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			for b.Loop() {
				ops[n]()
			}
		})
	}
	b.Run("100000-vs-1000", func(b *testing.B) { testkit.Paired(b, ops[1_000], ops[100_000]) })
}

// makeProject writes sessions logs of items items each straight into a
// project directory (as a template with distinct times), then lets a
// store build the index, and returns the home.
func makeProject(b *testing.B, sessions, items int) string {
	b.Helper()
	home := benchDir(b)
	s, err := filestore.Open(filestore.Options{Dir: home, Sync: filestore.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	// Every entry of the template has this time; each copy replaces it
	// with its own, so the sessions' Updated differ.
	placeholder := time.Date(2025, 1, 1, 0, 0, 0, 1000, time.UTC)
	tmpl := recall.Key{Project: "template", Session: "t"}
	for i := range items {
		role := []string{"user", "assistant"}[i%2]
		e := recall.Message(role, fmt.Sprintf("message %d %s", i, strings.Repeat("lorem ipsum ", 20))).Entry()
		e.Time = placeholder
		if _, err := s.Append(ctx, tmpl, recall.Guard{}, e); err != nil {
			b.Fatal(err)
		}
	}
	title := recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "a session title", Source: recall.TitleUser})
	title.Time = placeholder
	if _, err := s.Append(ctx, tmpl, recall.Guard{}, title); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(logPath(b, s, tmpl))
	if err != nil {
		b.Fatal(err)
	}
	dir, err := s.ProjectDir("bench")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range sessions {
		t, _ := base.Add(time.Duration(i) * time.Second).MarshalJSON()
		old, _ := placeholder.MarshalJSON()
		log := bytes.ReplaceAll(data, old, t)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%05d.jsonl", i)), log, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.List(ctx, "bench", recall.ListOptions{}); err != nil { // builds the index
		b.Fatal(err)
	}
	return home
}

// BenchmarkList10k lists the first page (50) of a project of 10,000
// sessions of 20 items: from a store that has listed before ("warm"), from
// a new store that must read the index file ("cold", as the CLI does), and
// the baseline of parsing every log instead of reading an index (Load of
// each, the store's own fast reader). The paired runs report x-base =
// parse time / List time: how many times faster List is.
func BenchmarkList10k(b *testing.B) {
	const sessions = 10_000
	home := makeProject(b, sessions, 20)
	ctx := context.Background()
	open := func() *filestore.Store {
		s, err := filestore.Open(filestore.Options{Dir: home})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	list := func(s *filestore.Store) {
		p, err := s.List(ctx, "bench", recall.ListOptions{})
		if err != nil || len(p.Sessions) != 50 || p.Sessions[0].Key.Session != fmt.Sprintf("s%05d", sessions-1) {
			b.Fatalf("page of %d, %v", len(p.Sessions), err)
		}
	}
	warmStore := open()
	list(warmStore)
	warm := func() { list(warmStore) }
	cold := func() {
		s := open()
		list(s)
		s.Close()
	}
	parser := open()
	dir, _ := parser.ProjectDir("bench")
	parse := func() {
		names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		var metas []recall.Meta
		for _, name := range names {
			key := recall.Key{Project: "bench", Session: strings.TrimSuffix(filepath.Base(name), ".jsonl")}
			m, _, err := parser.Load(ctx, key)
			if err != nil {
				b.Fatal(err)
			}
			metas = append(metas, m)
		}
		if p, err := storekit.Paginate(metas, recall.ListOptions{}); err != nil || len(p.Sessions) != 50 {
			b.Fatal(len(p.Sessions), err)
		}
	}
	parse() // the parser's own cache is warm: later Loads add nothing to the index
	// The floor of a List that checks every log: read the directory, stat
	// each log.
	readdirStat := func() { readdirStatFloor(b, dir) }
	for _, bm := range []struct {
		name string
		op   func()
	}{{"warm", warm}, {"cold", cold}, {"parse-every-log", parse}, {"raw-readdir-stat", readdirStat}} {
		b.Run(bm.name, func(b *testing.B) {
			defer reportCPU(b)()
			for b.Loop() {
				bm.op()
			}
		})
	}
	b.Run("warm-vs-parse", func(b *testing.B) { testkit.Paired(b, parse, warm) })
	b.Run("warm-vs-readdir-stat", func(b *testing.B) { testkit.Paired(b, readdirStat, warm) })
	b.Run("cold-vs-parse", func(b *testing.B) { testkit.Paired(b, parse, cold) })
}

// BenchmarkFork10k forks a 10,000-item session (durably) onto a new key.
func BenchmarkFork10k(b *testing.B) {
	s, key, _ := makeSession(b, benchDir(b), 10_000)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		if _, err := recall.NewSession(s, key).Fork(ctx, 0, recall.Key{Project: "bench", Session: fmt.Sprintf("fork-%d", i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTail50 compares GetItems(50) on a 10,000-item session with its
// raw baseline, the floor of the side-by-side harness's W2 "last 50":
// open the file, stat it, read 64 KiB back from its end, split the lines
// and check the last 50 with json.Valid.
func BenchmarkTail50(b *testing.B) {
	const limit = 50
	s, key, path := makeSession(b, benchDir(b), 10_000)
	ctx := context.Background()
	sess := recall.NewSession(s, key)
	op := func() {
		items, err := sess.GetItems(ctx, limit)
		if err != nil || len(items) != limit {
			b.Fatal(len(items), err)
		}
	}
	raw := func() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			b.Fatal(err)
		}
		n := min(fi.Size(), 64<<10)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, fi.Size()-n); err != nil {
			b.Fatal(err)
		}
		var lines [][]byte
		for line := range bytes.Lines(buf) {
			lines = append(lines, bytes.TrimSuffix(line, []byte("\n")))
		}
		lines = lines[len(lines)-limit:]
		for _, l := range lines {
			if !json.Valid(l) {
				b.Fatal("invalid line")
			}
		}
	}
	b.Run("store", func(b *testing.B) {
		for b.Loop() {
			op()
		}
	})
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			raw()
		}
	})
	b.Run("store-vs-raw", func(b *testing.B) { testkit.Paired(b, raw, op) })
}

// BenchmarkListScale lists the first page (50) of a project of 1,000,
// 10,000 and 100,000 sessions: from a new store, as `recall ls` does
// ("cold": open, List, close), from a store that listed before ("warm"),
// and from a new store after a name came and went in the directory
// ("dir-moved": the directory's names are read, no log is stat'ed), and
// from a new store when the journal's tail is as long as it gets before a
// writer rewrites it ("cold-full-tail"). A new store reads the journal's
// head, tail and the start of its sorted section (listHead). The floor of
// a List that checks every log, a directory read plus one stat per log,
// runs paired with the cold List: x-base is floor time / List time.
func BenchmarkListScale(b *testing.B) {
	for _, sessions := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			home := makeProject(b, sessions, 4)
			ctx := context.Background()
			open := func() *filestore.Store {
				s, err := filestore.Open(filestore.Options{Dir: home})
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
			want := fmt.Sprintf("s%05d", sessions-1)
			list := func(s *filestore.Store) {
				p, err := s.List(ctx, "bench", recall.ListOptions{})
				if err != nil || len(p.Sessions) != 50 || want != "" && p.Sessions[0].Key.Session != want {
					b.Fatalf("page of %d, %v", len(p.Sessions), err)
				}
			}
			// Two lists settle the journal: the first rebuilds it from
			// the logs the benchmark wrote by hand.
			for range 2 {
				s := open()
				list(s)
				s.Close()
			}
			warmStore := open()
			defer warmStore.Close()
			list(warmStore)
			dir, _ := warmStore.ProjectDir("bench")
			cold := func() {
				s := open()
				list(s)
				s.Close()
			}
			moved := func() {
				f := filepath.Join(dir, "moved.txt")
				os.WriteFile(f, nil, 0o600) // a name comes and goes: the directory's mtime moves
				os.Remove(f)
				cold()
			}
			floor := func() { readdirStatFloor(b, dir) }
			b.Run("cold", func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					cold()
				}
			})
			b.Run("warm", func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					list(warmStore)
				}
			})
			b.Run("dir-moved", func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					moved()
				}
			})
			b.Run("cold-vs-readdir-stat", func(b *testing.B) { testkit.Paired(b, floor, cold) })
			b.Run("dir-moved-vs-readdir-stat", func(b *testing.B) { testkit.Paired(b, floor, moved) })
			// A new process after another created a session (which moved
			// the directory; its writer checked the names before it
			// closed): the creation is not timed.
			want = ""
			b.Run("cold-after-create", func(b *testing.B) {
				defer reportCPU(b)()
				for i := range b.N {
					b.StopTimer()
					w, err := filestore.Open(filestore.Options{Dir: home, Sync: filestore.SyncNever})
					if err != nil {
						b.Fatal(err)
					}
					k := recall.Key{Project: "bench", Session: fmt.Sprintf("new%05d", i)}
					if _, err := w.Append(ctx, k, recall.Guard{}, recall.Message("user", "new").Entry()); err != nil {
						b.Fatal(err)
					}
					w.Close()
					b.StartTimer()
					cold()
				}
			})
			// The worst case of a new process: the journal's tail just
			// short of the length at which a new process reads the whole
			// journal, which rewrites it (twice max(1024, sessions/32)
			// lines; an append adds two). The appends come from short
			// writers, which never rewrite the journal themselves.
			if err := filestore.Rewrite(warmStore, "bench"); err != nil {
				b.Fatal(err)
			}
			var w *filestore.Store
			var err error
			for i := range (2*max(1024, sessions/32) - 64) / 2 {
				if i%100 == 0 {
					if w != nil {
						w.Close()
					}
					if w, err = filestore.Open(filestore.Options{Dir: home, Sync: filestore.SyncNever}); err != nil {
						b.Fatal(err)
					}
				}
				k := recall.Key{Project: "bench", Session: fmt.Sprintf("s%05d", (i*7919)%sessions)}
				if _, err := w.Append(ctx, k, recall.IfExists(), recall.Message("user", "more").Entry()); err != nil {
					b.Fatal(err)
				}
			}
			w.Close()
			b.Run("cold-full-tail", func(b *testing.B) {
				defer reportCPU(b)()
				for b.Loop() {
					cold()
				}
			})
		})
	}
}

// readdirStatFloor is the floor of a List that checks every log: read the
// directory dir, stat each name in it.
func readdirStatFloor(b *testing.B, dir string) {
	d, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range names {
		fsys.StatAt(d, name) // List drops what is not a regular log; so does the floor
	}
}
