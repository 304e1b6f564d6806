package filestore

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// An index written before Meta.FirstPrompt existed (#index-v2) describes
// its logs exactly but has no first prompts. It is not believed: the
// first open derives every log afresh, List shows each session's first
// prompt without the log changing, and the v2 journal goes.
func TestIndexV2Recomputed(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	dir := filepath.Join(home, projectsDir, "p")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	prompts := map[string]string{"a": "fix the build", "b": "write the release notes"}
	var journal []byte
	for name, prompt := range prompts {
		// Each log is larger than the journal, so Stat too would start
		// from the journal rather than the log (see cachedRecord).
		log := []recall.Entry{
			{Seq: 1, Kind: recall.KindItem, Time: t0, Data: json.RawMessage(recall.Message("user", prompt))},
			{Seq: 2, Kind: recall.KindItem, Time: t0.Add(time.Second), Data: json.RawMessage(recall.Message("assistant", strings.Repeat("an answer ", 200)))},
		}
		key, st, check := plantLog(t, dir, name, log)
		old, _ := recall.Replay(key, log)
		old.FirstPrompt = "" // v2 had no such field
		journal = appendRecord(journal, newRecord(key, name, logEnd{st: st, off: st.Size, check: check}, old, controlLines{}))
	}
	v2 := filepath.Join(dir, "#index-v2")
	if err := os.WriteFile(v2, journal, 0o600); err != nil {
		t.Fatal(err)
	}

	s, err := Open(Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.List(ctx, "p", recall.ListOptions{})
	if err != nil || len(page.Sessions) != 2 {
		t.Fatalf("List = %+v, %v; want 2 sessions", page, err)
	}
	for _, m := range page.Sessions {
		if want := prompts[m.Key.Session]; m.FirstPrompt != want {
			t.Errorf("List: %s FirstPrompt = %q, want %q", m.Key.Session, m.FirstPrompt, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(v2); !os.IsNotExist(err) {
		t.Errorf("the v2 journal is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, indexName)); err != nil {
		t.Errorf("no %s journal after Close: %v", indexName, err)
	}
}

// TestListRemovesNothing: a List is a read. An old journal found beside a
// current one (an older recall ran again) is left for the next rewrite of
// the journal, not unlinked by every process that lists the project.
func TestListRemovesNothing(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s, err := Open(Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	key := recall.Key{Project: "p", Session: "a"}
	if _, err := recall.NewSession(s, key).Create(ctx, recall.CreateOptions{Items: []recall.Item{recall.Message("user", "hi")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "p", recall.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	v1 := filepath.Join(home, projectsDir, "p", "#index-v1")
	if err := os.WriteFile(v1, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if page, err := s.List(ctx, "p", recall.ListOptions{}); err != nil || len(page.Sessions) != 1 {
		t.Fatalf("List = %+v, %v; want 1 session", page, err)
	}
	if _, err := os.Stat(v1); err != nil {
		t.Errorf("List removed the old journal: %v", err)
	}
}
