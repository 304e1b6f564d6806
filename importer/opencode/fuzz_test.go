package opencode

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

// FuzzMessages feeds arbitrary messages to the mapping and writes what it
// makes: nothing panics, every record is one a store takes, and a second
// write adds nothing. The input is messages separated by blank lines,
// each its info's JSON on a line, then a line per part.
//
//	go test -run XXX -fuzz FuzzMessages -fuzzminimizetime 0 ./importer/opencode/
func FuzzMessages(f *testing.F) {
	f.Add([]byte(`{"role":"user","time":{"created":1}}
{"type":"text","text":"hi"}
{"type":"file","mime":"image/png","url":"data:image/png;base64,AA"}
{"type":"compaction","auto":true}

{"role":"assistant","time":{"created":2,"completed":3},"modelID":"m","tokens":{"input":1e300,"output":-5,"reasoning":0,"cache":{"read":0,"write":0}}}
{"type":"tool","callID":"c","tool":"t","state":{"status":"completed","input":null,"output":"o","attachments":[{"mime":"x","url":"y"}]}}
{"type":"tool","callID":"","tool":"","state":{"status":"error","error":"e","metadata":{"interrupted":true,"output":"partial"}}}
{"type":"reasoning","text":"r"}
{"type":"zzz"}`))
	f.Add([]byte("{\"role\":\"assistant\",\"error\":{\"name\":\"MessageAbortedError\"}}\n{\"type\":\"text\",\"text\":\"\\u0000\"}\n\n{\"role\":7}\nnot json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var msgs []message
		for i, block := range bytes.Split(data, []byte("\n\n")) {
			lines := bytes.Split(block, []byte("\n"))
			var parts [][2][]byte
			for j, p := range lines[1:] {
				parts = append(parts, [2][]byte{[]byte("prt_" + strconv.Itoa(j)), p})
			}
			msgs = append(msgs, decodeMessage("msg_"+strconv.Itoa(i), lines[0], parts))
		}
		tr := &importer.Transcript{Tool: Tool, File: "/f", SessionID: "ses_f"}
		tg := &importer.Target{Key: recall.Key{Project: "p", Session: "ses_f"}}
		mapSession(tr, tg, msgs, &revert{MessageID: "msg_9"})
		addTitle(tg, "a title")
		tr.Targets = []*importer.Target{tg}
		tr.Finish(time.Unix(1e9, 0))
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
