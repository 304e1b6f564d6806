package opencode

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/importtest"
)

// FuzzMessages imports arbitrary messages as a session: nothing panics,
// every record is one a store takes, and a second import adds nothing
// (importtest.Check, over the session's stream). The input is messages separated by blank lines,
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
		r := &reader{ctx: context.Background(), sessions: map[string]*sessionInfo{}, byName: map[string]*sessionInfo{}, source: map[string]source{}}
		r.keep(&sessionInfo{ID: "ses_f", Directory: "/p", Title: "a title", Revert: &revert{MessageID: "msg_9"}, name: "/f"},
			func(context.Context, string) ([]message, error) { return msgs, nil })
		rc, err := r.mapper("/f").(importer.Opener).Open(&importer.Transcript{})
		if err != nil {
			t.Fatal(err)
		}
		stream, _ := io.ReadAll(rc)
		importtest.Check(t, func(ctx context.Context, st recall.Store) (importer.Summary, error) {
			return importer.Run(ctx, st, Tool, r.names(), r.mapper, importer.Options{})
		}, stream)
	})
}
