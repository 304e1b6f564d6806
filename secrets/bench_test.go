package secrets_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/secrets"
)

// turn is an ordinary agent turn, without a secret: a 500-byte user
// message, a tool call and a 2 kB tool output (a code listing), as one
// batch.
func turn() []recall.Item {
	msg := strings.Repeat("Please refactor the session loader so that it reads the log once. ", 8)[:500]
	var code strings.Builder
	for i := 0; code.Len() < 2000; i++ {
		fmt.Fprintf(&code, "%4d\tfunc (s *Store) load%d(ctx context.Context, key recall.Key) error { return s.read(ctx, key, %d) }\n", i, i, i)
	}
	return []recall.Item{
		placements[0].item(msg),
		placements[1].item("sed -n 1,80p internal/session/loader.go"),
		placements[2].item(code.String()),
	}
}

// BenchmarkAppend compares appending an ordinary turn (three items, no
// secret) through a redacting store with appending it to the bare store,
// in the same run, alternately (see testkit.Paired): to the memory store, where
// the redaction's CPU time shows alone, and durably to the file store, as
// a redacting home and `recall import` write. "secret" is the same turn
// with an AWS key and a GitHub token in the tool output. "Redactor" is
// the redaction of the turn alone.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	r := newRedactor(b)
	plain := turn()
	secret := turn()
	secret[2] = placements[2].item("AWS_ACCESS_KEY_ID=" + awsKey + "\nGH_TOKEN=" + githubPAT + "\n" + string(plain[2]))
	turns := []struct {
		name  string
		items []recall.Item
	}{{"plain", plain}, {"secret", secret}}
	stores := []struct {
		name string
		open func(b *testing.B) recall.Store
	}{
		{"mem", func(b *testing.B) recall.Store { return memstore.New(memstore.Options{}) }},
		{"file", func(b *testing.B) recall.Store {
			s, err := filestore.Open(filestore.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	appender := func(b *testing.B, s recall.Store, items []recall.Item) func() {
		b.Cleanup(func() { s.Close() })
		sess := recall.NewSession(s, recall.Key{Project: "bench", Session: "append"})
		return func() {
			if err := sess.AddItems(ctx, items...); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, tn := range turns {
		b.Run("Redactor/"+tn.name, func(b *testing.B) {
			entries := recall.ItemEntries(tn.items...)
			var n int64
			for _, it := range tn.items {
				n += int64(len(it))
			}
			b.SetBytes(n)
			for b.Loop() {
				r.Entries(entries)
			}
		})
		for _, st := range stores {
			b.Run(st.name+"/"+tn.name, func(b *testing.B) {
				base := appender(b, st.open(b), tn.items)
				op := appender(b, secrets.NewStore(st.open(b), r), tn.items)
				testkit.Paired(b, base, op)
			})
		}
	}
}
