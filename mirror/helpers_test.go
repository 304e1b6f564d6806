package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/storekit"
)

// tb is what the helpers need of *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// fastOptions are mirror options with retry delays small enough for tests.
func fastOptions(stateDir string) mirror.Options {
	return mirror.Options{
		StateDir:     stateDir,
		Delay:        time.Millisecond,
		RetryMin:     time.Millisecond,
		RetryMax:     20 * time.Millisecond,
		SaveInterval: 5 * time.Millisecond,
		CallTimeout:  5 * time.Second,
	}
}

// allKeys returns every session record of s: main sessions of every project,
// archived ones, those in the trash, and subagent records.
func allKeys(t tb, s recall.Store) []recall.Key {
	t.Helper()
	ctx := context.Background()
	var keys []recall.Key
	cursor, trash := "", false
	for {
		p, err := s.List(ctx, "", recall.ListOptions{Limit: 100, Cursor: cursor, IncludeArchived: true, Trashed: trash})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		for _, m := range p.Sessions {
			keys = append(keys, m.Key)
			subs, err := s.List(ctx, m.Key.Project, recall.ListOptions{Limit: -1, IncludeArchived: true, Parent: m.Key.Session})
			if err != nil {
				t.Fatalf("list subagent records of %s: %v", m.Key, err)
			}
			for _, sm := range subs.Sessions {
				keys = append(keys, sm.Key)
			}
		}
		if p.Next == "" && trash {
			break
		}
		if cursor = p.Next; cursor == "" {
			trash = true // then the sessions in the trash
		}
	}
	slices.SortFunc(keys, func(a, b recall.Key) int { return cmpString(a.String(), b.String()) })
	return keys
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// diffLogs compares the whole log of every session of primary with the
// replica's: the same seqs, kinds, times, data and usage, in the same order.
// With exact, the replica must hold no other session either. It returns
// every difference joined.
func diffLogs(t tb, primary, replica recall.Store, exact bool) error {
	t.Helper()
	ctx := context.Background()
	var errs []error
	pk := allKeys(t, primary)
	for _, k := range pk {
		_, want, err := primary.Load(ctx, k)
		if err != nil {
			t.Fatalf("load %s from primary: %v", k, err)
		}
		_, got, err := replica.Load(ctx, k)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: replica: %w", k, err))
			continue
		}
		if err := sameEntries(want, got); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	if exact {
		rk := allKeys(t, replica)
		if !slices.Equal(pk, rk) {
			errs = append(errs, fmt.Errorf("primary holds %v, replica %v", pk, rk))
		}
	}
	if err := storekit.Verify(ctx, replica); err != nil {
		errs = append(errs, fmt.Errorf("replica fails Verify: %w", err))
	}
	return errors.Join(errs...)
}

func sameEntries(want, got []recall.Entry) error {
	if len(want) != len(got) {
		return fmt.Errorf("primary has %d entries (last seq %d), replica %d (last seq %d)", len(want), lastSeq(want), len(got), lastSeq(got))
	}
	for i := range want {
		a, b := want[i], got[i]
		if a.Seq != b.Seq || a.Kind != b.Kind || !a.Time.Equal(b.Time) || !bytes.Equal(a.Data, b.Data) || !sameUsage(a.Usage, b.Usage) {
			return fmt.Errorf("entry %d differs: primary %d %s %s %s, replica %d %s %s %s", i,
				a.Seq, a.Kind, a.Time.Format(time.RFC3339Nano), a.Data, b.Seq, b.Kind, b.Time.Format(time.RFC3339Nano), b.Data)
		}
	}
	return nil
}

func sameUsage(a, b *recall.Usage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil || a == nil && b.IsZero() || b == nil && a.IsZero()
	}
	return *a == *b
}

func lastSeq(es []recall.Entry) int64 {
	if len(es) == 0 {
		return 0
	}
	return es[len(es)-1].Seq
}

// flush waits for the mirror to drain, failing the test after d.
func flush(t tb, m interface{ Flush(context.Context) error }, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := m.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

func item(text string) recall.Item {
	return recall.Item(fmt.Sprintf(`{"type":"message","role":"user","content":%q}`, text))
}

// goDown takes replica down, appends one item to key through m so that
// replication fails, and waits until m reports the outage.
func goDown(t tb, m *mirror.Store, replica *faulty, key recall.Key) {
	t.Helper()
	ctx := context.Background()
	replica.setDown(true)
	if _, err := m.Append(ctx, key, recall.Guard{}, item("during the outage").Entry()); err != nil {
		t.Fatalf("append during the outage: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "the outage to be seen", func() bool { return m.Summary(ctx).ReplicaDown })
}
