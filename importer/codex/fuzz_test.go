package codex

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

// FuzzParse feeds arbitrary rollouts to the parser and writes what it
// makes: nothing panics, every record is one a store takes, only a torn
// last line is left out of Data, and a second write adds nothing.
//
//	go test -run XXX -fuzz FuzzParse -fuzzminimizetime 0 ./importer/...
//
// (minimizing each new input, the default, spends most of the time on the
// large seeds).
func FuzzParse(f *testing.F) {
	data, err := os.ReadFile(fixtureFile)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"a b","cwd":"\\\\srv\\x"}}` + "\n" + `{"type":"compacted","payload":{"replacement_history":[1,"x",{"type":"message"}]}}` + "\n"))
	f.Add([]byte(`{"type":"response_item","payload":  {"type":"x"}  }` + "\n" + `{"type":"turn_context","payload":{"model":"\u0000","cwd":"/y"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := parse("/p/rollout-2025-10-02T08-00-00-"+fixtureID+".jsonl", data, "", time.Unix(1e9, 0))
		if err != nil {
			return // no session id, or a conversation and no cwd
		}
		if !bytes.HasPrefix(data, tr.Data) || len(data)-len(tr.Data) > 0 && tr.Skipped["torn"] != 1 {
			t.Fatalf("Data is not the input less a torn last line: %d of %d bytes, skipped %v", len(tr.Data), len(data), tr.Skipped)
		}
		ctx := context.Background()
		st := memstore.New(memstore.Options{})
		for _, tg := range tr.Targets {
			if _, err := importer.Write(ctx, st, tr, tg, false); err != nil {
				t.Fatalf("write %s: %v", tg.Key, err)
			}
			if res, err := importer.Write(ctx, st, tr, tg, false); err != nil || res.Outcome != importer.Unchanged {
				t.Fatalf("second write %s: %+v, %v", tg.Key, res, err)
			}
		}
		if err := storekit.Verify(ctx, st); err != nil {
			t.Fatal(err)
		}
	})
}
