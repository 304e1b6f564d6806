package storetest

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/recallkit/recall"
)

// What the model draws: the keys, items and entries of its operations.

// mainKey draws a main session key.
func (m *model) mainKey() recall.Key {
	return recall.Key{
		Project: rapid.SampledFrom(modelProjects).Draw(m.t, "project"),
		Session: rapid.SampledFrom(modelSessions).Draw(m.t, "session"),
	}
}

// anyKey draws a main session key, or a subagent record of a session that
// exists: a store need not support records without their session.
func (m *model) anyKey() recall.Key {
	k := m.mainKey()
	if rapid.IntRange(0, 3).Draw(m.t, "sub") == 0 {
		if _, ok := m.refLog(k); ok {
			k.Subpath = rapid.SampledFrom(modelSubpaths).Draw(m.t, "subpath")
		}
	}
	return k
}

// item returns a new distinct item in one of a few byte layouts.
func (m *model) item() recall.Item {
	m.next++
	n := m.next
	layouts := []string{
		`{"type":"message","role":"user","content":"u%d"}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a%d"}]}`,
		` { "type" : "function_call", "call_id" : "c%d", "name":"f","arguments":"{}" }` + "\n",
		"{\n  \"type\": \"reasoning\",\n  \"summary\": [\"r%d\"]\n}",
		`{"type":"x-unknown","n":%d,"dup":1,"dup":2}`,
	}
	return recall.Item(fmt.Sprintf(rapid.SampledFrom(layouts).Draw(m.t, "layout"), n))
}

// importEntry returns an entry for an import batch: an item, a title, a
// meta change or a clear. Pops are left out: a replicated pop names an item
// of the source's log, which the model does not reproduce.
func (m *model) importEntry() recall.Entry {
	switch rapid.IntRange(0, 5).Draw(m.t, "kind") {
	case 0:
		return recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "imported", Source: rapid.SampledFrom([]recall.TitleSource{recall.TitleAuto, recall.TitleUser}).Draw(m.t, "source")})
	case 1:
		v := rapid.Bool().Draw(m.t, "pinned")
		return recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &v})
	case 2:
		return recall.Entry{Kind: recall.KindClear}
	default:
		return m.item().Entry()
	}
}
