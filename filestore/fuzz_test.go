package filestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/storetest"
)

// The fuzz targets of the file store. `go test` runs their seeds (f.Add
// and testdata/fuzz/<name>/); docs/TESTING.md has the commands for a long
// run and the figures of the last one.

// fuzzStore opens a store for one fuzz worker, in a directory removed when
// the fuzz test ends. SyncNever: the targets test decoding, not fsync.
func fuzzStore(f *testing.F) (*filestore.Store, string) {
	f.Helper()
	home := f.TempDir()
	s, err := filestore.Open(filestore.Options{Dir: home, Sync: filestore.SyncNever})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	return s, home
}

// FuzzKeyPath gives the store arbitrary keys. A key that fails
// recall.Key.Validate is refused with ErrInvalidKey and touches nothing; a
// valid one is written exactly where the layout says, inside the root, and
// nowhere else.
func FuzzKeyPath(f *testing.F) {
	for _, k := range append(storetest.InvalidKeys(), storetest.EdgeKeys()...) {
		f.Add(k.Project, k.Session, k.Subpath)
	}
	outer := f.TempDir()
	home := filepath.Join(outer, "home")
	s, err := filestore.Open(filestore.Options{Dir: home, Sync: filestore.SyncNever})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	root := filepath.Join(home, "projects")
	item := recall.Item(`{"k":1}`).Entry()
	f.Fuzz(func(t *testing.T, project, session, subpath string) {
		ctx := context.Background()
		key := recall.Key{Project: project, Session: session, Subpath: subpath}
		_, err := s.Append(ctx, key, recall.Guard{}, item)
		if key.Validate() != nil {
			if !errors.Is(err, recall.ErrInvalidKey) {
				t.Fatalf("Append(%+v) = %v; want ErrInvalidKey", key, err)
			}
			if _, err := s.ProjectDir(project); err == nil && (recall.Key{Project: project, Session: "s"}).Validate() != nil {
				t.Fatalf("ProjectDir(%q) accepted a bad project", project)
			}
		} else {
			if errors.Is(err, recall.ErrConflict) {
				return // "a" and "a.jsonl/..." cannot both exist; nothing was written
			}
			if err != nil {
				t.Fatalf("Append(%+v): %v", key, err)
			}
			path := logPath(t, s, key)
			rel, err := filepath.Rel(root, path)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
				t.Fatalf("the log of %+v is at %s, outside %s", key, path, root)
			}
			if _, err := os.Lstat(path); err != nil {
				t.Fatalf("the log of %+v is not at %s: %v", key, path, err)
			}
			if err := s.Remove(ctx, key); err != nil {
				t.Fatalf("Remove(%+v): %v", key, err)
			}
		}
		// Nothing ever appears beside the home.
		ents, err := os.ReadDir(outer)
		if err != nil || len(ents) != 1 || ents[0].Name() != "home" {
			t.Fatalf("after %+v the directory around the home holds %v (%v)", key, ents, err)
		}
	})
}

// recoveryLog is a log written by the store, with the file size after each
// batch: the committed ends a crash can leave.
type recoveryLog struct {
	data    []byte
	ends    []int            // ends[i]: size after batch i
	entries [][]recall.Entry // entries[i]: the log's entries after batch i
}

// writeRecoveryLog writes a log of every entry kind, with payloads that
// take each encoding (raw data, data_text, data_b64), usage, and batches
// of several lines.
func writeRecoveryLog(f *testing.F, s *filestore.Store) recoveryLog {
	f.Helper()
	ctx := context.Background()
	key := recall.Key{Project: "seed", Session: "log"}
	path := logPath(f, s, key)
	yes := true
	batches := [][]recall.Entry{
		{recall.Message("user", "hello").Entry()},
		recall.ItemEntries(recall.Message("assistant", "one"), recall.Item(`{"type":"function_call","call_id":"c1"}`), recall.Item(`{"type":"function_call_output","call_id":"c1","output":"ok"}`)),
		{recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "a title", Source: recall.TitleUser})},
		{recall.Item("{\n  \"pretty\": true\n}\n").Entry()},
		{recall.Item("{\"a\":\"\xff\"}\n").Entry(), recall.Item(`{"nul":"\u0000"}`).Entry()},
		{{Kind: recall.KindItem, Data: []byte(`{"u":1}`), Usage: &recall.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}}},
		{recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 9})},
		{recall.NewEntry(recall.KindMeta, recall.MetaChange{Archived: &yes, Labels: []string{"x"}, SetLabels: true})},
		{{Kind: "future-kind", Data: []byte(`{"z":[1,2]}`)}},
		nil, // the compaction, made below once the log's last seq is known
		recall.ItemEntries(recall.Message("user", "after"), recall.Message("assistant", "compaction")),
		{{Kind: recall.KindClear}},
		{recall.Message("user", "last").Entry()},
	}
	var rl recoveryLog
	var last int64
	for _, b := range batches {
		if b == nil {
			b = []recall.Entry{recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: last, Replaced: 6, Items: []recall.Item{recall.Message("user", "summary")}})}
		}
		var err error
		if last, err = s.Append(ctx, key, recall.Guard{}, b...); err != nil {
			f.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		_, es, err := s.Load(ctx, key)
		if err != nil {
			f.Fatal(err)
		}
		rl.data, rl.ends, rl.entries = data, append(rl.ends, len(data)), append(rl.entries, es)
	}
	return rl
}

// FuzzLogRecovery places a log made of the first batches of a real log
// followed by arbitrary bytes, then reads and appends to it. Nothing may
// panic; every entry of the real batches comes back unchanged, before
// anything the garbage holds; the store's readers agree with one another
// and with recall.Replay; and the next append succeeds, lands right after
// the committed entries, and deletes no byte: a torn tail is moved, whole,
// into a side file.
func FuzzLogRecovery(f *testing.F) {
	s, _ := fuzzStore(f)
	rl := writeRecoveryLog(f, s)
	f.Add(uint8(0), []byte{})
	f.Add(uint8(3), []byte("{\"seq\":99,\"kind\":\"item\",\"ti"))
	f.Add(uint8(5), []byte("garbage\n\x00\x01\n{\"seq\":3,\"kind\":\"item\",\"time\":\"2025-06-01T10:00:00Z\",\"data\":{}}\n"))
	f.Add(uint8(13), rl.data[rl.ends[1]:rl.ends[2]]) // a batch again: duplicate seqs
	f.Add(uint8(2), rl.data[rl.ends[0]:rl.ends[1]-1])
	f.Add(uint8(1), bytes.ReplaceAll(rl.data[rl.ends[0]:], []byte(`"more":true,`), nil))
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, batches uint8, garbage []byte) {
		ctx := context.Background()
		keep := int(batches) % (len(rl.ends) + 1)
		var prefix []byte
		var want []recall.Entry
		if keep > 0 {
			prefix, want = rl.data[:rl.ends[keep-1]], rl.entries[keep-1]
		}
		file := append(slices.Clip(prefix), garbage...)
		key := recall.Key{Project: "fuzz", Session: fmt.Sprintf("s%d", n.Add(1))}
		path := logPath(t, s, key)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := s.Remove(ctx, key); err != nil && !errors.Is(err, recall.ErrNotFound) {
				t.Errorf("Remove: %v", err)
			}
		}()

		meta, got, err := s.Load(ctx, key)
		if errors.Is(err, recall.ErrNotFound) {
			if len(want) > 0 {
				t.Fatalf("Load: %v; want the %d entries of %d batches", err, len(want), keep)
			}
		} else if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if len(got) < len(want) {
			t.Fatalf("Load returned %d entries; the real batches hold %d", len(got), len(want))
		}
		for i := range want {
			if d := storetest.EntryDiff(got[i], want[i], true); d != "" || !bytes.Equal(got[i].Data, want[i].Data) {
				t.Fatalf("entry %d: %s (data %q, want %q)", i, d, got[i].Data, want[i].Data)
			}
		}
		checkReaders(t, s, key, meta, got)

		// The next append lands right after the committed entries.
		seq, err := s.Append(ctx, key, recall.Guard{}, recall.Item(`{"next":true}`).Entry())
		if err != nil {
			t.Fatalf("Append after the garbage: %v", err)
		}
		if seq != meta.LastSeq+1 {
			t.Fatalf("Append after the garbage got seq %d, want %d", seq, meta.LastSeq+1)
		}
		_, after, err := s.Load(ctx, key)
		if err != nil || len(after) != len(got)+1 {
			t.Fatalf("Load after the append: %d entries, %v; want %d", len(after), err, len(got)+1)
		}
		for i := range got {
			if d := storetest.EntryDiff(after[i], got[i], true); d != "" {
				t.Fatalf("the append changed entry %d: %s", i, d)
			}
		}
		if last := after[len(got)]; last.Seq != seq || string(last.Data) != `{"next":true}` {
			t.Fatalf("the appended entry reads back as %+v", last)
		}
		// No byte is lost: the log keeps a prefix of the old file, and the
		// side file holds the rest, unchanged.
		now, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		side, _ := filepath.Glob(path + "#torn-*")
		var torn []byte
		switch len(side) {
		case 0:
		case 1:
			if torn, err = os.ReadFile(side[0]); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%d side files for one torn tail", len(side))
		}
		kept := len(file) - len(torn)
		if !bytes.HasSuffix(file, torn) || !bytes.HasPrefix(now, file[:kept]) {
			t.Fatalf("the old file (%d bytes) is not the kept log (%d of %d bytes) plus the side file (%d bytes)", len(file), kept, len(now), len(torn))
		}
		for _, sf := range side {
			os.Remove(sf)
		}
	})
}

// checkReaders checks the readers of a log against each other: Stat and
// Load agree, Items(0) is recall.Replay of Load, and, when the log's seqs
// increase strictly (a log that is not corrupt; readers of a log with
// repeated seqs may differ on which copy a pop removes), Items(limit) read
// from the end is the tail of Items(0) and Entries pages agree with Load.
func checkReaders(t *testing.T, s *filestore.Store, key recall.Key, meta recall.Meta, log []recall.Entry) {
	t.Helper()
	ctx := context.Background()
	all, _, err := s.Items(ctx, key, 0)
	if err != nil {
		t.Fatalf("Items(0): %v", err)
	}
	wantMeta, view := recall.Replay(key, log)
	if len(log) == 0 {
		return
	}
	st, err := s.Stat(ctx, key)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	wantMeta.Corrupt = meta.Corrupt
	if d := storetest.MetaDiff(st, wantMeta, true); d != "" {
		t.Fatalf("Stat differs from Replay of Load: %s", d)
	}
	if d := storetest.MetaDiff(meta, wantMeta, true); d != "" {
		t.Fatalf("Load's meta differs from Replay of its log: %s", d)
	}
	if !sameLive(all, view) {
		t.Fatalf("Items(0) has %d items, Replay of Load %d (or they differ)", len(all), len(view))
	}
	for i := 1; i < len(log); i++ {
		if log[i].Seq <= log[i-1].Seq {
			return
		}
	}
	for _, limit := range []int{1, 2, 5} {
		tail, _, err := s.Items(ctx, key, limit)
		if err != nil {
			t.Fatalf("Items(%d): %v", limit, err)
		}
		if w := all[max(0, len(all)-limit):]; !sameLive(tail, w) {
			t.Fatalf("Items(%d) = %d items, not the tail of Items(0) (%d items)", limit, len(tail), len(all))
		}
	}
	for _, oldest := range []bool{false, true} {
		page, err := s.ReadItems(ctx, key, recall.ItemPageOptions{Oldest: oldest})
		if err != nil {
			t.Fatalf("ReadItems(oldest %v): %v", oldest, err)
		}
		want := slices.Clone(view)
		if !oldest {
			slices.Reverse(want)
		}
		if !sameLive(page.Items, want) || page.LastSeq != meta.LastSeq {
			t.Fatalf("ReadItems(oldest %v) = %d items at seq %d, Replay of Load %d at seq %d (or they differ)", oldest, len(page.Items), page.LastSeq, len(want), meta.LastSeq)
		}
	}
	for _, after := range []int64{0, log[len(log)/2].Seq, log[len(log)-1].Seq - 1} {
		es, err := s.Entries(ctx, key, after, 0)
		if err != nil {
			t.Fatalf("Entries(after %d): %v", after, err)
		}
		i, _ := slices.BinarySearchFunc(log, after+1, func(e recall.Entry, seq int64) int { return int(e.Seq - seq) })
		w := log[i:]
		if len(es) != len(w) {
			t.Fatalf("Entries(after %d) = %d entries, Load has %d after it", after, len(es), len(w))
		}
		for j := range es {
			if d := storetest.EntryDiff(es[j], w[j], true); d != "" {
				t.Fatalf("Entries(after %d)[%d]: %s", after, j, d)
			}
		}
	}
}

func sameLive(a, b []recall.LiveItem) bool {
	return slices.EqualFunc(a, b, func(x, y recall.LiveItem) bool { return x.Ref == y.Ref && bytes.Equal(x.Item, y.Item) })
}

// indexHome is a home whose project "p" holds logs of every state the
// index describes, with what a correct List returns for them.
type indexHome struct {
	home, index string
	want        []recall.Meta // List(p, archived included), in order
	logs        map[string][]byte
	stats       []string // "<ino> <size> <mtime>" of each log, as the index writes them
}

func makeIndexHome(f *testing.F) indexHome {
	f.Helper()
	ctx := context.Background()
	home := f.TempDir()
	s, err := filestore.Open(filestore.Options{Dir: home, Sync: filestore.SyncNever})
	if err != nil {
		f.Fatal(err)
	}
	old := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 6 {
		k := recall.Key{Project: "p", Session: fmt.Sprintf("s%d", i)}
		es := []recall.Entry{recall.Message("user", fmt.Sprintf("q%d", i)).Entry()}
		es[0].Seq, es[0].Time = 1, old.Add(time.Duration(i)*time.Minute)
		if _, err := s.Import(ctx, k, es...); err != nil {
			f.Fatal(err)
		}
	}
	must := func(_ recall.Meta, err error) {
		if err != nil {
			f.Fatal(err)
		}
	}
	must(recall.NewSession(s, recall.Key{Project: "p", Session: "s1"}).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}))
	must(recall.NewSession(s, recall.Key{Project: "p", Session: "s2"}).SetTitle(ctx, "titled", recall.TitleUser))
	if _, err := s.Append(ctx, recall.Key{Project: "p", Session: "s3", Subpath: "subagents/a"}, recall.Guard{}, recall.Message("user", "sub").Entry()); err != nil {
		f.Fatal(err)
	}
	if _, err := s.Pop(ctx, recall.Key{Project: "p", Session: "s4"}); err != nil {
		f.Fatal(err)
	}
	page, err := s.List(ctx, "p", recall.ListOptions{Limit: -1, IncludeArchived: true})
	if err != nil {
		f.Fatal(err)
	}
	// The seed is the journal as a rewrite leaves it: a line per log,
	// each with the log's current stat (sealLines keeps those lines'
	// crcs, so the fuzzer's changes to them are damage, not forgery).
	if err := filestore.Rewrite(s, "p"); err != nil {
		f.Fatal(err)
	}
	s.Close()
	ih := indexHome{home: home, index: filepath.Join(home, "projects", "p", "#index-v5"), want: page.Sessions, logs: map[string][]byte{}}
	if len(ih.want) != 6 {
		f.Fatalf("the seed home lists %d sessions, want 6", len(ih.want))
	}
	for _, m := range ih.want {
		path := filepath.Join(home, "projects", "p", m.Key.Session+".jsonl")
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		ih.logs[path] = data
	}
	err = filepath.WalkDir(filepath.Join(home, "projects", "p"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		st, err := filestore.IndexStat(path)
		if err != nil {
			return err
		}
		ih.stats = append(ih.stats, st)
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	return ih
}

// FuzzIndexDecode writes arbitrary bytes as a project's index (the List
// cache), then lists the project with a new store. The listing must be
// exactly what the logs say: the index can neither hide a session, nor
// invent one, nor change its metadata. Then the index must have been
// rebuilt: with every log's bytes replaced by garbage of the same size and
// its mtime put back (so only the index knows what it held), yet another
// store still lists the sessions correctly.
//
// When the first byte of the input is odd, every line of the rest gets a
// correct crc, so the fuzzer explores the record parser behind the crc
// check too.
func FuzzIndexDecode(f *testing.F) {
	ih := makeIndexHome(f)
	good, err := os.ReadFile(ih.index)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{})
	f.Add(append([]byte{1}, good...))
	f.Add(good[:len(good)/2])
	f.Add([]byte("\x01s0 -\ns1 1 2 3 4 5 e 0 0 {}\ns2 1 2 3 4 5 a 0 0 {\"item_count\":99}\nghost 1 2 3 4 5 - 0 0 {\"key\":{\"project\":\"p\",\"session\":\"ghost\"}}\n"))
	f.Add(bytes.ReplaceAll(good, []byte(`"item_count":1`), []byte(`"item_count":7`)))
	f.Fuzz(func(t *testing.T, index []byte) {
		if len(index) > 0 && index[0]%2 == 1 {
			index = sealLines(index[1:], ih.stats)
		}
		// A journal whose first line is this boot's header is believed
		// whole (index.go, point 5): deleting lines of the seed would
		// forge one that hides sessions, which is not damage. Without the
		// header, what is fuzzed is the decoder and the rebuild.
		index = dropHeader(index)
		if err := os.WriteFile(ih.index, index, 0o600); err != nil {
			t.Fatal(err)
		}
		listMatches(t, ih, "with the fuzzed index")
		// Only the index knows the logs now.
		defer func() {
			for path, data := range ih.logs {
				damageInPlace(t, path, data)
			}
		}()
		for path, data := range ih.logs {
			damageInPlace(t, path, bytes.Repeat([]byte("?"), len(data)))
		}
		listMatches(t, ih, "from the rebuilt index alone")
	})
}

// listMatches lists project p of ih with a new store and compares it with
// ih.want: the same sessions, in order, with the same metadata; and the
// same for the main sessions left out when archived ones are.
func listMatches(t *testing.T, ih indexHome, what string) {
	t.Helper()
	ctx := context.Background()
	s, err := filestore.Open(filestore.Options{Dir: ih.home, Sync: filestore.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, err := s.List(ctx, "p", recall.ListOptions{Limit: -1, IncludeArchived: true})
	if err != nil {
		t.Fatalf("List %s: %v", what, err)
	}
	if len(page.Sessions) != len(ih.want) {
		idx, _ := os.ReadFile(ih.index)
		t.Fatalf("List %s: %d sessions %v, want %d; the index:\n%s", what, len(page.Sessions), metaKeys(page.Sessions), len(ih.want), idx)
	}
	for i, m := range page.Sessions {
		if d := storetest.MetaDiff(m, ih.want[i], true); d != "" {
			t.Fatalf("List %s: session %d (%s): %s", what, i, m.Key, d)
		}
	}
	page, err = s.List(ctx, "p", recall.ListOptions{Limit: 2})
	if err != nil || len(page.Sessions) != 2 || page.Next == "" {
		t.Fatalf("List %s, limit 2 = %v, %v", what, metaKeys(page.Sessions), err)
	}
	ps, err := recall.Projects(ctx, s)
	if err != nil || len(ps) != 1 || ps[0].Sessions != len(ih.want) {
		t.Fatalf("Projects %s = %+v, %v", what, ps, err)
	}
}

func metaKeys(ms []recall.Meta) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Key.String())
	}
	return out
}

// damageInPlace overwrites a log's bytes without changing its inode, size
// or mtime: the change is invisible to the index's staleness check.
func damageInPlace(t *testing.T, path string, data []byte) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(data, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(path, fi.ModTime(), fi.ModTime())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// sealLines gives every line of b a correct journal crc (the first 8 bytes
// and a space), so the records behind it reach the parser. A line that
// holds the inode, size and mtime of a real log keeps the crc it has: the
// index trusts a record with a correct crc and the log's exact stat (that
// is what a cache keyed by stat means), so sealing it would not simulate
// damage but forge a record, which only a deliberate writer can do.
func sealLines(b []byte, stats []string) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(b, []byte{'\n'}) {
		if len(line) == 0 {
			continue // after the last newline
		}
		body, nl := bytes.CutSuffix(line, []byte{'\n'})
		if slices.ContainsFunc(stats, func(st string) bool { return bytes.Contains(body, []byte(st)) }) {
			out = append(out, line...)
			continue
		}
		if len(body) >= 9 && body[8] == ' ' && isHex(body[:8]) {
			body = body[9:] // replace the crc it has
		}
		out = fmt.Appendf(out, "%08x %s", crc32.ChecksumIEEE(body), body)
		if nl {
			out = append(out, '\n')
		}
	}
	return out
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// dropHeader removes the #boot lines of a journal.
func dropHeader(index []byte) []byte {
	var out []byte
	for line := range bytes.Lines(index) {
		if !bytes.Contains(line, []byte("#boot ")) {
			out = append(out, line...)
		}
	}
	return out
}
