package codex

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/importtest"
)

// FuzzParse imports arbitrary transcripts: nothing panics, every record is
// one a store takes, only a torn last line is left out of the bytes
// consumed, and a second import adds nothing (importtest.Check).
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
		path := filepath.Join(t.TempDir(), "rollout-2025-10-02T08-00-00-"+fixtureID+".jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		importtest.Check(t, func(ctx context.Context, st recall.Store) (importer.Summary, error) {
			return Import(ctx, st, []string{path}, importer.Options{})
		}, data)
	})
}
