package compact_test

import (
	"context"
	"strings"
	"testing"

	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/provider/openai"
)

// A compaction whose summary is longer than what it replaces is not
// written: the log and the view stay as they were, and the result says
// why (NoGain) with the tokens the compacted view would have taken.
func TestCompactOnlyShrinks(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, openai.APIResponses)
	sess := f.session(compact.Options{KeepLast: 2})
	f.add(t, conv("u a u a u a")...)
	before := f.view(t)
	m0, err := f.store.Stat(ctx, f.key)
	if err != nil {
		t.Fatal(err)
	}

	f.srv.Enqueue(fakeopenai.Reply{Text: strings.Repeat("a summary far longer than the conversation it stands for. ", 40)})
	res, err := sess.RunCompaction(ctx, agent.CompactionArgs{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Compacted || !res.NoGain || res.TokensAfter != res.TokensBefore || res.TokensWouldBe <= res.TokensBefore || res.Seq != 0 {
		t.Fatalf("a compaction that grows the session = %+v, want not written, NoGain", res)
	}
	m1, err := f.store.Stat(ctx, f.key)
	if err != nil {
		t.Fatal(err)
	}
	if m1.LastSeq != m0.LastSeq || !sameItemList(f.view(t), before) {
		t.Fatalf("the log changed: LastSeq %d -> %d", m0.LastSeq, m1.LastSeq)
	}

	// A summary that does shrink the session is written.
	f.srv.Enqueue(fakeopenai.Reply{Text: "s"})
	res, err = sess.RunCompaction(ctx, agent.CompactionArgs{Force: true})
	if err != nil || !res.Compacted || res.NoGain || res.TokensAfter >= res.TokensBefore {
		t.Fatalf("a compaction that shrinks = %+v, %v", res, err)
	}
}
