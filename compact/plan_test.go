package compact_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
)

func reasoning(id string) recall.Item {
	return recall.Item(fmt.Sprintf(`{"type":"reasoning","id":"rs_%s","summary":[]}`, id))
}

// shorthand: u=user a=assistant r=reasoning cN=call N oN=output of N
func conv(spec string) []recall.Item {
	var items []recall.Item
	for i, tok := range strings.Fields(spec) {
		switch tok[0] {
		case 'u':
			items = append(items, recall.Message("user", fmt.Sprint(i)))
		case 'a':
			items = append(items, recall.Message("assistant", fmt.Sprint(i)))
		case 'r':
			items = append(items, reasoning(fmt.Sprint(i)))
		case 'c':
			items = append(items, agent.FunctionCallItem("call_"+tok[1:], "f", "{}"))
		case 'o':
			items = append(items, agent.FunctionCallOutput("call_"+tok[1:], "out"))
		}
	}
	return items
}

func TestCut(t *testing.T) {
	for _, c := range []struct {
		spec string
		keep int
		want int
	}{
		{"", 3, 0},
		{"u a", 3, 0},
		{"u a u a", 2, 2},
		{"u a u a", 0, 4},
		{"u a u a", -1, 4},
		{"u c1 o1 a", 1, 3},           // keeps the assistant message only
		{"u c1 o1 a", 2, 1},           // an output kept: keep its call
		{"u r c1 o1 a", 2, 1},         // and the reasoning before the call
		{"u r a u a", 3, 1},           // reasoning stays with its message
		{"u c1 c2 o1 o2 a", 2, 1},     // parallel calls
		{"u c1 u o1 a", 2, 1},         // an output far from its call
		{"u r c1 o1 r c2 o2 a", 2, 4}, // reasoning + call + output kept together
		{"u r c1 o1 r c2 o2 a", 4, 4},
		{"u r c1 o1 r c2 o2 a", 5, 1},
		{"o9 u a", 1, 2}, // an orphan output does not move the cut
		{"u c1 a", 1, 2}, // an unanswered call is not a pair
		{"r", 0, 1},      // trailing reasoning with nothing after: summarized
	} {
		if got := compact.Cut(conv(c.spec), c.keep); got != c.want {
			t.Errorf("Cut(%q, %d) = %d, want %d", c.spec, c.keep, got, c.want)
		}
	}
}

// Cut never separates a pair or a reasoning item from its successor, and
// keeps at least keepLast items.
func TestCutProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var spec []string
		open := []int{}
		next := 1
		for range rapid.IntRange(0, 30).Draw(t, "n") {
			switch rapid.SampledFrom([]string{"u", "a", "r", "c", "o"}).Draw(t, "kind") {
			case "c":
				spec = append(spec, fmt.Sprintf("c%d", next))
				open = append(open, next)
				next++
			case "o":
				if len(open) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(open)-1).Draw(t, "which")
				spec = append(spec, fmt.Sprintf("o%d", open[i]))
				open = append(open[:i], open[i+1:]...)
			default:
				spec = append(spec, rapid.SampledFrom([]string{"u", "a", "r"}).Draw(t, "simple"))
			}
		}
		items := conv(strings.Join(spec, " "))
		keep := rapid.IntRange(-1, len(items)+1).Draw(t, "keep")
		cut := compact.Cut(items, keep)
		if cut < 0 || cut > len(items) || len(items)-cut < min(max(keep, 0), len(items)) {
			t.Fatalf("Cut(%v, %d) = %d", spec, keep, cut)
		}
		if cut == 0 {
			return
		}
		if cut < len(items) && items[cut-1].Type() == "reasoning" {
			t.Fatalf("Cut(%v, %d) = %d separates a reasoning item from its successor", spec, keep, cut)
		}
		older := map[string]bool{}
		for _, it := range items[:cut] {
			if it.Type() == "function_call" {
				older[it.CallID()] = true
			}
		}
		for _, it := range items[cut:] {
			if it.Type() == "function_call_output" && older[it.CallID()] {
				t.Fatalf("Cut(%v, %d) = %d separates call %s from its output", spec, keep, cut, it.CallID())
			}
		}
	})
}
