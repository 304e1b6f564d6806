package claudecode

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

// FuzzParse feeds arbitrary transcripts to the parser and writes what it
// makes: nothing panics, every record is one a store takes, only a torn
// last line is left out of Data, and a second write adds nothing.
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
		tr, err := parse("/p/"+fixtureSID+".jsonl", data, "", time.Unix(1e9, 0))
		if err != nil {
			return // a transcript with a conversation and no cwd
		}
		if !bytes.HasPrefix(data, tr.Data) || len(data)-len(tr.Data) > 0 && tr.Skipped["torn"] != 1 {
			t.Fatalf("Data is not the input less a torn last line: %d of %d bytes, skipped %v", len(tr.Data), len(data), tr.Skipped)
		}
		ctx := context.Background()
		st := memstore.New(memstore.Options{})
		for _, tg := range tr.Targets {
			if err := tg.Key.Validate(); err != nil {
				t.Fatal(err)
			}
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
