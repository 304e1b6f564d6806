package storetest

import (
	"strings"

	"github.com/recallkit/recall"
)

// InvalidKeys returns hostile keys that every store must refuse with
// recall.ErrInvalidKey before touching storage: path traversal, absolute
// paths, separators, NUL bytes, empty and over-long names, reserved names
// and bad subpaths. Stores may use it in their own tests (for example to
// check that nothing appeared outside the store's root). Each call returns
// a new slice.
func InvalidKeys() []recall.Key {
	long := strings.Repeat("a", recall.MaxIDLen+1)
	return []recall.Key{
		// empty parts
		{Project: "", Session: "s"},
		{Project: "p", Session: ""},
		{},
		// reserved names
		{Project: ".", Session: "s"},
		{Project: "..", Session: "s"},
		{Project: "p", Session: "."},
		{Project: "p", Session: ".."},
		// traversal and separators
		{Project: "../p", Session: "s"},
		{Project: "p", Session: "../s"},
		{Project: "p", Session: "../../../../etc/passwd"},
		{Project: "p/q", Session: "s"},
		{Project: "p", Session: "a/b"},
		{Project: "p", Session: `a\b`},
		{Project: "p", Session: `..\..\x`},
		// absolute paths
		{Project: "/abs", Session: "s"},
		{Project: "p", Session: "/tmp/x"},
		// NUL bytes
		{Project: "p\x00", Session: "s"},
		{Project: "p", Session: "s\x00"},
		{Project: "p", Session: "s\x00.jsonl"},
		// too long: a 129-byte session ID, a 256-byte project
		{Project: "p", Session: long},
		{Project: strings.Repeat("p", 256), Session: "s"},
		// bytes outside [A-Za-z0-9._-]
		{Project: "p", Session: "a b"},
		{Project: "p", Session: "é"},
		{Project: "p", Session: "s\n"},
		{Project: "p", Session: "~"},
		{Project: "p", Session: "s:t"},
		{Project: "p", Session: "*"},
		{Project: "p", Session: "%2e%2e"},
		{Project: "p q", Session: "s"},
		// bad subpaths
		{Project: "p", Session: "s", Subpath: "../x"},
		{Project: "p", Session: "s", Subpath: "subagents/../../x"},
		{Project: "p", Session: "s", Subpath: "/abs"},
		{Project: "p", Session: "s", Subpath: "a//b"},
		{Project: "p", Session: "s", Subpath: "a/"},
		{Project: "p", Session: "s", Subpath: "/a"},
		{Project: "p", Session: "s", Subpath: "."},
		{Project: "p", Session: "s", Subpath: ".."},
		{Project: "p", Session: "s", Subpath: "a/."},
		{Project: "p", Session: "s", Subpath: "a/.."},
		{Project: "p", Session: "s", Subpath: "subagents/" + long},
		{Project: "p", Session: "s", Subpath: "a/b/c/d/e/f/g/h/i"},
		{Project: "p", Session: "s", Subpath: "a\x00b"},
		{Project: "p", Session: "s", Subpath: `a\b`},
		// a bad session under a good subpath
		{Project: "p", Session: "..", Subpath: "subagents/x"},
	}
}

// EdgeKeys returns keys at the edge of validity that every store must
// accept and keep apart: the longest IDs, dot-led and dash-led names, the
// deepest subpath. Subagent records come after their main session. Each
// call returns a new slice.
func EdgeKeys() []recall.Key {
	return []recall.Key{
		{Project: "p", Session: strings.Repeat("a", recall.MaxIDLen)},
		{Project: strings.Repeat("p", 255), Session: "s"},
		{Project: "p", Session: "..."},
		{Project: "p", Session: ".hidden"},
		{Project: "p", Session: "-dash"},
		{Project: "p", Session: "a.b_c-D9"},
		{Project: "p", Session: "s.jsonl"},
		{Project: "-", Session: "s"},
		{Project: "p", Session: "s"}, // the parent of the records below
		{Project: "p", Session: "s", Subpath: "a/b/c/d/e/f/g/h"},
		{Project: "p", Session: "s", Subpath: "subagents/" + strings.Repeat("x", recall.MaxIDLen)},
		{Project: "p", Session: "s", Subpath: "subagents/..."},
	}
}

// VerbatimItems returns valid items whose exact bytes a store must keep:
// odd whitespace, pretty-printed multi-line JSON, duplicate keys, unicode
// and escapes that a JSON re-encoder would change, unknown item types, and
// one large item. Each call returns new items.
func VerbatimItems() []recall.Item {
	large := `{"type":"message","role":"user","content":"` + strings.Repeat("0123456789abcdef", 16<<10) + `"}`
	return []recall.Item{
		recall.Item(`{"type":"message","role":"user","content":"hi"}`),
		recall.Item(`  {"a" : 1 ,  "b":[ 1 , 2 ]}  `),
		recall.Item("{\n  \"type\": \"message\",\n  \"content\": [\n    {\"type\": \"input_text\", \"text\": \"multi\\nline\"}\n  ]\n}\n"),
		recall.Item("\t{\"tab\":\"\\t\"}\r\n"),
		recall.Item(`{"a":1,"a":2}`),
		recall.Item(`{"z":1,"a":2,"m":3}`),
		recall.Item(`{"text":"héllo 世界 🎉","esc":"\u00e9\ud83c\udf89","seps":"` + "\u2028\u2029" + `"}`),
		recall.Item(`{"nul":"\u0000","ctrl":"\u001f"}`),
		recall.Item(`{"lone":"\ud800"}`),
		recall.Item(`{"n":1.50E+3,"big":123456789012345678901234567890,"neg":-0,"f":1.0}`),
		recall.Item(`{}`),
		recall.Item(`{"a":{"b":{"c":[[[[{}]]]]}}}`),
		recall.Item(`{"html":"<script>&amp;</script>"}`),
		recall.Item(`{"slash":"a\/b","quote":"\"","backslash":"\\"}`),
		recall.Item(`{"type":"future_item_type","unknown_field":{"x":[true,false,null]}}`),
		recall.Item(large),
	}
}

// InvalidItems returns items that are not a single JSON object; every
// store refuses a batch holding one with recall.ErrInvalidItem and writes
// nothing of it. Each call returns new items.
func InvalidItems() []recall.Item {
	return []recall.Item{
		nil,
		recall.Item(""),
		recall.Item(" \n"),
		recall.Item("null"),
		recall.Item("true"),
		recall.Item("1"),
		recall.Item(`"s"`),
		recall.Item("[]"),
		recall.Item(`[{"a":1}]`),
		recall.Item("{"),
		recall.Item(`{"a":}`),
		recall.Item(`{"a":1}}`),
		recall.Item(`{"a":1}{"b":2}`),
		recall.Item("garbage"),
		recall.Item(`{'a':1}`),
		recall.Item("{\"a\":1}\x00"),
		recall.Item("\x00{}"),
	}
}
