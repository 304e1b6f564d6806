package transcript

import (
	"errors"
	"strings"
	"testing"

	"github.com/recallkit/recall"
)

var items = []recall.Item{
	recall.Message("user", "list the files"),
	recall.Item(`{"type":"reasoning","summary":[{"type":"summary_text","text":"use the tool"}]}`),
	recall.Item(`{"type":"function_call","call_id":"c1","name":"list_files","arguments":"{\"path\":\".\"}"}`),
	recall.Item(`{"type":"function_call_output","call_id":"c1","output":"a.go\nb.go"}`),
	recall.Message("assistant", "Two files: a.go and b.go."),
	recall.Item(`{"type":"web_search_call","id":"ws1"}`),
	recall.Item(`{"role":"user","content":"easy input"}`),
}

func TestText(t *testing.T) {
	var b strings.Builder
	if err := Text(&b, items); err != nil {
		t.Fatal(err)
	}
	want := `user:
  list the files

reasoning:
  use the tool

tool call list_files:
  {"path":"."}

tool output:
  a.go
  b.go

assistant:
  Two files: a.go and b.go.

web_search_call:

user:
  easy input
`
	if b.String() != want {
		t.Errorf("Text =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestMarkdown(t *testing.T) {
	var b strings.Builder
	withTicks := append(items[:0:0], recall.Item(`{"type":"function_call_output","call_id":"c","output":"x `+"```"+` y"}`))
	if err := Markdown(&b, "Files", append(items[:2:2], withTicks...)); err != nil {
		t.Fatal(err)
	}
	want := "# Files\n\n**User**\n\nlist the files\n\n> *reasoning:* use the tool\n\n**Tool output**\n\n````\nx ``` y\n````\n\n"
	if b.String() != want {
		t.Errorf("Markdown =\n%q\nwant\n%q", b.String(), want)
	}
}

func TestDescribeMalformed(t *testing.T) {
	// Items are stored verbatim; a renderer must not fail on odd ones.
	for _, it := range []recall.Item{recall.Item(`{}`), recall.Item(`{"type":"function_call","name":5}`), recall.Item(`not json`)} {
		_ = Describe(it)
	}
	if p := Describe(recall.Item(`{}`)); p.Kind != "item" {
		t.Errorf("Describe({}) = %+v", p)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrorReported(t *testing.T) {
	if err := Text(failWriter{}, items); err == nil {
		t.Error("Text to a failing writer returned no error")
	}
	if err := Markdown(failWriter{}, "t", items); err == nil {
		t.Error("Markdown to a failing writer returned no error")
	}
}
