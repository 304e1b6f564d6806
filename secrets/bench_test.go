package secrets_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
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
// secret) with and without redaction: to the memory store, where the
// redaction's CPU time shows alone, and durably to the file store, as
// `recall import` and a redacting home write. "with-secret" is the same
// turn with an AWS key and a GitHub token in the tool output.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	r := newRedactor(b)
	plain := turn()
	secret := turn()
	secret[2] = placements[2].item("AWS_ACCESS_KEY_ID=" + awsKey + "\nGH_TOKEN=" + githubPAT + "\n" + string(plain[2]))
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
	for _, st := range stores {
		for _, mode := range []string{"plain", "redact", "redact-with-secret"} {
			b.Run(st.name+"/"+mode, func(b *testing.B) {
				var s recall.Store = st.open(b)
				defer s.Close()
				items := plain
				if mode != "plain" {
					s = secrets.NewStore(s, r)
				}
				if mode == "redact-with-secret" {
					items = secret
				}
				var n int64
				for _, it := range items {
					n += int64(len(it))
				}
				b.SetBytes(n)
				sess := recall.NewSession(s, recall.Key{Project: "bench", Session: "append"})
				for b.Loop() {
					if err := sess.AddItems(ctx, items...); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
