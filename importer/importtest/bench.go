package importtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/secrets"
)

// Import is an importer's Import of one file into st.
type Import func(ctx context.Context, st recall.Store, opts importer.Options) (importer.Summary, error)

// Benchmark measures imports of the transcript at path, which maps to
// items items, with imp (MB/s, items/s), beside the baseline of reading
// the same file line by line and decoding every line with encoding/json,
// in the same run: a dry run (reading and mapping, no writes), and
// imports into a memory store and into the file store (fsync always),
// the latter also through a redacting store (secrets.NewStore), as
// `recall import` writes by default.
func Benchmark(b *testing.B, path string, items int, imp Import) {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	report := func(b *testing.B) {
		b.SetBytes(fi.Size())
		b.ReportMetric(float64(items)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
	}
	b.Run("baseline=read+decode", func(b *testing.B) {
		for b.Loop() {
			if err := decodeLines(path); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	redactor, err := secrets.New(secrets.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, kind := range []string{"dryrun", "memstore", "filestore", "filestore+redact"} {
		b.Run("import="+kind, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				var st recall.Store = memstore.New(memstore.Options{})
				if strings.HasPrefix(kind, "filestore") {
					b.StopTimer()
					fs, err := filestore.Open(filestore.Options{Dir: b.TempDir()})
					if err != nil {
						b.Fatal(err)
					}
					st = fs
					if kind == "filestore+redact" {
						st = secrets.NewStore(fs, redactor)
					}
					b.StartTimer()
				}
				sum, err := imp(ctx, st, importer.Options{DryRun: kind == "dryrun"})
				if err != nil || sum.Items != items {
					b.Fatal(err, sum)
				}
				st.Close()
			}
			report(b)
		})
	}
}

// decodeLines reads the file at path a line at a time and decodes each
// line with encoding/json.
func decodeLines(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var v any
			if err := json.Unmarshal(line, &v); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// CountingWriter counts the bytes written through it: the generators of
// large transcripts write until they reach a size.
type CountingWriter struct {
	W io.Writer
	N int64
}

func (c *CountingWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}
