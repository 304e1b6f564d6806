package claudecode

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
	for _, p := range []string{
		filepath.Join(fixtureDir, fixtureSID+".jsonl"),
		filepath.Join(fixtureDir, fixtureSID, "subagents", "agent-a1.jsonl"),
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"type":"user","cwd":"/x","message":{"role":"user","content":[{"type":"tool_result","content":{"a":1}},{"type":"image","source":null}]}}` + "\n"))
	f.Add([]byte(`{"type":"assistant","cwd":"C:\\w","message":{"id":"m","model":"a\u0000b","content":[{"type":"tool_use","input":null}],"usage":{"input_tokens":-5}}}` + "\n" + `{"type":"custom-title","customTitle":"\u0000"}`))
	f.Add([]byte(`{"type":"user","isSidechain":true,"agentId":"../..","cwd":"/x","message":{"content":"hi"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), fixtureSID+".jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		importtest.Check(t, func(ctx context.Context, st recall.Store) (importer.Summary, error) {
			return Import(ctx, st, path, importer.Options{})
		}, data)
	})
}
