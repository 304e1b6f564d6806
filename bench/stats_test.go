package main

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{9, 1, 1, 1, 9}, 1},
	} {
		in := append([]float64(nil), tc.in...)
		if got := median(in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Fatalf("median reordered its input: %v", in)
			}
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median(nil) is not NaN")
	}
}

func TestPercentile(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond // 100 ms down to 1 ms
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{
		{0.5, 50 * time.Millisecond},
		{0.99, 99 * time.Millisecond},
		{1, 100 * time.Millisecond},
		{0.001, time.Millisecond},
	} {
		if got := percentile(ds, tc.p); got != tc.want {
			t.Errorf("percentile(p=%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if ds[0] != 100*time.Millisecond {
		t.Error("percentile reordered its input")
	}
}

func TestInterleave(t *testing.T) {
	cfg := tinyConfig()
	cfg.minRunTime = 10 * time.Millisecond
	cfg.maxOpsPerRun = 50
	fast, slow, broken := &entrant{contender: contender{name: "fast"}}, &entrant{contender: contender{name: "slow"}}, &entrant{contender: contender{name: "broken"}}
	h := newHarness(cfg, nil, io.Discard)
	m := metric{id: "m"}
	var order []string
	boom := errors.New("boom")
	h.interleave([]*entrant{fast, slow, broken}, m, func(e *entrant, i int) (time.Duration, error) {
		order = append(order, e.name)
		switch e {
		case slow:
			return 6 * time.Millisecond, nil // counted, not slept
		case broken:
			if i == 1 {
				return 0, boom
			}
		}
		return time.Millisecond, nil
	})
	// Round-robin: fast, slow, broken; fast, slow, broken (fails); then fast
	// alone until it has 10 ms.
	want := []string{"fast", "slow", "broken", "fast", "slow", "broken"}
	if len(order) < len(want) || !slices.Equal(order[:len(want)], want) {
		t.Fatalf("ops ran in the order %v, want it to start %v", order, want)
	}
	if c := h.results["m"]["fast"]; len(c.runs) != 1 || c.runs[0] != 0.001 {
		t.Errorf("fast: %+v, want one run of 1 ms per op", c)
	}
	if c := h.results["m"]["slow"]; len(c.runs) != 1 || c.runs[0] != 0.006 {
		t.Errorf("slow: %+v, want one run of 6 ms per op (stopped at 12 ms)", c)
	}
	if c := h.results["m"]["broken"]; !errors.Is(c.err, boom) || len(c.runs) != 0 {
		t.Errorf("broken: %+v, want its error and no run", c)
	}
	if n := strings.Count(strings.Join(order, " "), "fast"); n != 10 {
		t.Errorf("fast ran %d ops, want 10 (10 ms of 1 ms ops)", n)
	}
}

func TestCorpus(t *testing.T) {
	a, b := newCorpus(1), newCorpus(1)
	for i := range poolSize {
		for _, save := range a.turn(i) {
			for _, it := range save {
				if n := len(it); n < minItemSize || n > maxItemSize {
					t.Fatalf("turn %d: item of %d bytes, outside [%d, %d]", i, n, minItemSize, maxItemSize)
				}
				var obj map[string]any
				if err := json.Unmarshal(it, &obj); err != nil {
					t.Fatalf("turn %d: item is not a JSON object: %v", i, err)
				}
			}
		}
		call, output := a.turn(i)[1][0], a.turn(i)[1][1]
		if call.Type() != "function_call" || output.Type() != "function_call_output" || call.CallID() != output.CallID() {
			t.Fatalf("turn %d: the tool save is not a call with its output: %s / %s", i, call.Type(), output.Type())
		}
		if string(a.user[i]) != string(b.user[i]) {
			t.Fatal("two corpora from one seed differ")
		}
	}
	s := a.session(10)
	if len(s) != 10 || s[0].Role() != "user" || s[4].Role() != "user" || s[3].Role() != "assistant" {
		t.Errorf("session(10) does not follow the turn order: %d items", len(s))
	}
}

func TestRatioPairsRuns(t *testing.T) {
	// Run 2 was slow for both (machine load): paired, the ratio stays 2.
	a := &cell{runs: []float64{2, 20, 2.2}}
	b := &cell{runs: []float64{1, 10, 1.1}}
	if got := ratio(a, b); got != 2 {
		t.Errorf("paired ratio = %v, want 2", got)
	}
	if got := ratio(&cell{runs: []float64{4}}, b); got != 4/1.1 {
		t.Errorf("unpaired ratio = %v, want the ratio of the medians", got)
	}
	if got := ratio(&cell{na: "x"}, b); !math.IsNaN(got) {
		t.Errorf("ratio with an n/a cell = %v, want NaN", got)
	}
}

func TestReplaceSection(t *testing.T) {
	created, err := replaceSection("", "numbers 1", sideBySide)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created, "# Benchmarks\n") || !strings.Contains(created, "## Side-by-side\n\n"+sideBySide.begin+"\nnumbers 1\n"+sideBySide.end) {
		t.Fatalf("new doc:\n%s", created)
	}

	other := "# Benchmarks\n\n## Micro\n\nother people's text\n"
	withSection, err := replaceSection(other, "numbers 1", sideBySide)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(withSection, other) {
		t.Fatalf("the text before the section changed:\n%s", withSection)
	}

	doc := withSection + "\n## Analysis\n\nhand-written\n"
	next, err := replaceSection(doc, "numbers 2", sideBySide)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(doc, "numbers 1", "numbers 2", 1)
	if next != want {
		t.Fatalf("rewrite changed more than the section:\n%s\nwant:\n%s", next, want)
	}

	// The scale section lives beside the side-by-side one; rewriting
	// either leaves the other alone.
	both, err := replaceSection(next, "scale 1", atScale)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(both, next) || !strings.Contains(both, "## The file store at scale\n\n"+atScale.begin+"\nscale 1\n"+atScale.end) {
		t.Fatalf("the scale section was not added after the rest:\n%s", both)
	}
	again, err := replaceSection(both, "numbers 3", sideBySide)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(both, "numbers 2", "numbers 3", 1); again != want {
		t.Fatalf("rewriting the side-by-side section touched the scale one:\n%s", again)
	}

	if _, err := replaceSection(sideBySide.end+"\n"+sideBySide.begin, "x", sideBySide); err == nil {
		t.Error("markers in the wrong order were accepted")
	}
	if _, err := replaceSection(sideBySide.begin+"\nno end", "x", sideBySide); err == nil {
		t.Error("a begin marker without its end was accepted")
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{duration(0.000000512), "512 ns"},
		{duration(0.0000123), "12.3 µs"},
		{duration(0.000456), "456 µs"},
		{duration(0.0012345), "1.23 ms"},
		{duration(12.5), "12.5 s"},
		{rate(12345.4), "12,345/s"},
		{times(1), "1.00×"},
		{times(37.44), "37.4×"},
		{times(1234.4), "1,234×"},
		{thousands(10000), "10,000"},
		{thousands(999), "999"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
