package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storetest"
)

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 123456000, time.UTC)

// TestLineRoundTrip encodes entries and decodes them back: every payload
// must come back byte for byte, on one line.
func TestLineRoundTrip(t *testing.T) {
	var entries []recall.Entry
	for _, it := range storetest.VerbatimItems() {
		entries = append(entries, it.Entry())
	}
	entries = append(entries,
		recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "a \"quoted\"\ntitle", Source: recall.TitleUser}),
		recall.Entry{Kind: recall.KindClear},
		recall.Entry{Kind: "future kind \"x\"", Data: json.RawMessage("not json\n at all")},
		recall.Entry{Kind: "binary", Data: json.RawMessage("\xff\x00\xfe raw bytes")},
		recall.Entry{Kind: "json-unknown", Data: json.RawMessage(`{"x":[1,2]}`)},
		recall.Entry{Kind: recall.KindItem, Data: json.RawMessage(`{"u":1}`), Usage: &recall.Usage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30}},
		recall.Entry{Kind: recall.KindItem, Data: json.RawMessage(`{"t":"zone"}`), Time: time.Date(2024, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 5*3600+1800))},
	)
	for i := range entries {
		entries[i].Seq = int64(i + 1)
		if entries[i].Time.IsZero() {
			entries[i].Time = t0
		}
	}
	for i, e := range entries {
		for _, more := range []bool{false, true} {
			line, err := appendLine(nil, e, more)
			if err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
			if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
				t.Fatalf("entry %d: not one line: %q", i, line)
			}
			// the time is written as encoding/json writes it
			if tj, _ := json.Marshal(e.Time); !bytes.Contains(line, append([]byte(`,"time":`), tj...)) {
				t.Errorf("entry %d: the line %q does not hold the time as JSON writes it, %s", i, line, tj)
			}
			got, gotMore, err := decodeLine(line[:len(line)-1])
			if err != nil {
				t.Fatalf("entry %d: decode %q: %v", i, line, err)
			}
			if gotMore != more {
				t.Errorf("entry %d: more = %t, want %t", i, gotMore, more)
			}
			if got.Seq != e.Seq || got.Kind != e.Kind || !got.Time.Equal(e.Time) || !bytes.Equal(got.Data, e.Data) {
				t.Errorf("entry %d: round trip\n got %d %q %v %q\nwant %d %q %v %q", i, got.Seq, got.Kind, got.Time, got.Data, e.Seq, e.Kind, e.Time, e.Data)
			}
			if (got.Usage == nil) != (e.Usage == nil) || got.Usage != nil && *got.Usage != *e.Usage {
				t.Errorf("entry %d: usage %v, want %v", i, got.Usage, e.Usage)
			}
			// The general decoder must agree with the fast path.
			slow, slowMore, err := decodeSlow(bytes.TrimRight(line, "\n"))
			if err != nil || slowMore != more || slow.Seq != e.Seq || !bytes.Equal(slow.Data, e.Data) {
				t.Errorf("entry %d: slow decode = %+v, %t, %v", i, slow, slowMore, err)
			}
		}
	}
}

// TestEncodeRefusesBadTime checks that a time JSON cannot represent fails
// the encode (and so the batch) instead of writing an unreadable line.
func TestEncodeRefusesBadTime(t *testing.T) {
	e := recall.Entry{Seq: 1, Kind: recall.KindClear, Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if buf, err := appendLine([]byte("kept"), e, false); !errors.Is(err, recall.ErrInvalidItem) || string(buf) != "kept" {
		t.Fatalf("appendLine with year 10000 = %q, %v; want ErrInvalidItem and the buffer as it was", buf, err)
	}
}

// TestDecodeLine covers lines the store did not write: edited by hand,
// reordered, damaged.
func TestDecodeLine(t *testing.T) {
	good := []struct {
		line string
		seq  int64
		kind recall.Kind
		data string
		more bool
	}{
		{`{"seq":1,"kind":"item","time":"2025-06-01T10:00:00Z","data":{"a":1}}`, 1, "item", `{"a":1}`, false},
		{`{"seq":2,"kind":"item","time":"2025-06-01T10:00:00Z","data":{"a":1}}` + "\r", 2, "item", `{"a":1}`, false},
		{`  {"kind":"item", "data": {"b" : 2} , "seq": 3}  `, 3, "item", `{"b" : 2}`, false},
		{`{"seq":4,"kind":"clear","time":"2025-06-01T10:00:00Z","more":true}`, 4, "clear", ``, true},
		{`{"seq":5,"kind":"item","time":"2025-06-01T10:00:00Z","data_text":"{\n\"a\": 1\n}"}`, 5, "item", "{\n\"a\": 1\n}", false},
		{`{"seq":6,"kind":"x","time":"2025-06-01T10:00:00Z","data_b64":"/wA="}`, 6, "x", "\xff\x00", false},
		{`{"seq":7,"kind":"item","time":"2025-06-01T10:00:00Z","data":{"a":1},"extra":true}`, 7, "item", `{"a":1}`, false},
		{`{"seq":8,"kind":"it\u0065m","time":"2025-06-01T10:00:00Z","data":{}}`, 8, "item", `{}`, false},
	}
	for _, c := range good {
		e, more, err := decodeLine([]byte(c.line))
		if err != nil {
			t.Errorf("decode %q: %v", c.line, err)
			continue
		}
		if e.Seq != c.seq || e.Kind != c.kind || string(e.Data) != c.data || more != c.more {
			t.Errorf("decode %q = %d %q %q %t", c.line, e.Seq, e.Kind, e.Data, more)
		}
	}
	bad := []string{
		``,
		`garbage`,
		`{"seq":1,"kind":"item","time":"2025-06-01T10:00:00Z","data":{"a":1}`, // torn
		`{"seq":1,"kind":"item","time":"2025-06-01T10:00:00Z","data":{"a":1}}}`,
		`{"seq":0,"kind":"item","time":"2025-06-01T10:00:00Z","data":{"a":1}}`,
		`{"seq":-3,"kind":"item","time":"2025-06-01T10:00:00Z","data":{"a":1}}`,
		`{"kind":"item","time":"2025-06-01T10:00:00Z","data":{"a":1}}`,
		`{"seq":1,"time":"2025-06-01T10:00:00Z","data":{"a":1}}`,
		`{"seq":1,"kind":"item","time":"2025-06-01T10:00:00Z","data_text":"{not json}"}`, // looks like an object to recall.Entry.Item
		`{"seq":1,"kind":"item","time":"yesterday","data":{}}`,
		"{\"seq\":1,\"kind\":\"item\",\"time\":\"2025-06-01T10:00:00Z\",\"data\":{\"a\":\x00}}",
		"\x00\x00\x00\x00",
		`[1,2,3]`,
	}
	for _, l := range bad {
		if e, _, err := decodeLine([]byte(l)); err == nil {
			t.Errorf("decode %q = %+v, want an error", l, e)
		}
	}
	// An item entry whose item is not a JSON object is an entry: it keeps
	// its seq, and recall.Entry.Item refuses the item, so readers skip it and
	// count it in Meta.Corrupt, as every store does.
	unusable := []string{
		`{"seq":4,"kind":"item","time":"2025-06-01T10:00:00Z","data":[1]}`,
		`{"seq":4,"kind":"item","time":"2025-06-01T10:00:00Z","data":"a string"}`,
		`{"seq":4,"kind":"item","time":"2025-06-01T10:00:00Z","data_text":"not json"}`,
		`{"seq":4,"kind":"item","time":"2025-06-01T10:00:00Z","data_b64":"/w=="}`,
		`{"seq":4,"kind":"item","time":"2025-06-01T10:00:00Z"}`,
	}
	for _, l := range unusable {
		e, _, err := decodeLine([]byte(l))
		if err != nil || e.Seq != 4 || e.Kind != recall.KindItem {
			t.Errorf("decode %q = %+v, %v; want the item entry at seq 4", l, e, err)
			continue
		}
		if _, ok := e.Item(); ok {
			t.Errorf("decode %q: recall.Entry.Item accepts %q", l, e.Data)
		}
	}
}

// FuzzDecodeLine checks that no input makes the decoder panic, and that a
// line it accepts is an entry a reader can use.
func FuzzDecodeLine(f *testing.F) {
	f.Add([]byte(`{"seq":1,"kind":"item","time":"2025-06-01T10:00:00Z","data":{"a":1}}`))
	f.Add([]byte(`{"seq":1,"kind":"item","time":"2025-06-01T10:00:00Z","more":true,"usage":{"input_tokens":1,"output_tokens":2,"total_tokens":3},"data":{}}`))
	f.Add([]byte(`{"seq":9,"kind":"x","data_text":"a\nb"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, _, err := decodeLine(line)
		if err != nil {
			return
		}
		if e.Seq <= 0 || e.Kind == "" {
			t.Fatalf("accepted %q as %+v", line, e)
		}
		// An item line whose data is missing or not an object decodes to
		// an unusable entry that keeps its seq (see the unusable lines of
		// the test above), which recall.Entry.Item turns away; whatever
		// Entry.Item hands a reader must be valid JSON.
		if _, ok := e.Item(); ok && !json.Valid(e.Data) {
			t.Fatalf("a reader would take an invalid item from %q: %q", line, e.Data)
		}
		if strings.ContainsRune(string(e.Kind), 0) && !bytes.Contains(line, []byte(`\u0000`)) {
			t.Fatalf("kind with a raw NUL from %q", line)
		}
	})
}
