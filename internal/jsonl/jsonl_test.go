package jsonl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 123456000, time.UTC)

// cases are entries and the field their payload goes in.
var cases = []struct {
	e     recall.Entry
	field string // "data", "data_text", "data_b64" or "" for no payload
}{
	{recall.Entry{Seq: 1, Kind: recall.KindItem, Time: t0, Data: []byte(`{"type":"message","role":"user","content":"a<b & c>d"}`)}, "data"},
	{recall.Entry{Seq: 2, Kind: recall.KindTitle, Time: t0.In(time.FixedZone("x", 3600)), Data: []byte(`"t"`), Usage: &recall.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}}, "data"},
	{recall.Entry{Seq: 3, Kind: recall.Kind("damaged"), Time: t0, Data: []byte("not json <x> & more")}, "data_text"},
	{recall.Entry{Seq: 4, Kind: recall.KindItem, Time: t0, Data: []byte("{\n \"a\": 1\n}")}, "data_text"},
	{recall.Entry{Seq: 5, Kind: recall.KindItem, Time: t0, Data: []byte(" [1] ")}, "data_text"},
	{recall.Entry{Seq: 6, Kind: recall.KindItem, Time: t0, Data: []byte("{\xff\xfe not utf-8")}, "data_b64"},
	{recall.Entry{Seq: 7, Kind: "odd <kind> \u2028", Time: t0, Data: []byte(`["a & b"]`)}, "data"},
	{recall.Entry{Seq: 8, Kind: recall.KindClear, Time: t0}, ""},
	{recall.Entry{Seq: 9, Kind: "x\"y\\z\t", Time: t0, Data: []byte("\t")}, "data_text"},
}

// want is the line of e with its payload in field, each string written
// by str.
func want(t *testing.T, e recall.Entry, field string, more bool, str func(string) string) string {
	ts, err := e.Time.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"seq":` + string(mustJSON(t, e.Seq)))
	b.WriteString(`,"kind":` + str(string(e.Kind)) + `,"time":` + string(ts))
	if more {
		b.WriteString(`,"more":true`)
	}
	if e.Usage != nil {
		b.WriteString(`,"usage":` + string(mustJSON(t, e.Usage)))
	}
	switch field {
	case "data":
		b.WriteString(`,"data":` + string(e.Data))
	case "data_text":
		b.WriteString(`,"data_text":` + str(string(e.Data)))
	case "data_b64":
		b.WriteString(`,"data_b64":"` + base64.StdEncoding.EncodeToString(e.Data) + `"`)
	}
	return b.String() + "}\n"
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAppendEntry checks every line byte for byte: with EscapeHTML each
// string is what encoding/json writes; without it a string that needs no
// other escape keeps <, > and & as they are.
func TestAppendEntry(t *testing.T) {
	escaped := func(s string) string { return string(mustJSON(t, s)) }
	plain := func(s string) string {
		if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f || r == '"' || r == '\\' }) {
			return escaped(s)
		}
		return `"` + s + `"`
	}
	for _, c := range cases {
		for _, o := range []Options{{}, {EscapeHTML: true}, {More: true, Validated: true}} {
			if o.Validated && c.e.Kind == recall.KindItem && !json.Valid(c.e.Data) {
				continue // not an item ValidateEntries lets through (see TestValidated)
			}
			str := plain
			if o.EscapeHTML {
				str = escaped
			}
			got, err := AppendEntry([]byte("kept"), c.e, o)
			if err != nil {
				t.Fatal(err)
			}
			if w := "kept" + want(t, c.e, c.field, o.More, str); string(got) != w {
				t.Errorf("seq %d %+v:\n got %s\nwant %s", c.e.Seq, o, got, w)
			}
		}
	}
}

// TestLineEntry checks that every line decodes through Line to the entry
// that went in.
func TestLineEntry(t *testing.T) {
	for _, c := range cases {
		line, err := AppendEntry(nil, c.e, Options{More: true})
		if err != nil {
			t.Fatal(err)
		}
		var l Line
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("seq %d: %s: %v", c.e.Seq, line, err)
		}
		got := l.Entry()
		if got.Seq != c.e.Seq || got.Kind != c.e.Kind || !got.Time.Equal(c.e.Time) || !bytes.Equal(got.Data, c.e.Data) || (got.Data == nil) != (c.e.Data == nil) {
			t.Errorf("seq %d: %s decodes to %+v", c.e.Seq, line, got)
		}
		if (got.Usage == nil) != (c.e.Usage == nil) || got.Usage != nil && *got.Usage != *c.e.Usage {
			t.Errorf("seq %d: usage %v, want %v", c.e.Seq, got.Usage, c.e.Usage)
		}
	}
}

// TestValidated checks that Validated trusts the payloads of the kinds
// storekit.ValidateEntries decodes, and only those.
func TestValidated(t *testing.T) {
	for kind, trusted := range map[recall.Kind]bool{recall.KindItem: true, recall.KindFork: true, recall.Kind("damaged"): false} {
		e := recall.Entry{Seq: 1, Kind: kind, Time: t0, Data: []byte("{not json}")}
		line, err := AppendEntry(nil, e, Options{Validated: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(line, []byte(`,"data":{not json}}`)); got != trusted {
			t.Errorf("%s with Validated: %s", kind, line)
		}
		if line, _ := AppendEntry(nil, e, Options{}); !bytes.Contains(line, []byte(`,"data_text":"{not json}"}`)) {
			t.Errorf("%s: %s, want the payload in data_text", kind, line)
		}
	}
}

// TestAppendEntryBadTime checks that a time JSON cannot hold fails the
// line and leaves buf as it was.
func TestAppendEntryBadTime(t *testing.T) {
	e := recall.Entry{Seq: 1, Kind: recall.KindClear, Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if buf, err := AppendEntry([]byte("kept"), e, Options{}); err == nil || string(buf) != "kept" {
		t.Fatalf("AppendEntry with year 10000 = %q, %v; want an error and the buffer as it was", buf, err)
	}
}
