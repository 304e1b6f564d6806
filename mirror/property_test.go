package mirror_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/mirror"
)

// Random operations on a mirror whose replica fails at random (calls lost
// before or after they reach it, outages, restarts that lose everything):
// once the faults stop, the replica drains to exactly the primary's logs.
func TestPropertyReplicaConvergesUnderFaults(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		propagate := rapid.Bool().Draw(rt, "propagate")
		primary := memstore.New(memstore.Options{})
		replica := newFaulty(memstore.New(memstore.Options{}), rapid.Uint64().Draw(rt, "seed"))
		opts := mirror.Options{
			StateDir:         t.TempDir(),
			PropagateDeletes: propagate,
			Workers:          rapid.IntRange(1, 4).Draw(rt, "workers"),
			BatchSize:        rapid.IntRange(1, 5).Draw(rt, "batch"),
			Delay:            -1,
			RetryMin:         100 * time.Microsecond,
			RetryMax:         2 * time.Millisecond,
			SaveInterval:     time.Millisecond,
		}
		m, err := mirror.New(primary, replica, opts)
		if err != nil {
			rt.Fatal(err)
		}
		defer m.Close()

		// Without propagated deletes a removed key is never reused: the
		// replica keeps the old log, and a new one would diverge from it.
		var live []recall.Key
		next := 0
		newKey := func(project string) recall.Key {
			next++
			return recall.Key{Project: project, Session: fmt.Sprintf("s%d", next)}
		}
		pick := func(t *rapid.T) recall.Key {
			if len(live) == 0 || rapid.IntRange(0, 5).Draw(t, "fresh") == 0 {
				k := newKey(rapid.SampledFrom([]string{"p", "q"}).Draw(t, "project"))
				if propagate && next > 3 && rapid.Bool().Draw(t, "reuse") {
					k.Session = fmt.Sprintf("s%d", rapid.IntRange(1, next-1).Draw(t, "old"))
				}
				live = append(live, k)
				return k
			}
			return rapid.SampledFrom(live).Draw(t, "key")
		}
		check := func(t *rapid.T, what string, err error) {
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}

		rt.Repeat(map[string]func(*rapid.T){
			"append": func(t *rapid.T) {
				k := pick(t)
				n := rapid.IntRange(1, 4).Draw(t, "n")
				items := make([]recall.Item, n)
				for i := range items {
					items[i] = item(fmt.Sprintf("item %d", i))
				}
				_, err := m.Append(ctx, k, recall.Guard{}, recall.ItemEntries(items...)...)
				check(t, "append", err)
			},
			"create": func(t *rapid.T) {
				k := pick(t)
				_, exists := m.Stat(ctx, k)
				opts := recall.CreateOptions{Title: rapid.StringMatching(`[a-z ]{0,8}`).Draw(t, "title")}
				if rapid.Bool().Draw(t, "with metadata") {
					opts.Metadata = map[string]string{"k": rapid.StringMatching(`[a-z]{0,5}`).Draw(t, "value")}
				}
				if rapid.Bool().Draw(t, "with items") {
					opts.Items = []recall.Item{item("created")}
				}
				_, err := recall.NewSession(m, k).Create(ctx, opts)
				if exists == nil {
					if !errors.Is(err, recall.ErrConflict) {
						t.Fatalf("create of an existing session: %v, want ErrConflict", err)
					}
					return
				}
				check(t, "create", err)
			},
			"remove item": func(t *rapid.T) {
				k := pick(t)
				live, _, err := m.Items(ctx, k, 0)
				check(t, "items", err)
				if len(live) == 0 {
					return
				}
				ref := rapid.SampledFrom(live).Draw(t, "item").Ref
				_, err = recall.NewSession(m, k).RemoveItem(ctx, ref)
				check(t, "remove item", err)
			},
			"metadata": func(t *rapid.T) {
				k := pick(t)
				if _, err := m.Append(ctx, k, recall.Guard{}, item("x").Entry()); err != nil {
					t.Fatal(err)
				}
				v := rapid.StringMatching(`[a-z]{0,5}`).Draw(t, "value")
				var err error
				if rapid.Bool().Draw(t, "merge") {
					_, err = recall.NewSession(m, k).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{rapid.SampledFrom([]string{"a", "b"}).Draw(t, "key"): &v}})
				} else {
					_, err = recall.NewSession(m, k).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"a": new(v)}})
				}
				check(t, "metadata", err)
			},
			"subagent": func(t *rapid.T) {
				k := pick(t)
				k.Subpath = "subagents/w-1"
				_, err := m.Append(ctx, k, recall.Guard{}, item("sub").Entry())
				check(t, "append subagent", err)
			},
			"pop": func(t *rapid.T) {
				_, err := m.Pop(ctx, pick(t))
				check(t, "pop", err)
			},
			"clear": func(t *rapid.T) {
				check(t, "clear", recall.NewSession(m, pick(t)).Clear(ctx))
			},
			"title": func(t *rapid.T) {
				k := pick(t)
				if _, err := m.Append(ctx, k, recall.Guard{}, item("x").Entry()); err != nil {
					t.Fatal(err)
				}
				_, err := recall.NewSession(m, k).SetTitle(ctx, rapid.StringMatching(`[a-z ]{0,12}`).Draw(t, "title"), rapid.SampledFrom([]recall.TitleSource{recall.TitleAuto, recall.TitleUser}).Draw(t, "source"))
				check(t, "title", err)
			},
			"meta": func(t *rapid.T) {
				k := pick(t)
				if _, err := m.Append(ctx, k, recall.Guard{}, item("x").Entry()); err != nil {
					t.Fatal(err)
				}
				b := rapid.Bool().Draw(t, "on")
				var err error
				switch rapid.IntRange(0, 2).Draw(t, "which") {
				case 0:
					_, err = recall.NewSession(m, k).ChangeMeta(ctx, recall.MetaChange{Archived: new(b)})
				case 1:
					_, err = recall.NewSession(m, k).ChangeMeta(ctx, recall.MetaChange{Pinned: new(b)})
				default:
					_, err = recall.NewSession(m, k).ChangeMeta(ctx, recall.MetaChange{Labels: rapid.SliceOfN(rapid.StringMatching(`[a-z]{1,5}`), 0, 3).Draw(t, "labels"), SetLabels: true})
				}
				check(t, "meta", err)
			},
			"compact": func(t *rapid.T) {
				k := pick(t)
				st, err := m.Stat(ctx, k)
				if err != nil {
					return // nothing to compact yet
				}
				_, err = m.Append(ctx, k, recall.Guard{}, recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: st.LastSeq, Replaced: st.ItemCount, Items: []recall.Item{item("summary")}}))
				check(t, "compact", err)
			},
			"fork": func(t *rapid.T) {
				k := pick(t)
				if _, err := m.Stat(ctx, k); err != nil {
					return
				}
				nk := newKey(k.Project)
				_, err := recall.NewSession(m, k).Fork(ctx, 0, nk)
				check(t, "fork", err)
				live = append(live, nk)
			},
			"remove": func(t *rapid.T) {
				if len(live) == 0 {
					return
				}
				i := rapid.IntRange(0, len(live)-1).Draw(t, "victim")
				k := live[i]
				live = append(live[:i], live[i+1:]...)
				_ = m.Remove(ctx, k) // ErrNotFound when never written
			},
			"faults": func(t *rapid.T) {
				switch rapid.IntRange(0, 2).Draw(t, "fault") {
				case 0:
					replica.setRate(rapid.SampledFrom([]float64{0, 0.1, 0.5, 1}).Draw(t, "rate"))
				case 1:
					replica.setDown(rapid.Bool().Draw(t, "down"))
				default:
					// The replica goes down, the mirror notices, and it
					// comes back empty, as a Redis without persistence does.
					goDown(t, m, replica, pick(t))
					replica.wipe()
					replica.setDown(false)
				}
			},
		})

		replica.setDown(false)
		replica.setRate(0)
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := m.Flush(fctx); err != nil {
			rt.Fatalf("final drain: %v", err)
		}
		if err := diffLogs(rt, primary, replica.store(), propagate); err != nil {
			rt.Fatal(err)
		}
	})
}
