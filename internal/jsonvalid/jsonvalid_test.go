package jsonvalid_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/recallkit/recall/internal/jsonvalid"
)

// seeds covers the corners where two JSON validators could disagree.
var seeds = []string{
	``, ` `, `{}`, `[]`, `1`, `"x"`, `null`, `true`, `-0`, `-0.0e+5`, `1E400`, `{"a":1}`,
	` {"a" : [ 1e5, -0.0, true, null, {} ] } ` + "\n\t\r",
	`{"a":1,"a":2}`,              // duplicate names
	"{\"a\":\"\xff\xfe\"}",       // invalid UTF-8 in a string
	"{\"\xc3\":1}",               // invalid UTF-8 in a name
	`{"a":"\ud800"}`,             // a lone surrogate escape
	`{"a":"\udc00\ud800"}`,       // surrogates in the wrong order
	`{"a":"\u0000"}`,             // an escaped NUL
	"{\"a\":\"\x00\"}",           // a raw NUL
	"{\"a\":\"\x1f\"}",           // a raw control character
	"{\"a\":\"\x7f\"}",           // DEL is allowed
	`{"a":"\x"}`, `{"a":"\u12"}`, // bad escapes
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":+1}`, `{"a":1e}`, `{"a":0x1}`,
	`{"a":1,}`, `[1,]`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{'a':1}`,
	`{} {}`, `{}x`, `NaN`, `Infinity`, `tru`, `nul`,
	"\ufeff{}", // a byte order mark
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
	strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
}

func TestSeedsAgree(t *testing.T) {
	for _, s := range seeds {
		if got, want := jsonvalid.Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%.60q) = %v, encoding/json says %v", s, got, want)
		}
	}
}

// FuzzAgrees checks that Valid and encoding/json.Valid agree on any input.
func FuzzAgrees(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := jsonvalid.Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

var item = []byte(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"` +
	strings.Repeat("lorem ipsum dolor sit amet, ", 40) + `"}],"id":"msg_123","status":"completed"}`)

// BenchmarkValid compares Valid with encoding/json.Valid on a 1.2 KB item.
func BenchmarkValid(b *testing.B) {
	b.Run("jsonvalid", func(b *testing.B) {
		b.SetBytes(int64(len(item)))
		for b.Loop() {
			jsonvalid.Valid(item)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(item)))
		for b.Loop() {
			json.Valid(item)
		}
	})
}
