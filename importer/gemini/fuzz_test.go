package gemini

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

// FuzzParse feeds arbitrary session files, checkpoints and logs to the
// parsers and writes what they make: nothing panics, every record is one
// a store takes, a recording's stream is its bytes less a torn last line,
// and a second write adds nothing.
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
		ctx := context.Background()
		mtime := time.Unix(1e9, 0)
		var loc locator
		var tr *importer.Transcript
		var err error
		switch kind % 4 {
		case 0:
			tr, err = parseSession("/g/tmp/p/chats/session-x-12345678.jsonl", data, "", mtime, &loc)
			if err == nil && (!bytes.HasPrefix(data, tr.Data) || len(data)-len(tr.Data) > 0 && tr.Skipped["torn"] != 1) {
				t.Fatalf("Data is not the input less a torn last line: %d of %d bytes, skipped %v", len(tr.Data), len(data), tr.Skipped)
			}
		case 1:
			tr, err = parseSession("/g/tmp/p/chats/parent/sub.json", data, "", mtime, &loc)
		case 2:
			tr, err = parseCheckpoint("/g/tmp/p/checkpoint-a%2Fb.json", data, "", mtime, &loc)
		case 3:
			ids, streams, orphans, _, lerr := logSessions(data)
			if lerr != nil || len(ids) == 0 {
				return
			}
			r := &reader{ctx: ctx, st: memstore.New(memstore.Options{})}
			tr, err = r.readLogs(logSource{path: "/g/tmp/p/logs.json", session: ids[0], stream: append(orphans, streams[ids[0]]...)}, "")
		}
		if err != nil {
			return // no session id, or not JSON
		}
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
