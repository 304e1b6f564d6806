package redisstore

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/recallkit/recall"
)

// TestEncodeBodyHeader: the header encodeBody writes directly for an
// entry with a kind and a time alone is byte for byte json.Marshal's, for
// every kind and time; kinds that JSON would escape, usage and a
// compaction's count take json.Marshal.
func TestEncodeBodyHeader(t *testing.T) {
	t.Parallel()
	kinds := []recall.Kind{recall.KindItem, recall.KindPop, recall.KindRemove, recall.KindClear, recall.KindCompaction,
		recall.KindTitle, recall.KindMeta, recall.KindFork, recall.KindCreate, "x", `a"b`, "<&>", "Item", "é"}
	count := 3
	for _, k := range kinds {
		for _, us := range []int64{0, 1, -1, 1796138659842467, -maxMicros + 1, maxMicros - 1, math.MaxInt64, math.MinInt64} {
			for _, e := range []recall.Entry{
				{Kind: k, Data: json.RawMessage(`{"a":1}`)},
				{Kind: k},
				{Kind: k, Data: json.RawMessage(`{}`), Usage: &recall.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}},
			} {
				for _, n := range []*int{nil, &count} {
					h, err := json.Marshal(header{Kind: e.Kind, Time: us, N: n, Usage: e.Usage})
					if err != nil {
						t.Fatal(err)
					}
					want := string(h) + "\n" + string(e.Data)
					if got := encodeBody(e, us, n); got != want {
						t.Errorf("encodeBody(%q at %d, n %v) = %q, want %q", k, us, n, got, want)
					}
				}
			}
		}
	}
}

// TestPlainHeader: plainHeader accepts exactly the headers encodeBody
// writes directly, and reads them as json.Unmarshal does; everything else
// (which json.Unmarshal reads or refuses) it leaves to json.Unmarshal.
func TestPlainHeader(t *testing.T) {
	t.Parallel()
	check := func(s string) {
		t.Helper()
		got, ok := plainHeader(s)
		if !ok {
			return
		}
		var want header
		if err := json.Unmarshal([]byte(s), &want); err != nil || want.Kind == "" {
			t.Errorf("plainHeader(%q) = %+v, but json.Unmarshal refuses it: %v", s, got, err)
			return
		}
		if got.Kind != want.Kind || got.Time != want.Time || got.N != nil || got.Usage != nil || want.N != nil || want.Usage != nil {
			t.Errorf("plainHeader(%q) = %+v, json.Unmarshal %+v", s, got, want)
		}
	}
	// Every header encodeBody writes directly is read directly.
	for _, k := range []recall.Kind{recall.KindItem, recall.KindPop, recall.KindRemove, recall.KindClear, recall.KindCompaction,
		recall.KindTitle, recall.KindMeta, recall.KindFork, recall.KindCreate} {
		for _, us := range []int64{0, 1, -1, 1796138659842467, -maxMicros + 1, maxMicros - 1, math.MaxInt64, math.MinInt64} {
			body := encodeBody(recall.Entry{Kind: k}, us, nil)
			h := body[:len(body)-1]
			if got, ok := plainHeader(h); !ok || got.Kind != k || got.Time != us {
				t.Errorf("plainHeader(%q) = %+v, %t; want %s at %d", h, got, ok, k, us)
			}
			check(h)
		}
	}
	for _, s := range []string{
		`{"k":"item","t":1.5}`, `{"k":"item","t":01}`, `{"k":"item","t":-01}`, `{"k":"item","t":-0}`, `{"k":"item","t":-}`,
		`{"k":"item","t":}`, `{"k":"item","t":1e3}`, `{"k":"item","t":9223372036854775808}`, `{"k":"item","t":-9223372036854775809}`,
		`{"k":"","t":1}`, `{"k":"Item","t":1}`, `{"k":"it\u0065m","t":1}`, `{"k":"item","t":1,"u":{"input_tokens":1}}`,
		`{"k":"item","t":1 }`, `{"k":"item", "t":1}`, `{"k":"item","t":","t":1}`, `{"k":"item","t":1}}`, `{"k":"item","t":"1"}`,
		`{"k":"compaction","t":1,"n":2}`, `{"t":1,"k":"item"}`, `{"K":"item","T":1}`, `{"k":"item"}`, `{"k":"item","t":1`, `"k":"item","t":1}`,
	} {
		check(s)
	}
	if _, ok := plainHeader(`{"k":"item","t":-0}`); !ok {
		t.Error(`plainHeader refuses -0, a JSON integer`)
	}
	for _, s := range []string{`{"k":"item","t":01}`, `{"k":"item","t":1.5}`, `{"k":"item","t":9223372036854775808}`, `{"k":"Item","t":1}`} {
		if h, ok := plainHeader(s); ok {
			t.Errorf("plainHeader(%q) = %+v, want it left to json.Unmarshal", s, h)
		}
	}
}

// FuzzPlainHeader checks plainHeader against json.Unmarshal on any text.
func FuzzPlainHeader(f *testing.F) {
	for _, s := range []string{`{"k":"item","t":1796138659842467}`, `{"k":"pop","t":-5}`, `{"k":"item","t":01}`, `{"k":"item","t":1,"u":{}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := plainHeader(s)
		if !ok {
			return
		}
		var want header
		if err := json.Unmarshal([]byte(s), &want); err != nil || want.Kind == "" || got.Kind != want.Kind || got.Time != want.Time || want.N != nil || want.Usage != nil {
			t.Fatalf("plainHeader(%q) = %+v; json.Unmarshal: %+v, %v", s, got, want, err)
		}
	})
}
