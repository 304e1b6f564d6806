package offline_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/provider/offline"
)

func TestRespond(t *testing.T) {
	items := []recall.Item{
		recall.Message("user", "first"),
		recall.Message("assistant", "reply"),
		agent.FunctionCallItem("c", "f", "{}"),
		agent.FunctionCallOutput("c", "out"),
		recall.Message("user", "second 你好"),
	}
	var deltas []string
	resp, err := offline.Model{}.Respond(context.Background(), &agent.Request{Items: items, OnDelta: func(s string) { deltas = append(deltas, s) }})
	if err != nil {
		t.Fatal(err)
	}
	want := "[offline] No model is configured (set OPENAI_API_KEY), so this reply is canned. I see 4 earlier items. You said: second 你好"
	if len(resp.Items) != 1 || resp.Items[0].Text() != want || resp.Items[0].Role() != "assistant" {
		t.Fatalf("reply = %s", resp.Items)
	}
	if strings.Join(deltas, "") != want || len(deltas) < 5 {
		t.Errorf("deltas = %q", deltas)
	}
	if !resp.Usage.IsZero() {
		t.Errorf("offline model reported usage %+v", resp.Usage)
	}
	// Deterministic: the same request, the same bytes.
	again, _ := offline.Model{}.Respond(context.Background(), &agent.Request{Items: items})
	if string(again.Items[0]) != string(resp.Items[0]) {
		t.Errorf("replies differ: %s vs %s", again.Items[0], resp.Items[0])
	}
}

func TestRespondEdges(t *testing.T) {
	cases := []struct {
		items []recall.Item
		want  string
	}{
		{nil, "I see 0 earlier items."},
		{[]recall.Item{recall.Message("assistant", "a")}, "I see 1 earlier item."},
		{[]recall.Item{recall.Message("user", "x"), recall.Message("assistant", "a")}, "I see 0 earlier items. You said: x"},
	}
	for _, c := range cases {
		resp, err := offline.Model{}.Respond(context.Background(), &agent.Request{Items: c.items})
		if err != nil || !strings.HasSuffix(resp.Items[0].Text(), c.want) {
			t.Errorf("items %s: %v %s, want suffix %q", c.items, err, resp.Items, c.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (offline.Model{}).Respond(ctx, &agent.Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}
