package sqlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// TestDamagedRows plants item rows, as another program writing SQL would,
// whose payloads recall.Entry.Item's first-and-last-byte check lets through
// but that are not JSON ("{x}", a truncated object with a brace at the
// end), among others: a column holds any bytes, so the store checks them
// in full. Items (its one-statement path and its paging one), Pop and
// GetItems leave them out; Load counts them in Meta.Corrupt, and so does
// Stat; Load and Entries return the rows that are JSON (no object)
// verbatim, and leave out the unreadable ones, those Entry.Item would take
// for objects; appends after them do not move the watermark over them.
func TestDamagedRows(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		ctx := context.Background()
		k := recall.Key{Project: "p", Session: "damaged"}
		damaged := [][]byte{[]byte(`{x}`), []byte(`{"a":}`), []byte(` {"a":1}} `), []byte(`[1]`), []byte("{\"a\":\"\xff\"") /* ends in " */}
		var want []recall.Item
		for i, d := range damaged {
			it := msg(string(rune('a' + i)))
			if _, err := s.Append(ctx, k, recall.Guard{}, it.Entry()); err != nil {
				t.Fatal(err)
			}
			want = append(want, it)
			plant(t, s, k, d)
		}
		for _, limit := range []int{0, 1, 2, 5, 50} {
			live, last, err := s.Items(ctx, k, limit)
			w := want
			if limit > 0 && limit < len(w) {
				w = w[len(w)-limit:]
			}
			if err != nil || last != int64(2*len(damaged)) || !sameItems(recall.PlainItems(live), w) {
				t.Errorf("Items(%d) = %d items at %d, %v; want %d at %d", limit, len(live), last, err, len(w), 2*len(damaged))
			}
		}
		m, log, err := s.Load(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		var kept []recall.Entry // the log Load and Entries return
		for i, d := range damaged {
			kept = append(kept, want[i].Entry())
			kept[len(kept)-1].Seq = int64(2*i + 1)
			if _, looks := recall.Entry.Item(recall.Entry{Kind: recall.KindItem, Data: d}); !looks {
				kept = append(kept, recall.Entry{Seq: int64(2*i + 2), Kind: recall.KindItem, Data: d})
			}
		}
		if m.Corrupt != len(damaged) || m.ItemCount != len(want) || m.LastSeq != int64(2*len(damaged)) {
			t.Errorf("Load: Corrupt %d, ItemCount %d, LastSeq %d; want %d, %d, %d", m.Corrupt, m.ItemCount, m.LastSeq, len(damaged), len(want), 2*len(damaged))
		}
		sameLog := func(what string, log []recall.Entry) {
			t.Helper()
			if len(log) != len(kept) {
				t.Errorf("%s: %d entries, want %d", what, len(log), len(kept))
				return
			}
			for i, e := range log {
				if e.Seq != kept[i].Seq || e.Kind != recall.KindItem || !bytes.Equal(e.Data, kept[i].Data) {
					t.Errorf("%s: entry %d = %d %s %q, want %d %q", what, i, e.Seq, e.Kind, e.Data, kept[i].Seq, kept[i].Data)
				}
			}
		}
		sameLog("Load", log)
		for _, limit := range []int{0, 1, 2, 3} {
			var page []recall.Entry
			for after := int64(0); ; {
				es, err := s.Entries(ctx, k, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				page = append(page, es...)
				if len(es) == 0 || limit <= 0 || len(es) < limit {
					break // a short page is the log's end
				}
				after = es[len(es)-1].Seq
			}
			sameLog(fmt.Sprintf("Entries, %d at a time", limit), page)
		}
		if sm, err := s.Stat(ctx, k); err != nil || sm.Corrupt != len(damaged) || sm.ItemCount != len(want) {
			t.Errorf("Stat = Corrupt %d, ItemCount %d, %v; want %d, %d", sm.Corrupt, sm.ItemCount, err, len(damaged), len(want))
		}
		// This package's appends after the first planted row did not move
		// the watermark over it.
		if checked := checkedSeq(t, s, k); checked != 1 {
			t.Errorf("checked_seq %d, want 1: the row planted at 2 is not this package's", checked)
		}
		popAll(t, s, k, want)
		if err := storekit.VerifySession(ctx, s, k); err == nil {
			t.Error("VerifySession of a damaged session reported nothing")
		}
	})
}

// TestDamagedBelowWatermark damages rows this package wrote and
// validated, in place (a disk, another program's UPDATE): rows at or below
// the session's checked_seq, so the watermark still says the session is
// healthy. The payloads look like objects by their first and last bytes
// but are not JSON; one is the newest entry, which Pop's one-round-trip
// path on PostgreSQL would take. Items (both paths) and Pop leave them
// out, Load leaves them out of the log and counts them in Meta.Corrupt,
// both forks hold the valid items only, and VerifySession reports the
// session.
func TestDamagedBelowWatermark(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		ctx := context.Background()
		k := recall.Key{Project: "p", Session: "rotted"}
		var items []recall.Item
		for i := range 6 {
			items = append(items, msg(string(rune('a'+i))))
		}
		if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(items...)...); err != nil {
			t.Fatal(err)
		}
		sid, err := sessionID(ctx, s.db.q(), k)
		if err != nil {
			t.Fatal(err)
		}
		rot := map[int64][]byte{2: []byte(`{x}`), 4: []byte(` {"a":1}} `), 6: []byte(`{"a":}`)}
		if err := s.db.update(ctx, func(ctx context.Context, q querier) error {
			for seq, d := range rot {
				if _, err := q.exec(ctx, `UPDATE entries SET payload = $3 WHERE session = $1 AND seq = $2`, sid, seq, d); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if checked := checkedSeq(t, s, k); checked != 6 {
			t.Fatalf("checked_seq %d, want 6: the rows were this package's", checked)
		}
		valid := []recall.Item{items[0], items[2], items[4]}
		for _, limit := range []int{0, 1, 2, 3, 10} {
			w := valid
			if limit > 0 && limit < len(w) {
				w = w[len(w)-limit:]
			}
			live, last, err := s.Items(ctx, k, limit)
			if err != nil || last != 6 || !sameItems(recall.PlainItems(live), w) {
				t.Errorf("Items(%d) = %d items at %d, %v; want %d at 6", limit, len(live), last, err, len(w))
			}
		}
		m, log, err := s.Load(ctx, k)
		if err != nil || m.Corrupt != len(rot) || m.LastSeq != 6 || len(log) != 6-len(rot) {
			t.Errorf("Load = Corrupt %d, LastSeq %d, %d entries, %v; want %d, 6, %d", m.Corrupt, m.LastSeq, len(log), err, len(rot), 6-len(rot))
		}
		if err := storekit.VerifySession(ctx, s, k); !errors.Is(err, recall.ErrCorrupt) {
			t.Errorf("VerifySession of a session with rotted rows = %v, want ErrCorrupt", err)
		}
		if err := forkBothWays(t, s, k, 0, recall.Key{Project: "p", Session: "n"}, recall.Key{Project: "p", Session: "f"}); err != nil {
			t.Errorf("fork of a session with rotted rows: %v", err)
		} else if fm, _, err := s.Load(ctx, recall.Key{Project: "p", Session: "n"}); err != nil || fm.ItemCount != len(valid) || fm.Corrupt != 0 {
			t.Errorf("the fork = ItemCount %d, Corrupt %d, %v; want %d healthy items", fm.ItemCount, fm.Corrupt, err, len(valid))
		}
		popAll(t, s, k, valid)
	})
}

// popAll pops key until it is empty, and checks that it pops the items of
// want, newest first, and then nothing: the damaged rows are skipped.
func popAll(t *testing.T, s *Store, key recall.Key, want []recall.Item) {
	t.Helper()
	for i := len(want) - 1; i >= 0; i-- {
		got, err := s.Pop(context.Background(), key)
		if err != nil || !bytes.Equal(got, want[i]) {
			t.Fatalf("Pop = %s, %v; want %s", got, err, want[i])
		}
	}
	if got, err := s.Pop(context.Background(), key); got != nil || err != nil {
		t.Errorf("Pop of a session holding damaged rows only = %s, %v", got, err)
	}
}

func sameItems(a, b []recall.Item) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// checkedSeq returns key's checked_seq.
func checkedSeq(t *testing.T, s *Store, key recall.Key) int64 {
	t.Helper()
	var checked int64
	if err := s.db.q().queryRow(context.Background(), `SELECT checked_seq FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3`,
		key.Project, key.Session, key.Subpath).Scan(&checked); err != nil {
		t.Fatal(err)
	}
	return checked
}

// TestCheckedSeq: every write path of this package keeps checked_seq at
// last_seq (its rows are validated when written), and none moves it over
// a row another program planted.
func TestCheckedSeq(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		ctx := context.Background()
		title := func(n int) recall.Entry {
			return recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: string(rune('a' + n)), Source: recall.TitleUser})
		}
		writes := []struct {
			name  string
			write func(k recall.Key) error
		}{
			{"items", func(k recall.Key) error {
				_, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(msg("a"), msg("b"))...)
				return err
			}},
			{"guarded items", func(k recall.Key) error {
				m, _ := s.Stat(ctx, k)
				_, err := s.Append(ctx, k, recall.IfLastSeq(m.LastSeq), msg("c").Entry())
				return err
			}},
			{"general", func(k recall.Key) error {
				_, err := s.Append(ctx, k, recall.Guard{}, msg("d").Entry(), title(1))
				return err
			}},
			{"pop", func(k recall.Key) error { _, err := s.Pop(ctx, k); return err }},
			{"import", func(k recall.Key) error {
				m, _ := s.Stat(ctx, k)
				_, err := s.Import(ctx, k, recall.Entry{Seq: m.LastSeq + 1, Kind: recall.KindItem, Time: storekit.Now(), Data: []byte(msg("e"))})
				return err
			}},
			{"compaction and purge", func(k recall.Key) error {
				m, _ := s.Stat(ctx, k)
				if _, err := s.Append(ctx, k, recall.IfLastSeq(m.LastSeq), recall.NewEntry(recall.KindCompaction,
					recall.Compaction{Through: m.LastSeq, Items: []recall.Item{msg("summary")}})); err != nil {
					return err
				}
				_, err := s.Purge(ctx, k)
				return err
			}},
		}
		for i, w := range writes {
			k := recall.Key{Project: "p", Session: string(rune('a' + i))}
			// a session this package wrote: the watermark follows the log
			for _, w2 := range writes {
				if err := w2.write(k); err != nil {
					t.Fatalf("%s: %v", w2.name, err)
				}
				m, _ := s.Stat(ctx, k)
				if checked := checkedSeq(t, s, k); checked != m.LastSeq {
					t.Errorf("after %s: checked_seq %d, LastSeq %d", w2.name, checked, m.LastSeq)
				}
			}
			// a row planted by another program stops it for good
			m, _ := s.Stat(ctx, k)
			plant(t, s, k, []byte(`{x}`))
			if err := w.write(k); err != nil {
				t.Fatalf("%s after a planted row: %v", w.name, err)
			}
			if checked := checkedSeq(t, s, k); checked != m.LastSeq {
				t.Errorf("%s after a row planted at %d: checked_seq %d, want %d", w.name, m.LastSeq+1, checked, m.LastSeq)
			}
			wantCorrupt := 1
			if w.name == "compaction and purge" {
				wantCorrupt = 0 // the planted row went with the entries the purge dropped
			}
			if lm, _, err := s.Load(ctx, k); err != nil || lm.Corrupt != wantCorrupt {
				t.Errorf("%s after a planted row: Load has Corrupt %d, %v; want %d", w.name, lm.Corrupt, err, wantCorrupt)
			}
		}
		k := recall.Key{Project: "p", Session: "created"}
		if _, err := recall.NewSession(s, k).Create(ctx, recall.CreateOptions{Title: "t", Metadata: map[string]string{"a": "b"}}); err != nil {
			t.Fatal(err)
		}
		if checked := checkedSeq(t, s, k); checked != 3 {
			t.Errorf("Create: checked_seq %d, want 3", checked)
		}
	})
}

// TestItemsLastSeqOfDamagedLog: Items returns the session's last_seq with
// its view even when the log is not what this package wrote, where its
// one-statement read (which takes LastSeq from the newest row) does not
// apply: the newest row deleted by another program, a row above last_seq
// inserted without moving it, a row planted below.
func TestItemsLastSeqOfDamagedLog(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		ctx := context.Background()
		k := recall.Key{Project: "p", Session: "holes"}
		if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(msg("a"), msg("b"), msg("c"))...); err != nil {
			t.Fatal(err)
		}
		sid, err := sessionID(ctx, s.db.q(), k)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, want []recall.Item) {
			t.Helper()
			for _, limit := range []int{0, 1, 5} {
				live, last, err := s.Items(ctx, k, limit)
				w := want
				if limit > 0 && limit < len(w) {
					w = w[len(w)-limit:]
				}
				if err != nil || last != 3 || !sameItems(recall.PlainItems(live), w) {
					t.Errorf("%s: Items(%d) = %d items at LastSeq %d, %v; want %d at 3", what, limit, len(live), last, err, len(w))
				}
			}
		}
		write := func(stmt string, args ...any) {
			t.Helper()
			if err := s.db.update(ctx, func(ctx context.Context, q querier) error {
				_, err := q.exec(ctx, stmt, args...)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		write(`DELETE FROM entries WHERE session = $1 AND seq = 3`, sid)
		check("newest row deleted", []recall.Item{msg("a"), msg("b")})
		write(`INSERT INTO entries (session, seq, kind, payload, time) VALUES ($1, 4, 'item', $2, $3)`,
			sid, []byte(msg("beyond")), s.db.timeArg(storekit.Now()))
		check("a row above last_seq", []recall.Item{msg("a"), msg("b")})
	})
}

// TestSQLiteReadersMapTheFile: the reader connections map the database
// file (sqliteMmapSize, as SQLite caps it), and a file cut short under
// them, every page of it mapped and read before, makes each read fail
// with an error, not a fault of the process.
func TestSQLiteReadersMapTheFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "recall.db")
	s, err := OpenSQLite(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.db.(*liteBackend).r
	var mapped int64
	if err := r.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&mapped); err != nil {
		t.Fatal(err)
	}
	if want := min(sqliteMmapSize, 2147418112); mapped != want { // SQLITE_MAX_MMAP_SIZE
		t.Fatalf("readers map %d bytes, want %d", mapped, want)
	}

	// Some 10 MB of sessions, every row then read through the mapping.
	for i := range 300 {
		var es []recall.Entry
		for j := range 20 {
			es = append(es, recall.Message("user", fmt.Sprintf("needle %d %d %s", i, j, strings.Repeat(fmt.Sprintf("hay%d ", i), 100))).Entry())
		}
		if _, err := s.Append(ctx, recall.Key{Project: "p", Session: fmt.Sprintf("s%03d", i)}, recall.Guard{}, es...); err != nil {
			t.Fatal(err)
		}
	}
	reads := map[string]func() error{
		"search": func() error {
			_, err := recall.Search(ctx, s, recall.SearchOptions{Query: "needle hay150"})
			return err
		},
		"items": func() error {
			_, _, err := s.Items(ctx, recall.Key{Project: "p", Session: "s299"}, 0)
			return err
		},
		"list": func() error {
			_, err := s.List(ctx, "p", recall.ListOptions{Limit: 1000})
			return err
		},
	}
	for name, read := range reads {
		if err := read(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var integrity string
	if err := r.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity_check: %q, %v", integrity, err)
	}

	// The pages in the file itself, then the file cut to a third.
	if _, err := s.db.(*liteBackend).w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < 8<<20 {
		t.Fatalf("the database is %d bytes, too small to show anything", st.Size())
	}
	if err := os.Truncate(path, st.Size()/3); err != nil {
		t.Fatal(err)
	}
	for name, read := range reads {
		err := read()
		if !errors.Is(err, ErrDamaged) || !errors.Is(err, recall.ErrCorrupt) {
			t.Errorf("%s of a database cut to a third: %v, want an error wrapping ErrDamaged and recall.ErrCorrupt", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}
