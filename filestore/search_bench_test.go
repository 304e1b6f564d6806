package filestore_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/fsys"
)

// The search benchmark's corpus: sessions × items per session, synthetic,
// mixed English and Chinese. RECALL_SEARCH_BENCH_FULL=1 makes it the
// issue's 10,000 sessions and 1,000,000 items; the default is a tenth of
// that. The corpus (and its index) is built once and kept in the temporary
// directory for later runs.
func searchCorpus(b *testing.B) (home string, sessions, items int) {
	sessions, items = 1000, 100
	if os.Getenv("RECALL_SEARCH_BENCH_FULL") == "1" {
		sessions = 10000
	}
	home = filepath.Join(os.TempDir(), fmt.Sprintf("recall-search-bench-%dx%d", sessions, items))
	if _, err := os.Stat(filepath.Join(home, "done")); err == nil {
		return home, sessions, items
	}
	os.RemoveAll(home)
	s, err := filestore.Open(filestore.Options{Dir: home, Sync: filestore.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	en := strings.Fields("the model reads a file and then the agent writes code to fix the bug in parser we ran tests again and they pass now with a small change to the config")
	zh := []string{"我们", "修复", "了", "解析器", "的", "问题", "测试", "通过", "北京", "今天", "代码", "模型", "读取", "文件", "然后"}
	sentence := func() string {
		var w []string
		if rng.IntN(2) == 0 {
			for range 10 + rng.IntN(30) {
				w = append(w, en[rng.IntN(len(en))])
			}
			return strings.Join(w, " ")
		}
		for range 10 + rng.IntN(30) {
			w = append(w, zh[rng.IntN(len(zh))])
		}
		return strings.Join(w, "")
	}
	for i := range sessions {
		k := recall.Key{Project: fmt.Sprintf("proj%02d", i%20), Session: fmt.Sprintf("s%05d", i)}
		batch := make([]recall.Item, items)
		for j := range batch {
			text := sentence()
			switch n := rng.IntN(100000); {
			case (i*items+j)%50000 == 7: // 20 in a million
				text += " zanzibarite"
			case n < 1000:
				text += " fix the tokenizer"
			case n < 1500:
				text += " 我叫张三，住在北京大学"
			}
			role := "user"
			if j%2 == 1 {
				role = "assistant"
			}
			batch[j] = recall.Message(role, text)
		}
		if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(batch...)...); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "done"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	return home, sessions, items
}

// literalScan is the baseline: read every JSONL file and look for the
// term's bytes, the way an agent that greps its logs does (Codex), and
// count the lines that hold it.
func literalScan(home, term string) (int, error) {
	n := 0
	needle := []byte(term)
	err := filepath.WalkDir(filepath.Join(home, "projects"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range bytes.Split(data, []byte{'\n'}) {
			if bytes.Contains(line, needle) {
				n++
			}
		}
		return nil
	})
	return n, err
}

func dirSize(root string, keep func(string) bool) int64 {
	var n int64
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && keep(path) {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// BenchmarkSearch measures the first page of hits through the index (a
// warm process: the index is up to date, and every search still checks
// every log's stat and catches up) against the literal scan of the logs,
// in wall time and in the CPU time of the process (steadier on a shared
// machine),
// side by side, for a rare word, a common word, a phrase, a CJK term of
// four characters and one of two (below the trigram index: matched by a
// scan of the index's text, newest first).
func BenchmarkSearch(b *testing.B) {
	home, sessions, items := searchCorpus(b)
	s, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Search(ctx, recall.SearchOptions{Query: "warm up"}); err != nil { // builds the index once
		b.Fatal(err)
	}
	logs := dirSize(filepath.Join(home, "projects"), func(p string) bool { return strings.HasSuffix(p, ".jsonl") })
	index := dirSize(home, func(p string) bool { return strings.Contains(filepath.Base(p), "#search-") })
	b.Logf("corpus: %d sessions, %d items; logs %d MB, index %d MB (%.2f× the logs)", sessions, sessions*items, logs>>20, index>>20, float64(index)/float64(logs))
	for _, c := range []struct{ name, query, literal string }{
		{"rare", "zanzibarite", "zanzibarite"},
		{"common", "parser", "parser"},
		{"phrase", `"fix the tokenizer"`, "fix the tokenizer"},
		{"cjk4", "北京大学", "北京大学"},
		{"cjk2", "张三", "张三"},
	} {
		b.Run(c.name+"/index", func(b *testing.B) {
			var hits int
			cpu := fsys.CPUTime()
			for b.Loop() {
				p, err := s.Search(ctx, recall.SearchOptions{Query: c.query})
				if err != nil {
					b.Fatal(err)
				}
				hits = len(p.Hits)
			}
			if hits == 0 {
				b.Fatal("no hit")
			}
			b.ReportMetric(float64(fsys.CPUTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(index)/float64(logs), "index/logs")
		})
		b.Run(c.name+"/literal-scan", func(b *testing.B) {
			cpu := fsys.CPUTime()
			for b.Loop() {
				n, err := literalScan(home, c.literal)
				if err != nil || n == 0 {
					b.Fatal(n, err)
				}
			}
			b.ReportMetric(float64(fsys.CPUTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkAppendSearchIndex measures a durable append (SyncAlways) in a
// home without a search index and in one whose index is built and open:
// the index is not written in the append path (searches catch it up), so
// the two should match.
func BenchmarkAppendSearchIndex(b *testing.B) {
	for _, withIndex := range []bool{false, true} {
		b.Run(fmt.Sprintf("index=%v", withIndex), func(b *testing.B) {
			ctx := context.Background()
			s, err := filestore.Open(filestore.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			k := recall.Key{Project: "p", Session: "s"}
			it := recall.Message("user", strings.Repeat("some words to index ", 20))
			if _, err := s.Append(ctx, k, recall.Guard{}, it.Entry()); err != nil {
				b.Fatal(err)
			}
			if withIndex {
				if _, err := s.Search(ctx, recall.SearchOptions{Query: "words"}); err != nil {
					b.Fatal(err)
				}
				if _, err := os.Stat(filestore.SearchIndexPath(s.Home())); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if _, err := s.Append(ctx, k, recall.Guard{}, it.Entry()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSearchIndexBuild measures building the whole index from the
// logs, as the first search of a home without one (or with a damaged one)
// does.
func BenchmarkSearchIndexBuild(b *testing.B) {
	home, sessions, items := searchCorpus(b)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(filestore.SearchIndexPath(home) + suffix)
		}
		s, err := filestore.Open(filestore.Options{Dir: home})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.Search(ctx, recall.SearchOptions{Query: "zanzibarite"}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(sessions*items)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
}
