package export_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/memstore"
)

// benchSession is a session of n items of about 1 KB each.
func benchSession(n int) *export.Session {
	b := newLog(recall.Key{Project: "bench", Session: "s"})
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 22)
	for i := range n {
		switch i % 3 {
		case 0:
			b.item(recall.Message("user", text))
		case 1:
			b.item(call(fmt.Sprint("c", i), "read_file", `{"path":"`+text[:40]+`"}`))
		default:
			b.item(output(fmt.Sprint("c", i-1), text))
		}
	}
	return b.session()
}

// BenchmarkJSONL measures the lossless export and its reader against
// baselines of the same run: encoding/json writing each entry, and a bare
// line split with a JSON validity check of each line.
func BenchmarkJSONL(b *testing.B) {
	s := benchSession(3000)
	var file bytes.Buffer
	if err := export.JSONL(&file, s); err != nil {
		b.Fatal(err)
	}
	size := int64(file.Len())
	b.Run("write", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if err := export.JSONL(io.Discard, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("write-baseline-encoding-json", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			enc := json.NewEncoder(io.Discard)
			for _, e := range s.Entries {
				if err := enc.Encode(e); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if _, err := export.ReadJSONL(bytes.NewReader(file.Bytes())); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read-baseline-split-and-validate", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			sc := bufio.NewScanner(bytes.NewReader(file.Bytes()))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if !json.Valid(sc.Bytes()) {
					b.Fatal("invalid line")
				}
			}
		}
	})
}

// BenchmarkRender measures the readable formats over the same session.
func BenchmarkRender(b *testing.B) {
	s := benchSession(3000)
	for _, f := range export.Formats {
		b.Run(string(f), func(b *testing.B) {
			for b.Loop() {
				if err := export.Write(io.Discard, f, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStream measures Stream from a memory store against the
// baseline of the same run it replaces in the service: Load, then Write.
func BenchmarkStream(b *testing.B) {
	ctx := context.Background()
	s := benchSession(3000)
	st := memstore.New(memstore.Options{})
	if _, err := export.Import(ctx, st, s, export.ImportOptions{}); err != nil {
		b.Fatal(err)
	}
	for _, f := range export.Formats {
		b.Run(string(f)+"/stream", func(b *testing.B) {
			for b.Loop() {
				if err := export.Stream(ctx, io.Discard, f, st, s.Meta.Key); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(string(f)+"/baseline-load-write", func(b *testing.B) {
			for b.Loop() {
				ls, err := export.Load(ctx, st, s.Meta.Key)
				if err != nil {
					b.Fatal(err)
				}
				if err := export.Write(io.Discard, f, ls); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
