package server

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/retention"
	"github.com/recallkit/recall/server/audit"
	"github.com/recallkit/recall/sqlstore"
)

// TestRetentionReplicas: a policy of 1 day over PostgreSQL, served by two
// replicas that run their schedule at the same moments of a fake clock:
// exactly the expired, unpinned sessions go to the trash, once, by one
// replica a run; they are deleted for good once past the trash's grace
// period; every run is in the audit log, once.
func TestRetentionReplicas(t *testing.T) {
	t.Parallel()
	dsn, schema := testsvc.PostgresSchema(t)
	ctx := context.Background()
	st, err := sqlstore.OpenPostgres(ctx, dsn, sqlstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	n := 10000
	if testing.Short() {
		n = 1000
	}
	now := time.Now().UTC()
	expired := map[recall.Key]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				key := recall.Key{Project: User{Name: "u" + strconv.Itoa(i%7)}.Project(), Session: fmt.Sprintf("s%05d", i)}
				ago := time.Hour
				if i%2 == 0 {
					ago = 3 * 24 * time.Hour
				}
				e := recall.ItemEntries(recall.Message("user", "hello "+key.Session))
				e[0].Seq, e[0].Time = 1, now.Add(-ago)
				if _, err := st.Import(ctx, key, e...); err != nil {
					t.Error(err)
					return
				}
				// Every tenth is pinned; the recent ones are labelled
				// "keep", which the policy keeps forever, so that they stay
				// when the fake clock jumps past the grace period.
				pinned := i%10 == 0
				change := recall.MetaChange{}
				if pinned {
					change.Pinned = new(true)
				}
				if i%2 == 1 {
					change.Labels, change.SetLabels = []string{"keep"}, true
				}
				if pinned || i%2 == 1 {
					if _, err := recall.NewSession(st, key).ChangeMeta(ctx, change); err != nil {
						t.Error(err)
						return
					}
				}
				if i%2 == 0 && !pinned {
					mu.Lock()
					expired[key] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if err := retention.Save(ctx, st, retention.Policy{Default: retention.Keep(24 * time.Hour), Labels: map[string]retention.Keep{"keep": retention.Never}}); err != nil {
		t.Fatal(err)
	}
	opts := Options{RateLimit: -1, RetentionEvery: time.Hour, TrashGrace: 30 * 24 * time.Hour}
	a, b := newEnv(t, st, opts, nil).srv, newEnv(t, st, opts, nil).srv

	// Each run, both replicas at once: one runs, the other finds the lease held.
	runs := 0
	for _, at := range []time.Time{now, now.Add(time.Hour), now.Add(31 * 24 * time.Hour)} {
		var ran [2]bool
		var wg sync.WaitGroup
		for i, s := range []*Server{a, b} {
			wg.Go(func() {
				ok, err := s.runRetention(ctx, at)
				if err != nil {
					t.Error(err)
				}
				ran[i] = ok
			})
		}
		wg.Wait()
		if ran[0] == ran[1] {
			t.Fatalf("run at %s: replicas ran %v, want exactly one", at, ran)
		}
		runs++
		if at == now {
			trashed := trashedKeys(t, st)
			if len(trashed) != len(expired) {
				t.Fatalf("after the first run %d sessions are in the trash, want the %d expired and unpinned", len(trashed), len(expired))
			}
			for k := range trashed {
				if !expired[k] {
					t.Fatalf("%s went to the trash, but it is not expired, or pinned", k)
				}
			}
		}
	}
	for k := range expired {
		if _, err := st.Stat(ctx, k); err == nil {
			t.Fatalf("%s is still in the store past the grace period", k)
		}
	}
	left, err := recall.Projects(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, p := range left {
		if p.Project[0] != '_' {
			total += p.Sessions
		}
	}
	if total != n-len(expired) {
		t.Errorf("%d sessions are left, want %d", total, n-len(expired))
	}

	page, err := audit.Read(ctx, st, audit.Query{Action: audit.ActionPolicyRun, Limit: 10})
	if err != nil || len(page.Events) != runs {
		t.Fatalf("the audit log holds %d runs, %v; want %d", len(page.Events), err, runs)
	}
	last, first := page.Events[0], page.Events[len(page.Events)-1]
	if first.Detail["trashed"] != strconv.Itoa(len(expired)) || first.Detail["held_pinned"] != strconv.Itoa(n/10) ||
		last.Detail["purged"] != strconv.Itoa(len(expired)) || last.Detail["trashed"] != "0" {
		t.Errorf("the runs' counts: first %v, last %v", first.Detail, last.Detail)
	}
}

// trashedKeys lists the sessions in the trash of every user.
func trashedKeys(t *testing.T, st recall.Store) map[recall.Key]bool {
	t.Helper()
	out := map[recall.Key]bool{}
	for cursor := ""; ; {
		p, err := st.List(context.Background(), "", recall.ListOptions{Trashed: true, Limit: 500, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range p.Sessions {
			out[m.Key] = true
		}
		if cursor = p.Next; cursor == "" {
			return out
		}
	}
}

// TestPolicyAPI: an admin reads and sets the policy, seeing how many
// sessions it moves to the trash before it takes effect (dry_run); a user
// may not; a change is in the audit log.
func TestPolicyAPI(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	e := newEnv(t, st, Options{RateLimit: -1, RetentionEvery: -1}, nil)
	ctx := context.Background()
	for i, ago := range []time.Duration{time.Hour, 48 * time.Hour, 72 * time.Hour} {
		key := recall.Key{Project: User{Name: "alice"}.Project(), Session: "s" + strconv.Itoa(i)}
		en := recall.ItemEntries(recall.Message("user", "x"))
		en[0].Seq, en[0].Time = 1, time.Now().Add(-ago)
		if _, err := st.Import(ctx, key, en...); err != nil {
			t.Fatal(err)
		}
	}
	var got policyAnswer
	do := func(method, path, user string, body any) {
		got = policyAnswer{}
		e.do(method, path, user, body).want(t, 200).decode(t, &got)
	}
	do("GET", "/api/v1/policy", "root", nil)
	if !got.Policy.IsZero() {
		t.Errorf("a new store's policy: %+v", got)
	}
	e.do("GET", "/api/v1/policy", "alice", nil).wantError(t, 403)
	e.do("PUT", "/api/v1/policy", "alice", map[string]any{"default": "1d"}).wantError(t, 403)
	do("PUT", "/api/v1/policy?dry_run=true", "root", map[string]any{"default": "1d", "users": map[string]string{"bob": "never"}})
	if got.Saved || got.WouldTrash == nil || *got.WouldTrash != 2 {
		t.Errorf("dry run: %+v", got)
	}
	if p, _ := retention.Load(ctx, st); !p.IsZero() {
		t.Errorf("a dry run saved the policy: %s", p)
	}
	do("PUT", "/api/v1/policy", "root", map[string]any{"default": "60h", "users": map[string]string{"alice": "never"}})
	if !got.Saved || *got.WouldTrash != 0 {
		t.Errorf("saving a policy alice's sessions are kept by: %+v", got)
	}
	do("GET", "/api/v1/policy", "root", nil)
	if got.Policy.String() != "default 60h; user alice never" {
		t.Errorf("the policy read back: %s", got.Policy)
	}
	e.do("PUT", "/api/v1/policy", "root", map[string]any{"default": "soon"}).wantError(t, 400)
	e.do("PUT", "/api/v1/policy", "root", map[string]any{"projects": map[string]string{"": "1d"}}).wantError(t, 400)
	page, err := audit.Read(ctx, st, audit.Query{Action: audit.ActionPolicy})
	if err != nil || len(page.Events) != 1 || page.Events[0].Actor != "root" || page.Events[0].Detail["policy"] != "default 60h; user alice never" {
		t.Errorf("the audit log's policy changes: %+v, %v", page.Events, err)
	}
}
