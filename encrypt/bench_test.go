package encrypt_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/encrypt"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
)

// The benchmarks measure the encrypted store against the same store
// unwrapped, in the same run, alternately (see testkit.Paired; its x-base
// is the unwrapped time over the encrypted, so docs/BENCHMARKS.md's ratio,
// the encrypted time over the unwrapped, is 1 / x-base). docs/BENCHMARKS.md
// has the figures and the command.

// item500 returns a 500-byte message item.
func item500(i int) recall.Item {
	head := fmt.Sprintf(`{"type":"message","role":"user","content":"%08d `, i)
	return recall.Item(head + strings.Repeat("x", 500-len(head)-2) + `"}`)
}

// BenchmarkAppend compares a durable append of one 500-byte item to a
// file store (fsync always, its default) through the encrypted store with
// the same append to another file store unwrapped.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	bare := openFile(b, b.TempDir())
	defer bare.Close()
	enc := encrypt.Wrap(openFile(b, b.TempDir()), testRing(b), encrypt.Options{})
	defer enc.Close()
	key := recall.Key{Project: "bench", Session: "s"}
	it := item500(0)
	add := func(st recall.Store) func() {
		return func() {
			if _, err := st.Append(ctx, key, recall.Guard{}, it.Entry()); err != nil {
				b.Fatal(err)
			}
		}
	}
	testkit.Paired(b, add(bare), add(enc))
}

// BenchmarkList compares the first List page (50) of 1,000 titled
// sessions, through the encrypted store and unwrapped: warm (the same
// encrypted store each time) and new (a new one each time, as a new
// process would, which reads each session's first prompt), over a file
// store; and warm over a memory store.
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	for _, mode := range []string{"warm", "new", "mem"} {
		b.Run(mode, func(b *testing.B) {
			open := func() recall.Store { return openFile(b, b.TempDir()) }
			if mode == "mem" {
				open = func() recall.Store { return memstore.New(memstore.Options{}) }
			}
			bare := open()
			defer bare.Close()
			encInner := open()
			defer encInner.Close()
			enc := encrypt.Wrap(nopClose{encInner}, testRing(b), encrypt.Options{})
			// Both stores are written at the same moments: a file store
			// re-reads a directory written in the last 2 seconds on every
			// List (its journal's mtime check is racy so soon), and the
			// store written last would pay that alone.
			for i := range 1000 {
				for _, st := range []recall.Store{bare, enc} {
					_, err := recall.NewSession(st, recall.Key{Project: "bench", Session: fmt.Sprintf("s%04d", i)}).
						Create(ctx, recall.CreateOptions{Title: fmt.Sprintf("session %d", i), Items: []recall.Item{item500(i), item500(i + 1)}})
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			list := func(st func() recall.Store) func() {
				return func() {
					p, err := st().List(ctx, "bench", recall.ListOptions{})
					if err != nil || len(p.Sessions) != 50 || p.Sessions[0].FirstPrompt == "" {
						b.Fatalf("list: %d, %v", len(p.Sessions), err)
					}
				}
			}
			encStore := func() recall.Store {
				if mode == "new" {
					return encrypt.Wrap(nopClose{encInner}, testRing(b), encrypt.Options{})
				}
				return enc
			}
			testkit.Paired(b, list(func() recall.Store { return bare }), list(encStore))
		})
	}
}
