package filestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// A failed guard writes nothing: no log, no directory (not even the
// project's), no index record, no change to an existing log. The index
// is flushed (Close) before each look at the disk, so a record it held
// back would show.
func TestGuardWritesNothing(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	item := recall.Message("user", "hi").Entry()
	cases := []struct {
		name  string
		key   recall.Key
		guard recall.Guard
		want  error
	}{
		{"IfExists, new project", recall.Key{Project: "none", Session: "s"}, recall.IfExists(), recall.ErrNotFound},
		{"IfExists, project exists", recall.Key{Project: "p", Session: "missing"}, recall.IfExists(), recall.ErrNotFound},
		{"IfExists, subagent record", recall.Key{Project: "p", Session: "s", Subpath: "subagents/a"}, recall.IfExists(), recall.ErrNotFound},
		{"IfLastSeq>0 of a missing session", recall.Key{Project: "p", Session: "missing"}, recall.IfLastSeq(3), recall.ErrNotFound},
		{"IfNew of an existing session", recall.Key{Project: "p", Session: "s"}, recall.IfNew(), recall.ErrConflict},
		{"IfLastSeq behind", recall.Key{Project: "p", Session: "s"}, recall.IfLastSeq(1), recall.ErrConflict},
		{"IfLastSeq ahead", recall.Key{Project: "p", Session: "s"}, recall.IfLastSeq(3), recall.ErrConflict},
		{"IfLastSeq 0 of an existing session", recall.Key{Project: "p", Session: "s"}, recall.IfLastSeq(0), recall.ErrConflict},
	}
	setup := openStore(t, home)
	existing := recall.Key{Project: "p", Session: "s"}
	if _, err := setup.Append(ctx, existing, recall.Guard{}, item, item); err != nil {
		t.Fatal(err)
	}
	setup.Close()
	for _, c := range cases {
		for _, batch := range [][]recall.Entry{{item}, nil} {
			t.Run(fmt.Sprintf("%s/%d entries", c.name, len(batch)), func(t *testing.T) {
				before := snapshot(t, home)
				s := openStore(t, home)
				_, err := s.Append(ctx, c.key, c.guard, batch...)
				if !errors.Is(err, c.want) {
					t.Errorf("Append = %v, want %v", err, c.want)
				}
				s.Close()
				if after := snapshot(t, home); !equalSnapshots(before, after) {
					t.Errorf("the refused append changed the disk:\nbefore %v\nafter  %v", before, after)
				}
			})
		}
	}

	// The guards that hold: an empty batch returns the LastSeq it checked.
	s := openStore(t, home)
	for _, g := range []recall.Guard{{}, recall.IfExists(), recall.IfLastSeq(2)} {
		if seq, err := s.Append(ctx, existing, g); err != nil || seq != 2 {
			t.Errorf("Append(%+v) of nothing = %d, %v; want 2", g, seq, err)
		}
	}
	for _, g := range []recall.Guard{{}, recall.IfNew(), recall.IfLastSeq(0)} {
		if seq, err := s.Append(ctx, recall.Key{Project: "q", Session: "missing"}, g); err != nil || seq != 0 {
			t.Errorf("Append(%+v) of nothing to a missing session = %d, %v; want 0", g, seq, err)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "projects", "q")); !os.IsNotExist(err) {
		t.Errorf("an empty batch made the project directory: %v", err)
	}
	// and with entries
	if seq, err := s.Append(ctx, existing, recall.IfLastSeq(2), item); err != nil || seq != 3 {
		t.Errorf("Append(IfLastSeq(2)) = %d, %v; want 3", seq, err)
	}
	if seq, err := s.Append(ctx, existing, recall.IfExists(), item); err != nil || seq != 4 {
		t.Errorf("Append(IfExists) = %d, %v; want 4", seq, err)
	}
	fresh := recall.Key{Project: "new", Session: "s"}
	if seq, err := s.Append(ctx, fresh, recall.IfNew(), item); err != nil || seq != 1 {
		t.Errorf("Append(IfNew) = %d, %v; want 1", seq, err)
	}
	if seq, err := s.Append(ctx, recall.Key{Project: "new", Session: "s2"}, recall.IfLastSeq(0), item); err != nil || seq != 1 {
		t.Errorf("Append(IfLastSeq(0)) to a new session = %d, %v; want 1", seq, err)
	}
	if err := storekit.Verify(ctx, s); err != nil {
		t.Error(err)
	}
}

// An empty log file (0 bytes, or only a torn line) holds no session: IfNew
// passes and IfExists does not, as Stat says ErrNotFound.
func TestGuardOnEmptyLog(t *testing.T) {
	ctx := context.Background()
	key := recall.Key{Project: "p", Session: "empty"}
	for _, data := range []string{"", `{"seq":1,"kind":"item","ti`} {
		s, path := placeLog(t, key, []byte(data))
		if _, err := s.Stat(ctx, key); !errors.Is(err, recall.ErrNotFound) {
			t.Fatalf("%q: Stat = %v, want ErrNotFound", data, err)
		}
		if _, err := s.Append(ctx, key, recall.IfExists(), recall.Entry{Kind: recall.KindClear}); !errors.Is(err, recall.ErrNotFound) {
			t.Errorf("%q: Append(IfExists) = %v, want ErrNotFound", data, err)
		}
		if seq, err := s.Append(ctx, key, recall.IfNew(), recall.Entry{Kind: recall.KindCreate}); err != nil || seq != 1 {
			t.Errorf("%q: Append(IfNew) = %d, %v; want seq 1", data, seq, err)
		}
		if got, _ := os.ReadFile(path); !bytes.HasPrefix(got, []byte(`{"seq":1,"kind":"create"`)) {
			t.Errorf("%q: the log is %q", data, got)
		}
	}
}

// Goroutines of one process and two stores (as two processes would have)
// race to create one session with IfNew: exactly one wins, the others get
// ErrConflict, and the log holds the winner's batch alone.
func TestGuardIfNewRace(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	a, b := openStore(t, home), openStore(t, home)
	stores := []recall.Store{a, b}
	for round := range 20 {
		key := recall.Key{Project: "p", Session: fmt.Sprintf("race-%d", round)}
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = stores[i%2].Append(ctx, key, recall.IfNew(),
					recall.Entry{Kind: recall.KindCreate},
					recall.Message("user", fmt.Sprintf("w%d", i)).Entry())
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, recall.ErrConflict):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		m, es, err := a.Load(ctx, key)
		if won != 1 || err != nil || m.LastSeq != 2 || len(es) != 2 {
			t.Fatalf("round %d: %d won; the log has %d entries (last %d), %v", round, won, len(es), m.LastSeq, err)
		}
	}
}
