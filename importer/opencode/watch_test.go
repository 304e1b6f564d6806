package opencode

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/watch"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
)

// Find returns the databases of a folder and the write-ahead log of the
// one that has it, and ImportFile takes either for its database.
func TestFind(t *testing.T) {
	dir, db := fixture(t)
	got, err := Find(dir)
	if err != nil || !slices.Equal(got, []string{db}) {
		t.Fatalf("Find without a log = %v, %v", got, err)
	}
	w := writer(t, db)
	if _, err := w.Exec(`UPDATE session SET title = 'Fix the login form, again' WHERE id = 'ses_01main'`); err != nil {
		t.Fatal(err)
	}
	got, err = Find(dir)
	if err != nil || !slices.Equal(got, []string{db, db + walSuffix}) {
		t.Fatalf("Find with a log = %v, %v", got, err)
	}
	st := memstore.New(memstore.Options{})
	var follow Follower
	sum, err := follow.ImportFile(context.Background(), st, db+walSuffix, importer.Options{})
	if err != nil || sum.Sessions.New == 0 {
		t.Fatalf("ImportFile of the log: %+v, %v", sum, err)
	}
	if m, err := st.Stat(context.Background(), mainKey); err != nil || m.Title != "Fix the login form, again" {
		t.Errorf("the write in the log was not read: %+v, %v", m, err)
	}
	if got, err := Find(filepath.Join(dir, "storage")); err != nil || len(got) != 0 {
		t.Errorf("Find of a folder without a database = %v, %v", got, err)
	}
}

// recall import --watch opencode follows the database while opencode
// holds it open: a message it completes, written to the write-ahead log
// alone, is imported.
func TestWatch(t *testing.T) {
	dir, db := fixture(t)
	w := writer(t, db) // opencode, running: its writes stay in the log
	if _, err := w.Exec(`UPDATE session SET title = title WHERE id = 'ses_04live'`); err != nil {
		t.Fatal(err)
	}
	st := memstore.New(memstore.Options{})
	var follow Follower
	ctx, cancel := context.WithCancel(context.Background())
	watching := make(chan struct{})
	done := make(chan error, 1)
	src := watch.Source{Tool: Tool, Roots: []string{dir}, Find: Find,
		Import: func(ctx context.Context, st recall.Store, path string) (importer.Summary, error) {
			return follow.ImportFile(ctx, st, path, importer.Options{})
		}}
	go func() {
		done <- watch.Run(ctx, st, []watch.Source{src}, watch.Options{Report: func(r watch.Report) {
			if r.Watching != nil {
				close(watching)
			}
		}})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	<-watching
	live := recall.Key{Project: "-home-dev-api", Session: "ses_04live"}
	if m, err := st.Stat(ctx, live); err != nil || m.ItemCount != 1 {
		t.Fatalf("at the start: %+v, %v", m, err)
	}
	if _, err := w.Exec(`
UPDATE message SET data = json_set(data, '$.time.completed', 1785668462000, '$.finish', 'stop') WHERE id = 'msg_04b';
UPDATE part SET data = json_set(data, '$.text', 'main.go starts the server.') WHERE id = 'prt_04b1';`); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the completed answer imported", func() bool {
		m, err := st.Stat(ctx, live)
		return err == nil && m.ItemCount == 2
	})
}

// writer opens path as opencode does, in WAL mode, and keeps it open
// until the test ends, so what it writes stays in the write-ahead log.
func writer(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkFollow is what a watcher pays for a write of opencode to a
// database of 200 sessions of 40 messages: a Follower's import, which
// reads the one session that changed, against Import of the database,
// which reads every session.
func BenchmarkFollow(b *testing.B) {
	_, db := fixture(b)
	w, err := sql.Open("sqlite", db)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	const sessions, messages = 200, 40
	tx, err := w.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for s := range sessions {
		id := fmt.Sprintf("ses_b%03d", s)
		if _, err := tx.Exec(`INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES (?, 'prj_web', 's', '/home/dev/web', 't', '1.18.34', 1785661200000, 1785661200000)`, id); err != nil {
			b.Fatal(err)
		}
		for m := range messages {
			mid := fmt.Sprintf("%s_m%03d", id, m)
			role, extra := "user", ``
			if m%2 == 1 {
				role, extra = "assistant", `,"parentID":"x","modelID":"m","providerID":"p","mode":"build","agent":"build","path":{"cwd":"/home/dev/web","root":"/home/dev/web"},"cost":0,"tokens":{"input":1,"output":1,"reasoning":0,"cache":{"read":0,"write":0}},"finish":"stop"`
			}
			data := fmt.Sprintf(`{"role":%q,"time":{"created":%d,"completed":%d}%s}`, role, 1785661200000+m, 1785661200001+m, extra)
			if _, err := tx.Exec(`INSERT INTO message VALUES (?, ?, ?, ?, ?)`, mid, id, 1785661200000+m, 1785661200000+m, data); err != nil {
				b.Fatal(err)
			}
			if _, err := tx.Exec(`INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)`, mid+"_p", mid, id, 1785661200000+m, 1785661200000+m, `{"type":"text","text":"some words of a message, about as long as one is"}`); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		imp  func(*Follower) (importer.Summary, error)
	}{
		{"import", func(*Follower) (importer.Summary, error) {
			return Import(ctx, memstoreOnce, []string{db}, importer.Options{})
		}},
		{"follower", func(f *Follower) (importer.Summary, error) {
			return f.ImportFile(ctx, memstoreOnce, db, importer.Options{})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var f Follower
			if _, err := bc.imp(&f); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				b.StopTimer() // opencode's write: one more turn in one session
				turns++
				n := turns
				at := 1785669200000 + 2*n
				q, a := fmt.Sprintf("msg_%s_%dq", bc.name, n), fmt.Sprintf("msg_%s_%da", bc.name, n)
				for _, s := range []struct {
					q    string
					args []any
				}{
					{`INSERT INTO message VALUES (?, 'ses_b007', ?, ?, json_object('role', 'user', 'time', json_object('created', ?)))`, []any{q, at, at, at}},
					{`INSERT INTO part VALUES (?, ?, 'ses_b007', ?, ?, '{"type":"text","text":"and now?"}')`, []any{q + "p", q, at, at}},
					{`INSERT INTO message VALUES (?, 'ses_b007', ?, ?, json_object('role', 'assistant', 'time', json_object('created', ?, 'completed', ?), 'finish', 'stop'))`, []any{a, at + 1, at + 1, at + 1, at + 1}},
					{`INSERT INTO part VALUES (?, ?, 'ses_b007', ?, ?, '{"type":"text","text":"done"}')`, []any{a + "p", a, at + 1, at + 1}},
				} {
					if _, err := w.Exec(s.q, s.args...); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				sum, err := bc.imp(&f)
				if err != nil || sum.Sessions.Updated != 1 {
					b.Fatalf("%+v, %v", sum, err)
				}
			}
		})
	}
}

// memstoreOnce is the store of BenchmarkFollow, and turns numbers the
// turns it writes.
var (
	memstoreOnce = memstore.New(memstore.Options{})
	turns        int
)
