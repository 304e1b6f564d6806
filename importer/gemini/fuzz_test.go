package gemini

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/importtest"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

// FuzzParse imports arbitrary session files, checkpoints and logs:
// nothing panics, every record is one a store takes, a recording's bytes
// (a file rewritten whole: its stream) are consumed but for a torn last
// line, and a second import adds nothing (importtest.Check).
//
//	go test -run XXX -fuzz FuzzParse -fuzzminimizetime 0 ./importer/gemini/
func FuzzParse(f *testing.F) {
	for _, p := range []string{
		mainFile,
		fixtureTmp + "/app/chats/" + mainSID + "/" + subSID + ".jsonl",
		fixtureTmp + "/" + "04382e3e2136986122415aa03b903f429a5c2f7ea590135bac4ab947b97dc809/chats/session-2025-09-01T08-00-0f1e2d3c.json",
		fixtureTmp + "/app/checkpoint-review%20notes.json",
		fixtureTmp + "/app/logs.json",
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(byte(0), data)
		f.Add(byte(1), data)
		f.Add(byte(2), data)
		f.Add(byte(3), data)
	}
	f.Add(byte(0), []byte(`{"sessionId":"a b","projectHash":"x","directories":["C:\\w"]}`+"\n"+`{"$set":{"messages":[{"id":"q","type":"gemini","content":{"functionResponse":{"name":"n"}},"toolCalls":[{"name":"n","result":"r"}]}]}}`+"\n"+`{"$rewindTo":"zz"}`))
	f.Add(byte(0), []byte(`{"sessionId":"s","projectHash":"h"}`+"\n"+`{"id":"1","type":"gemini","content":[{"functionCall":{"name":"f"}},{"functionCall":{"name":"f"}}],"toolCalls":[{"id":"t","name":"f","result":[{"inlineData":{}},{"text":"x"}]}]}`+"\n"+`{"id":"1","type":"user","content":"changed"}`))
	f.Fuzz(func(t *testing.T, kind byte, data []byte) {
		tmp := filepath.Join(t.TempDir(), "tmp", "p")
		path := filepath.Join(tmp, []string{"chats/session-x-12345678.jsonl", "chats/parent/sub.json", "checkpoint-a%2Fb.json", "logs.json"}[kind%4])
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		imp := func(ctx context.Context, st recall.Store) (importer.Summary, error) {
			return Import(ctx, st, path, importer.Options{})
		}
		if kind%4 == 3 { // the sessions of logs.json: each a stream of its own
			ctx := context.Background()
			st := memstore.New(memstore.Options{})
			if _, err := imp(ctx, st); err != nil {
				return // no session in it
			}
			again, err := imp(ctx, st)
			if err != nil || again.Entries != 0 {
				t.Fatalf("second import: %+v, %v", again, err)
			}
			if err := storekit.Verify(ctx, st); err != nil {
				t.Fatal(err)
			}
			return
		}
		stream := data
		if o, ok := NewMapper(path).(importer.Opener); ok { // a file read as the stream of its records
			rc, err := o.Open(&importer.Transcript{File: path})
			if err != nil {
				return // not JSON
			}
			stream, _ = io.ReadAll(rc)
		}
		importtest.Check(t, imp, stream)
	})
}
