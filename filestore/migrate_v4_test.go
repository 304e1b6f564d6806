package filestore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// v4Line is the journal line of r as #index-v4 wrote it: without the
// controls field.
func v4Line(t *testing.T, r *record) []byte {
	t.Helper()
	line := bytes.TrimSuffix(appendRecord(nil, r), []byte{'\n'})
	rest, ok := checkLine(line)
	fields := bytes.SplitN(rest, []byte{' '}, 11)
	if !ok || len(fields) != 11 || string(fields[9]) != "?" {
		t.Fatalf("unexpected journal line %q", line)
	}
	v4 := append([]byte("00000000 "), bytes.Join(append(fields[:9:9], fields[10]), []byte{' '})...)
	return sealLine(v4, 0)
}

// An index written before records kept the places of their view's
// control lines (#index-v4) describes its logs exactly but without them.
// It is not believed: the first open derives every log afresh, with its
// controls, so pages read them line by line from the first; the v4
// journal goes with the first rewrite, and a later process finds the
// controls in the new journal.
func TestIndexV4Recomputed(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	dir := filepath.Join(home, projectsDir, "p")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	logs := map[string][]recall.Entry{}
	var journal []byte
	for _, name := range []string{"a", "b"} {
		var log []recall.Entry
		add := func(e recall.Entry) {
			e.Seq, e.Time = int64(len(log)+1), t0.Add(time.Duration(len(log))*time.Second)
			log = append(log, e)
		}
		for i := range 30 {
			add(recall.Message("user", name+strings.Repeat(" words", 20+i)).Entry())
			if i%10 == 9 {
				add(recall.NewEntry(recall.KindRemove, recall.ItemRef{Seq: int64(len(log) - 2)}))
			}
		}
		key, st, check := plantLog(t, dir, name, log)
		m, _ := recall.Replay(key, log)
		journal = append(journal, v4Line(t, newRecord(key, name, logEnd{st: st, off: st.Size, check: check}, m, controlLines{}))...)
		logs[name] = log
	}
	v4 := filepath.Join(dir, "#index-v4")
	if err := os.WriteFile(v4, journal, 0o600); err != nil {
		t.Fatal(err)
	}

	// pages reads every page of both sessions, newest first, and checks
	// them against the logs, reading no controls backwards.
	pages := func(s *Store) {
		t.Helper()
		scans := controlScans.Load()
		for name, log := range logs {
			key := recall.Key{Project: "p", Session: name}
			_, want := recall.Replay(key, log)
			slices.Reverse(want)
			var got []recall.LiveItem
			opts := recall.ItemPageOptions{Limit: 7}
			for {
				page, err := s.ReadItems(ctx, key, opts)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, page.Items...)
				if !page.More {
					break
				}
				opts.After = page.Items[len(page.Items)-1].Ref
			}
			if !slices.EqualFunc(got, want, func(a, b recall.LiveItem) bool { return a.Ref == b.Ref }) {
				t.Errorf("%s: paged %d items, want %d", name, len(got), len(want))
			}
		}
		if n := controlScans.Load() - scans; n > 0 {
			t.Errorf("%d pages read their controls backwards from the end", n)
		}
	}

	s, err := Open(Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	pages(s)
	if page, err := s.List(ctx, "p", recall.ListOptions{}); err != nil || len(page.Sessions) != 2 {
		t.Fatalf("List = %+v, %v; want 2 sessions", page, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(v4); !os.IsNotExist(err) {
		t.Errorf("the v4 journal is still there: %v", err)
	}

	// A later process takes each log's controls from the new journal.
	s, err = Open(Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pages(s)
	p := s.project("p")
	for name := range logs {
		p.mu.Lock()
		rec, loose := p.recs[name], p.loose[name]
		p.mu.Unlock()
		if rec == nil || loose != nil {
			t.Errorf("%s: the journal's record %v, a reader's %v; want the journal's only", name, rec != nil, loose != nil)
		} else if !rec.ctl.known || len(rec.ctl.lines) != 3 {
			t.Errorf("%s: the journal's record has controls %+v, want the 3 removes", name, rec.ctl)
		}
	}
}
