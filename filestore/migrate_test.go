package filestore

import (
	"context"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fsys"
)

// An index written by the previous version cached a Meta whose Updated
// moved with title and meta entries too. Such a journal, #index-v1 beside
// logs it still describes exactly (same inode, size and mtime, so the old
// store answered from it), is not believed: on the first open every log
// is derived afresh, Updated becomes the last conversation activity, and
// nothing else the user had changes. The old journal goes once the new
// one is written.
func TestIndexV1Recomputed(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	dir := filepath.Join(home, projectsDir, "p")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	entry := func(seq int64, e recall.Entry, tm time.Time) recall.Entry {
		e.Seq, e.Time = seq, tm
		return e
	}
	pinned, renamed, active := "pinned", "renamed", "active"
	// Each log is larger than the journal, so that Stat too starts from
	// the journal rather than the log (see cachedRecord).
	long := recall.Message("user", strings.Repeat("a long question ", 200)).Entry()
	logs := map[string][]recall.Entry{
		// talked to at t0, pinned an hour later: the pin is its last entry
		pinned: {
			entry(1, long, at(0)),
			entry(2, recall.Message("assistant", "hi").Entry(), at(time.Minute)),
			entry(3, recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: new(true), Labels: []string{"keep"}}), at(time.Hour)),
		},
		// talked to at t0, renamed two hours later
		renamed: {
			entry(1, long, at(0)),
			entry(2, recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "Renamed", Source: recall.TitleUser}), at(2*time.Hour)),
		},
		// talked to last, half an hour after t0
		active: {
			entry(1, long, at(30*time.Minute)),
		},
	}
	// Each log and the v1 record the previous version wrote for it: the
	// Meta with Updated at the log's last entry, whatever its kind.
	var journal []byte
	for _, name := range []string{pinned, renamed, active} {
		key, st, check := plantLog(t, dir, name, logs[name])
		old, _ := recall.Replay(key, logs[name])
		old.Updated = logs[name][len(logs[name])-1].Time // the previous rule
		journal = appendRecord(journal, newRecord(key, name, logEnd{st: st, off: st.Size, check: check}, old, controlLines{}))
	}
	v1 := filepath.Join(dir, "#index-v1")
	if err := os.WriteFile(v1, journal, 0o600); err != nil {
		t.Fatal(err)
	}
	// The planted journal is one the previous version trusted: every
	// record parses and matches its log's stat.
	for i, line := range splitJournal(journal) {
		r, kind, ok := parseRecord(line)
		if !ok || kind != lineRecord {
			t.Fatalf("v1 record %d does not parse", i)
		}
		if st, err := fsys.StatPath(filepath.Join(dir, r.rel+logExt)); err != nil || st != r.st {
			t.Fatalf("v1 record of %s does not match its log: %+v, %+v, %v", r.rel, r.st, st, err)
		}
	}

	if fi, err := os.Stat(filepath.Join(dir, active+logExt)); err != nil || fi.Size() <= int64(len(journal)) {
		t.Fatalf("the smallest log is not larger than the journal (%d bytes): %v, %v", len(journal), fi.Size(), err)
	}

	s, err := Open(Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wantUpdated := map[string]time.Time{pinned: at(time.Minute), renamed: at(0), active: at(30 * time.Minute)}
	for name, want := range wantUpdated {
		key := recall.Key{Project: "p", Session: name}
		m, err := s.Stat(ctx, key)
		if err != nil || !m.Updated.Equal(want) {
			t.Errorf("Stat(%s).Updated = %v, %v; want %v, the last activity", name, m.Updated, err, want)
		}
		// nothing else changed: the metadata is what the log says
		fromLog, _ := recall.Replay(key, logs[name])
		if got, _ := json.Marshal(m); string(got) != string(mustJSON(t, fromLog)) {
			t.Errorf("Stat(%s) = %s\nwant %s", name, got, mustJSON(t, fromLog))
		}
	}
	page, err := s.List(ctx, "p", recall.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, m := range page.Sessions {
		order = append(order, m.Key.Session)
		if !m.Updated.Equal(wantUpdated[m.Key.Session]) {
			t.Errorf("List: %s updated %v, want %v", m.Key.Session, m.Updated, wantUpdated[m.Key.Session])
		}
	}
	if want := []string{active, pinned, renamed}; !slices.Equal(order, want) {
		t.Errorf("List order %v, want %v (by last activity)", order, want)
	}
	if ps, err := s.Projects(ctx); err != nil || len(ps) != 1 || !ps[0].Updated.Equal(at(30*time.Minute)) {
		t.Errorf("Projects = %+v, %v; want p updated at the last activity", ps, err)
	}
	// gc's age is the activity's: a cutoff after t0 takes the renamed
	// session (renamed later, talked to before) and keeps the pinned one.
	rep, err := s.Cleanup(ctx, recall.CleanupOptions{OlderThan: at(20 * time.Minute), DryRun: true})
	if err != nil || len(rep.Removed) != 1 || rep.Removed[0].Key.Session != renamed || rep.Kept != 1 {
		t.Errorf("Cleanup dry run = %+v, %v; want %s removed, 1 pinned kept", rep, err, renamed)
	}
	if _, err := os.Stat(v1); !os.IsNotExist(err) {
		t.Errorf("the v1 journal is still there: %v", err)
	}
	// A later process reads the new journal and agrees.
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, indexName)); err != nil {
		t.Errorf("no %s journal after Close: %v", indexName, err)
	}
	s2, err := Open(Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for name, want := range wantUpdated {
		if m, err := s2.Stat(ctx, recall.Key{Project: "p", Session: name}); err != nil || !m.Updated.Equal(want) {
			t.Errorf("reopened: Stat(%s).Updated = %v, %v; want %v", name, m.Updated, err, want)
		}
	}
}

// plantLog writes log as the log of session name of project p in dir, as
// an earlier version left it, and returns its key, its stat and the crc
// of its last checkLen bytes, for the record that version wrote.
func plantLog(t *testing.T, dir, name string, log []recall.Entry) (recall.Key, fsys.Stat, uint32) {
	t.Helper()
	var buf []byte
	for _, e := range log {
		var err error
		if buf, err = appendLine(buf, e, false); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, name+logExt)
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := fsys.StatPath(path)
	if err != nil {
		t.Fatal(err)
	}
	return recall.Key{Project: "p", Session: name}, st, crc32.ChecksumIEEE(buf[max(0, len(buf)-checkLen):])
}

func splitJournal(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := slices.Index(b, '\n')
		if i < 0 {
			return append(out, b)
		}
		if i > 0 {
			out = append(out, b[:i])
		}
		b = b[i+1:]
	}
	return out
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
