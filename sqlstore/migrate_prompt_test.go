package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// TestMigrateFirstPrompt opens a database at schema version 3, written
// before first_prompt existed, with this package: migration 4 fills each
// session's first prompt from its log (the first user message, even after
// other entries; none for a log without one), so List shows it at once
// and it equals what recall.Replay derives.
func TestMigrateFirstPrompt(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			q, ts, open := versionDatabase(t, dialect, 3)
			at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			logs := map[string][]string{
				"asked":  {string(recall.Message("system", "be brief")), string(recall.Message("user", "fix\nthe build")), string(recall.Message("user", "later"))},
				"silent": {string(recall.Message("assistant", "hello"))},
			}
			want := map[string]string{"asked": "fix the build", "silent": ""}
			for id, items := range logs {
				var sid int64
				err := q.queryRow(ctx, `INSERT INTO sessions (project, id, subpath, created_at, updated_at, item_count, last_seq)
					VALUES ('old', $1, '', $2, $2, $3, $3) RETURNING sid`, id, ts(at), len(items)).Scan(&sid)
				if err != nil {
					t.Fatal(err)
				}
				for i, it := range items {
					if _, err := q.exec(ctx, `INSERT INTO entries (session, seq, kind, payload, time) VALUES ($1, $2, 'item', $3, $4)`,
						sid, i+1, []byte(it), ts(at)); err != nil {
						t.Fatal(err)
					}
				}
			}
			s := open()
			page, err := s.List(ctx, "old", recall.ListOptions{})
			if err != nil || len(page.Sessions) != 2 {
				t.Fatalf("List = %+v, %v", page, err)
			}
			for _, m := range page.Sessions {
				if m.FirstPrompt != want[m.Key.Session] {
					t.Errorf("%s: FirstPrompt %q, want %q", m.Key.Session, m.FirstPrompt, want[m.Key.Session])
				}
				_, log, err := s.Load(ctx, m.Key)
				if err != nil {
					t.Fatal(err)
				}
				if r, _ := recall.Replay(m.Key, log); r.FirstPrompt != m.FirstPrompt {
					t.Errorf("%s: List says %q, Replay %q", m.Key.Session, m.FirstPrompt, r.FirstPrompt)
				}
			}
		})
	}
}
