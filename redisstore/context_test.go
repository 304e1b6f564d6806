package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// dumpPrefix renders every key under prefix with its content (test
// inspection only), to compare the data before and after a call.
func dumpPrefix(t *testing.T, prefix string) string {
	t.Helper()
	ctx := context.Background()
	rdb := adminClient(t)
	names := prefixKeys(t, prefix)
	slices.Sort(names)
	var b strings.Builder
	for _, k := range names {
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "hash":
			h := rdb.HGetAll(ctx, k).Val()
			fmt.Fprintf(&b, "%s hash", k)
			for _, f := range slices.Sorted(maps.Keys(h)) {
				fmt.Fprintf(&b, " %s=%q", f, h[f])
			}
		case "list":
			fmt.Fprintf(&b, "%s list %q", k, rdb.LRange(ctx, k, 0, -1).Val())
		case "zset":
			fmt.Fprintf(&b, "%s zset %v", k, rdb.ZRangeWithScores(ctx, k, 0, -1).Val())
		default:
			fmt.Fprintf(&b, "%s %s %q", k, typ, rdb.Get(ctx, k).Val())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestContextDone calls every method under a cancelled and under an
// expired context: each returns the context's error (errors.Is) and the
// data is exactly as it was.
func TestContextDone(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	s := newStore(t, Options{TTL: time.Hour})
	k := recall.Key{Project: "p", Session: "s"}
	sub := recall.Key{Project: "p", Session: "s", Subpath: "subagents/a"}
	mustAppend(t, s, k, recall.ItemEntries(item("a"), item("b"))...)
	mustAppend(t, s, sub, item("c").Entry())
	before := dumpPrefix(t, s.k.prefix)
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	expired, cancel2 := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer cancel2()
	next := item("next").Entry()
	next.Seq, next.Time = 3, storekit.Now()
	calls := map[string]func(ctx context.Context) error{
		"Append": func(ctx context.Context) error {
			_, err := s.Append(ctx, k, recall.Guard{}, item("x").Entry())
			return err
		},
		"Append/new": func(ctx context.Context) error {
			_, err := s.Append(ctx, recall.Key{Project: "p", Session: "new"}, recall.IfNew())
			return err
		},
		"Pop":        func(ctx context.Context) error { _, err := s.Pop(ctx, k); return err },
		"Import":     func(ctx context.Context) error { _, err := s.Import(ctx, k, next); return err },
		"Remove":     func(ctx context.Context) error { return s.Remove(ctx, k) },
		"Remove/sub": func(ctx context.Context) error { return s.Remove(ctx, sub) },
		"Stat":       func(ctx context.Context) error { _, err := s.Stat(ctx, k); return err },
		"Load":       func(ctx context.Context) error { _, _, err := s.Load(ctx, k); return err },
		"Items":      func(ctx context.Context) error { _, _, err := s.Items(ctx, k, 0); return err },
		"Entries":    func(ctx context.Context) error { _, err := s.Entries(ctx, k, 0, 0); return err },
		"ReadItems": func(ctx context.Context) error {
			_, err := s.ReadItems(ctx, k, recall.ItemPageOptions{Limit: 1})
			return err
		},
		"List": func(ctx context.Context) error { _, err := s.List(ctx, "", recall.ListOptions{}); return err },
		"List/parent": func(ctx context.Context) error {
			_, err := s.List(ctx, "p", recall.ListOptions{Parent: "s"})
			return err
		},
		"Cleanup": func(ctx context.Context) error {
			_, err := s.Cleanup(ctx, recall.CleanupOptions{OlderThan: time.Now().Add(time.Hour)})
			return err
		},
		"Projects": func(ctx context.Context) error { _, err := s.Projects(ctx); return err },
		"Fork": func(ctx context.Context) error {
			_, err := recall.NewSession(s, k).Fork(ctx, 0, recall.Key{Project: "p", Session: "fork"})
			return err
		},
		"Fork/sub": func(ctx context.Context) error {
			_, err := s.Fork(ctx, sub, 0, recall.Key{Project: "p", Session: "s", Subpath: "subagents/fork"})
			return err
		},
	}
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		for _, ctx := range []context.Context{cancelled, expired} {
			err := calls[name](ctx)
			if !errors.Is(err, ctx.Err()) || !strings.Contains(err.Error(), "redisstore") {
				t.Errorf("%s under %v = %v; want the context's error, wrapped", name, ctx.Err(), err)
			}
		}
	}
	if after := dumpPrefix(t, s.k.prefix); after != before {
		t.Fatalf("calls under a done context changed the data:\nbefore\n%s\nafter\n%s", before, after)
	}
}

// cancelAfter is a client hook that cancels a context once a command
// named name has been answered.
type cancelAfter struct {
	name   string
	cancel func()
	armed  *bool
}

func (h cancelAfter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h cancelAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if *h.armed && cmd.Name() == h.name {
			h.cancel()
		}
		return err
	}
}
func (h cancelAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if *h.armed && h.name == "pipeline" {
			h.cancel()
		}
		return err
	}
}

// TestForkCanceledAfterRead cancels the context once Fork has read the
// source (its one transaction): it writes nothing and returns the
// context's error.
func TestForkCanceledAfterRead(t *testing.T) {
	t.Parallel()
	prefix := testPrefix(t)
	o, _ := redis.ParseURL(testURL(t))
	client := redis.NewClient(o)
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	armed := false
	client.AddHook(cancelAfter{name: "pipeline", cancel: cancel, armed: &armed})
	s := New(client, Options{Prefix: prefix})
	k := recall.Key{Project: "p", Session: "s"}
	mustAppend(t, s, k, recall.ItemEntries(item("a"), item("b"))...)
	before := dumpPrefix(t, prefix)
	armed = true
	_, err := s.Fork(ctx, k, 0, recall.Key{Project: "p", Session: "fork"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Fork cancelled after its read = %v, want context.Canceled", err)
	}
	if after := dumpPrefix(t, prefix); after != before {
		t.Fatalf("a cancelled Fork changed the data:\nbefore\n%s\nafter\n%s", before, after)
	}
}

// TestCleanupStopsWhenContextEnds cancels the context while Cleanup runs,
// after it has read what is old: it removes nothing more and returns the
// context's error.
func TestCleanupStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	prefix := testPrefix(t)
	o, _ := redis.ParseURL(testURL(t))
	client := redis.NewClient(o)
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	armed := false
	client.AddHook(cancelAfter{name: "evalsha", cancel: cancel, armed: &armed})
	s := New(client, Options{Prefix: prefix})
	old := item("old").Entry()
	old.Time = storekit.Now().Add(-48 * time.Hour)
	for i := range 3 {
		mustAppend(t, s, recall.Key{Project: "p", Session: fmt.Sprint("s", i)}, old)
	}
	before := dumpPrefix(t, prefix)
	armed = true // the next script answered (the list script's) ends ctx
	rep, err := s.Cleanup(ctx, recall.CleanupOptions{OlderThan: time.Now().Add(-time.Hour)})
	if !errors.Is(err, context.Canceled) || len(rep.Removed) != 0 {
		t.Fatalf("Cleanup cancelled after its scan = %+v, %v; want nothing removed and context.Canceled", rep, err)
	}
	if after := dumpPrefix(t, prefix); after != before {
		t.Fatalf("a cancelled Cleanup changed the data:\nbefore\n%s\nafter\n%s", before, after)
	}
}
