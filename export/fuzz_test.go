package export_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
)

// ReadJSONL never panics, and what it accepts JSONL writes back to the
// same sessions: every entry's seq, kind, time, payload bytes and usage.
func FuzzReadJSONL(f *testing.F) {
	var seed bytes.Buffer
	if err := export.JSONL(&seed, fixture()); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.Bytes())
	f.Add([]byte(`{"recall_log":1,"key":{"project":"p","session":"s"}}` + "\n" + `{"seq":1,"kind":"item","time":"2025-06-01T10:00:00Z","data_b64":"/w=="}`))
	f.Add([]byte(`{"recall_log":1,"key":{"project":"p","session":"s","subpath":"a/b"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ss, err := export.ReadJSONL(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, s := range ss {
			var out bytes.Buffer
			if err := export.JSONL(&out, s); err != nil {
				return // a time JSON cannot hold
			}
			again, err := export.ReadJSONL(&out)
			if err != nil || len(again) != 1 {
				t.Fatalf("ReadJSONL of JSONL's output: %v\n%s", err, out.Bytes())
			}
			if !sameLog(again[0].Entries, s.Entries) {
				t.Fatalf("the entries changed on the way:\n%s", out.Bytes())
			}
		}
	})
}

// The readable writers never fail or panic on any item bytes a store
// may hold.
func FuzzRender(f *testing.F) {
	for _, it := range append(oddItems, recall.Item(`[1]`), recall.Item(`{"type":"message","content":[{"type":"input_image","image_url":5}]}`)) {
		f.Add([]byte(it))
	}
	f.Fuzz(func(t *testing.T, item []byte) {
		s := newLog(recall.Key{Project: "p", Session: "f"}).add(recall.KindItem, "").session()
		s.Entries[0].Data = item
		for _, format := range export.Formats {
			if format == export.FormatJSON {
				continue // refuses an item of the view that is not JSON, by design
			}
			if err := export.Write(io.Discard, format, s); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
	})
}
