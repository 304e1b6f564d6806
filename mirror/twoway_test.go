package mirror_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/storekit"
)

// itemTexts returns the text of every item entry of key's log, in order:
// what a person said, whatever was popped or compacted since.
func itemTexts(t *testing.T, s recall.Store, key recall.Key) []string {
	t.Helper()
	_, es, err := s.Load(context.Background(), key)
	if err != nil {
		t.Fatalf("load %s: %v", key, err)
	}
	var out []string
	for _, e := range es {
		if it, ok := e.Item(); ok {
			out = append(out, it.Text())
		}
	}
	return out
}

func addItems(t *testing.T, s recall.Store, key recall.Key, texts ...string) {
	t.Helper()
	for _, x := range texts {
		if _, err := s.Append(context.Background(), key, recall.Guard{}, item(x).Entry()); err != nil {
			t.Fatal(err)
		}
	}
}

func twoWay(t *testing.T, local, remote recall.Store, opts mirror.TwoWayOptions) mirror.TwoWayReport {
	t.Helper()
	if opts.Projects == nil {
		opts.Projects = []mirror.ProjectPair{{Local: "p", Remote: "p"}}
	}
	if opts.Host == "" {
		opts.Host = "laptop"
	}
	rep, err := mirror.TwoWay(context.Background(), local, remote, opts)
	if err != nil {
		t.Fatalf("two-way sync: %v (report %+v)", err, rep)
	}
	return rep
}

func TestTwoWayPushesPullsAndThenHasNothingToDo(t *testing.T) {
	local, remote := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	a, b := recall.Key{Project: "p", Session: "a"}, recall.Key{Project: "p", Session: "b"}
	c := recall.Key{Project: "p", Session: "c"}
	addItems(t, local, a, "a1", "a2")
	addItems(t, remote, b, "b1")
	addItems(t, local, c, "c1")
	addItems(t, remote, c, "c1-remote") // not the same log: diverged at 0
	addItems(t, local, recall.Key{Project: "other", Session: "x"}, "not synced")
	addItems(t, local, recall.Key{Project: "_server.tokens", Session: "t"}, "secret")
	dir := t.TempDir()

	dry := twoWay(t, local, remote, mirror.TwoWayOptions{DryRun: true, StateDir: dir})
	if dry.Pushed != 2 || dry.Pulled != 2 || len(dry.Forks) != 1 {
		t.Fatalf("dry run = %+v, want a pushed, b pulled, c forked", dry)
	}
	if _, err := remote.Stat(context.Background(), a); !errors.Is(err, recall.ErrNotFound) {
		t.Fatalf("a dry run wrote to the remote: %v", err)
	}
	rep := twoWay(t, local, remote, mirror.TwoWayOptions{StateDir: dir})
	if rep.Pushed != 2 || rep.Pulled != 2 || len(rep.Forks) != 1 || rep.EntriesPushed != 2+1+2 {
		t.Fatalf("report = %+v", rep)
	}
	for _, k := range []recall.Key{{Project: "other", Session: "x"}, {Project: "_server.tokens", Session: "t"}} {
		if _, err := remote.Stat(context.Background(), k); !errors.Is(err, recall.ErrNotFound) {
			t.Errorf("%s, not a synced project, is on the remote: %v", k, err)
		}
		if err := local.Remove(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	if err := diffLogs(t, local, remote, true); err != nil {
		t.Fatalf("after sync: %v", err)
	}
	if got := itemTexts(t, local, c); !slices.Equal(got, []string{"c1-remote"}) {
		t.Errorf("c locally = %v, want the remote's", got)
	}
	fk := rep.Forks[0].Fork
	if got := itemTexts(t, remote, fk); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("the fork on the remote = %v, want the local continuation", got)
	}
	again := twoWay(t, local, remote, mirror.TwoWayOptions{StateDir: dir})
	if again.UpToDate != again.Sessions || again.Sessions != 4 {
		t.Fatalf("second run = %+v, want 4 sessions up to date", again)
	}
}

func TestTwoWayDivergenceBecomesAFork(t *testing.T) {
	ctx := context.Background()
	local, remote := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	k := recall.Key{Project: "p", Session: "s"}
	addItems(t, local, k, "one", "two")
	if _, err := recall.NewSession(local, k).SetTitle(ctx, "Plans", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	twoWay(t, local, remote, mirror.TwoWayOptions{})
	// Both machines continue: the remote first (it reached the server
	// first), then this one, with a pop whose ref names a local seq.
	addItems(t, remote, k, "remote three")
	addItems(t, local, k, "local three", "local four")
	if _, err := local.Pop(ctx, k); err != nil {
		t.Fatal(err)
	}
	addItems(t, local, k, "local five")
	rep := twoWay(t, local, remote, mirror.TwoWayOptions{})
	if len(rep.Forks) != 1 {
		t.Fatalf("forks = %+v, want one", rep.Forks)
	}
	f := rep.Forks[0]
	if f.At != 3 {
		t.Errorf("common seq = %d, want 3 (two items and the title)", f.At)
	}
	for _, st := range []recall.Store{local, remote} {
		m, err := st.Stat(ctx, f.Fork)
		if err != nil {
			t.Fatal(err)
		}
		if m.ForkedFrom == nil || *m.ForkedFrom != (recall.ForkOrigin{Key: k, Seq: 3}) {
			t.Errorf("fork's origin = %v", m.ForkedFrom)
		}
		if m.Title != "Plans (from laptop)" {
			t.Errorf("fork's title = %q", m.Title)
		}
		items, _, err := st.Items(ctx, f.Fork, 0)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, it := range items {
			texts = append(texts, it.Item.Text())
		}
		if want := []string{"one", "two", "local three", "local five"}; !slices.Equal(texts, want) {
			t.Errorf("fork's view = %v, want %v", texts, want)
		}
		if got := itemTexts(t, st, k); !slices.Equal(got, []string{"one", "two", "remote three"}) {
			t.Errorf("session = %v, want the remote's continuation", got)
		}
	}
	if err := diffLogs(t, local, remote, true); err != nil {
		t.Fatal(err)
	}
	if err := storekit.Verify(ctx, local); err != nil {
		t.Fatal(err)
	}
}

// killable fails every call after n calls that write (Import, Remove),
// like a sync process killed between two steps.
type killable struct {
	recall.Store
	n *atomic.Int64
}

var errKilled = errors.New("killed")

func (k killable) Import(ctx context.Context, key recall.Key, es ...recall.Entry) (int64, error) {
	if k.n.Add(-1) < 0 {
		return 0, errKilled
	}
	return k.Store.Import(ctx, key, es...)
}

func (k killable) Remove(ctx context.Context, key recall.Key) error {
	if k.n.Add(-1) < 0 {
		return errKilled
	}
	return k.Store.Remove(ctx, key)
}

// TestTwoWayInterruptedAtEveryStep stops a sync with a divergence, pushes
// and pulls after each write it makes, on either store, and runs it again:
// the result is always that of an uninterrupted sync, with one fork.
func TestTwoWayInterruptedAtEveryStep(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (local, remote recall.Store) {
		local, err := filestore.Open(filestore.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { local.Close() })
		remote = memstore.New(memstore.Options{})
		k := recall.Key{Project: "p", Session: "s"}
		addItems(t, local, k, "one")
		twoWay(t, local, remote, mirror.TwoWayOptions{BatchSize: 2})
		addItems(t, remote, k, "remote two", "remote three")
		addItems(t, local, k, "local two", "local three", "local four")
		addItems(t, local, recall.Key{Project: "p", Session: "pushme"}, "1", "2", "3")
		addItems(t, remote, recall.Key{Project: "p", Session: "pullme"}, "1", "2", "3")
		sub := recall.Key{Project: "p", Session: "s", Subpath: "subagents/a"}
		addItems(t, local, sub, "sub one")
		return local, remote
	}
	for writes := int64(0); ; writes++ {
		local, remote := setup(t)
		var nl, nr atomic.Int64
		nl.Store(writes)
		nr.Store(writes)
		_, err := mirror.TwoWay(ctx, killable{local, &nl}, killable{remote, &nr}, mirror.TwoWayOptions{
			Projects: []mirror.ProjectPair{{Local: "p", Remote: "p"}}, Host: "laptop", BatchSize: 2,
		})
		if err == nil {
			if writes < 3 {
				t.Fatalf("a sync allowed %d writes per store finished: the test kills nothing", writes)
			}
			break
		}
		rep := twoWay(t, local, remote, mirror.TwoWayOptions{BatchSize: 2})
		if err := diffLogs(t, local, remote, true); err != nil {
			t.Fatalf("after %d writes and a second run: %v", writes, err)
		}
		var forks []string
		for _, k := range allKeys(t, local) {
			if m, err := local.Stat(context.Background(), k); err == nil && m.ForkedFrom != nil {
				forks = append(forks, k.Session)
				if got := itemTexts(t, local, k); !slices.Equal(got, []string{"one", "local two", "local three", "local four"}) {
					t.Errorf("after %d writes: fork %s = %v", writes, k, got)
				}
			}
		}
		if len(forks) != 1 {
			t.Fatalf("after %d writes: forks %v, want one (second run %+v)", writes, forks, rep)
		}
		if got := itemTexts(t, local, recall.Key{Project: "p", Session: "s"}); !slices.Equal(got, []string{"one", "remote two", "remote three"}) {
			t.Fatalf("after %d writes: session = %v", writes, got)
		}
	}
}

func TestTwoWayMapsProjects(t *testing.T) {
	local, remote := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	addItems(t, local, recall.Key{Project: "-home-ann-app", Session: "s"}, "from linux")
	addItems(t, remote, recall.Key{Project: "-Users-ann-app", Session: "t"}, "from mac")
	twoWay(t, local, remote, mirror.TwoWayOptions{Projects: []mirror.ProjectPair{{Local: "-home-ann-app", Remote: "-Users-ann-app"}}})
	if got := itemTexts(t, remote, recall.Key{Project: "-Users-ann-app", Session: "s"}); !slices.Equal(got, []string{"from linux"}) {
		t.Errorf("pushed = %v", got)
	}
	if got := itemTexts(t, local, recall.Key{Project: "-home-ann-app", Session: "t"}); !slices.Equal(got, []string{"from mac"}) {
		t.Errorf("pulled = %v", got)
	}
	_, err := mirror.TwoWay(context.Background(), local, remote, mirror.TwoWayOptions{Projects: []mirror.ProjectPair{{Local: "p", Remote: "_server.tokens"}}})
	if !errors.Is(err, recall.ErrInvalidKey) {
		t.Errorf("a reserved project: %v, want ErrInvalidKey", err)
	}
}

// TestTwoWayForkOriginsAcrossProjects syncs a project whose key differs
// on the two sides: a fork names its origin by key, so each side's fork
// (the one sync makes of a divergence, and one made by hand) names the
// session as that side keys it, and a second sync finds nothing to do.
func TestTwoWayForkOriginsAcrossProjects(t *testing.T) {
	ctx := context.Background()
	local, remote := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	pairs := []mirror.ProjectPair{{Local: "-home-ann-app", Remote: "-Users-ann-app"}}
	lk, rk := recall.Key{Project: "-home-ann-app", Session: "s"}, recall.Key{Project: "-Users-ann-app", Session: "s"}
	addItems(t, local, lk, "one", "two")
	byHand := recall.Key{Project: lk.Project, Session: "by-hand"}
	if _, err := recall.NewSession(local, lk).Fork(ctx, 1, byHand); err != nil {
		t.Fatal(err)
	}
	twoWay(t, local, remote, mirror.TwoWayOptions{Projects: pairs})
	addItems(t, remote, rk, "remote three")
	addItems(t, local, lk, "local three")
	rep := twoWay(t, local, remote, mirror.TwoWayOptions{Projects: pairs})
	if len(rep.Forks) != 1 {
		t.Fatalf("forks = %+v, want one", rep.Forks)
	}
	for _, side := range []struct {
		st  recall.Store
		key recall.Key
	}{{local, lk}, {remote, rk}} {
		for fork, at := range map[string]int64{rep.Forks[0].Fork.Session: 2, byHand.Session: 1} {
			m, err := side.st.Stat(ctx, recall.Key{Project: side.key.Project, Session: fork})
			if err != nil {
				t.Fatal(err)
			}
			if want := (recall.ForkOrigin{Key: side.key, Seq: at}); m.ForkedFrom == nil || *m.ForkedFrom != want {
				t.Errorf("%s: forked from %v, want %v", m.Key, m.ForkedFrom, want)
			}
		}
	}
	if again := twoWay(t, local, remote, mirror.TwoWayOptions{Projects: pairs}); again.UpToDate != again.Sessions || len(again.Forks) != 0 {
		t.Errorf("second run = %+v, want every session up to date", again)
	}
}

func TestMirrorNeverCopiesReservedProjects(t *testing.T) {
	ctx := context.Background()
	primary, replica := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	addItems(t, primary, recall.Key{Project: "_server.tokens", Session: "admin"}, "secret")
	addItems(t, primary, recall.Key{Project: "p", Session: "s"}, "hello")
	m, err := mirror.New(primary, replica, fastOptions(""))
	if err != nil {
		t.Fatal(err)
	}
	addItems(t, m, recall.Key{Project: "_server.idempotency", Session: "x"}, "secret too")
	flush(t, m, 10*time.Second)
	defer m.Close()
	want := []recall.Key{{Project: "p", Session: "s"}}
	if got := allKeys(t, replica); !slices.Equal(got, want) {
		t.Errorf("the mirror's catch-up copied %v, want %v", got, want)
	}
	other := memstore.New(memstore.Options{})
	if _, err := mirror.Sync(ctx, primary, other, mirror.SyncOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if got := allKeys(t, other); !slices.Equal(got, want) {
		t.Errorf("sync --all copied %v, want %v", got, want)
	}
	if _, err := mirror.Sync(ctx, primary, other, mirror.SyncOptions{Project: "_server.tokens"}); !errors.Is(err, recall.ErrInvalidKey) {
		t.Errorf("sync of a reserved project: %v, want ErrInvalidKey", err)
	}
}
