package export_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
)

func TestTextGolden(t *testing.T) {
	s := fixture()
	var b bytes.Buffer
	if err := export.StreamText(context.Background(), &b, newSliceStore(s), s.Meta.Key); err != nil {
		t.Fatal(err)
	}
	golden(t, "session.txt", b.Bytes())
}

// StreamText writes the same text whatever the page size, reading only
// a page at a time, and a missing session is an error before any text.
func TestStreamTextPaged(t *testing.T) {
	ctx := context.Background()
	cases := streamCases()
	st := newSliceStore(cases...)
	for _, s := range cases {
		var want bytes.Buffer
		if err := export.StreamText(ctx, &want, st, s.Meta.Key); err != nil {
			t.Fatalf("%s: %v", s.Meta.Key, err)
		}
		for _, size := range []int{1, 2, 7} {
			st.longest = 0
			var got bytes.Buffer
			if err := export.StreamTextPaged(ctx, &got, st, s.Meta.Key, size); err != nil {
				t.Fatalf("%s, page %d: %v", s.Meta.Key, size, err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) || st.longest > size {
				t.Fatalf("%s, page %d: %d entries at once, text:\n%s\nwant:\n%s", s.Meta.Key, size, st.longest, got.Bytes(), want.Bytes())
			}
		}
	}
	if st.loads > 0 {
		t.Errorf("StreamText called Load %d times", st.loads)
	}
	var out bytes.Buffer
	err := export.StreamText(ctx, &out, st, recall.Key{Project: "p", Session: "missing"})
	if !errors.Is(err, recall.ErrNotFound) || out.Len() > 0 {
		t.Errorf("text of a missing session: %v after %d bytes, want recall.ErrNotFound before any", err, out.Len())
	}
}

// HistoryItems hands on the items of the history in order: every item
// entry but the damaged one, and a compaction's summary, not the items
// it kept.
func TestHistoryItems(t *testing.T) {
	s := fixture()
	var got []string
	err := export.HistoryItems(context.Background(), newSliceStore(s), s.Meta.Key, func(it recall.Item) error {
		got = append(got, fmt.Sprintf("%s %s", it.Type(), it.Text()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"message The lexer drops the last token. Can you look at `lexer.go`?",
		"reasoning ",
		"function_call ",
		"function_call_output ",
		"message Found it: `next()` stops one early.\n\n```go\nfor i := 0; i < len(s)-1; i++ {\n```\n\nThe fix is to loop to `len(s)`.",
		"message Here is the failing screen:",
		"message A draft I took back.",
		"function_call ",
		"function_call_output ",
		"web_search_call ",
		"message Summary: the lexer's loop stopped one token early; the test TestLast fails.",
		"message Thanks! Anything else?",
		"message One more thing, unfinished:\n\n```python\nprint(1)\n\n<!-- not a comment",
		"message Start over with <b>bold</b> ideas.",
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("HistoryItems gave\n%q\nwant\n%q", got, want)
	}
	stop := errors.New("stop")
	n := 0
	err = export.HistoryItems(context.Background(), newSliceStore(s), s.Meta.Key, func(recall.Item) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("HistoryItems went on after fn's error: %v, %d calls", err, n)
	}
}
