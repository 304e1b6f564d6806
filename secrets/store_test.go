package secrets_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/secrets"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// TestConformance runs the conformance suite on a redacting memory store:
// the suite's items hold no secret, so the wrapper must change nothing.
func TestConformance(t *testing.T) {
	r := newRedactor(t)
	storetest.Run(t, func(t *testing.T) recall.Store {
		return secrets.NewStore(memstore.New(memstore.Options{}), r)
	})
}

// TestStoreOnWrite writes the corpus's secrets through a redacting file
// store, as items, a title and a compaction, by Append and by Import, and
// then reads every byte under the store's directory: none of the secrets
// is there, and the report counts them.
func TestStoreOnWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fst, err := filestore.Open(filestore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	st := secrets.NewStore(fst, newRedactor(t))
	defer st.Close()

	var values []string
	var items []recall.Item
	for _, c := range loadCorpus(t) {
		if c.Kind != "secret" {
			continue
		}
		values = append(values, c.Value)
		for _, p := range placements {
			items = append(items, p.item(c.Text))
		}
	}
	key := recall.Key{Project: "p", Session: "appended"}
	sess := recall.NewSession(st, key)
	if err := sess.AddItems(ctx, items...); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.SetTitle(ctx, "fix login for "+githubPAT, recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	comp := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: int64(len(items) + 1), Replaced: len(items),
		Items: []recall.Item{placements[0].item("summary: the user's key is " + awsKey)}})
	if _, err := st.Append(ctx, key, recall.Guard{}, comp); err != nil {
		t.Fatal(err)
	}
	// Import, as a replica receives entries, with seqs and times.
	_, log, err := st.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	imported := recall.Key{Project: "p", Session: "imported"}
	raw := []recall.Entry{{Seq: 1, Kind: recall.KindItem, Time: log[0].Time, Data: json.RawMessage(placements[2].item("token " + githubPAT))}}
	if _, err := st.Import(ctx, imported, raw...); err != nil {
		t.Fatal(err)
	}

	rep := st.Redacted()
	if want := len(items) + 3; rep.Total() < want {
		t.Errorf("report counts %d secrets (%v), want at least %d", rep.Total(), rep, want)
	}
	// What is stored is what reads return, and it is valid JSON.
	got, _, err := st.Items(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 { // the compaction replaced the items with its summary
		t.Fatalf("%d items after the compaction, want 1", len(got))
	}
	if !strings.Contains(string(got[0].Item), "[REDACTED:aws-access-token]") {
		t.Errorf("summary not redacted: %s", got[0].Item)
	}
	if m, _ := st.Stat(ctx, key); m.Title != "fix login for [REDACTED:github-pat]" {
		t.Errorf("title %q", m.Title)
	}
	values = append(values, awsKey, githubPAT)
	grepStore(t, dir, values)
}

// grepStore fails if any file under dir holds any of values, as written
// or JSON-escaped.
func grepStore(t *testing.T, dir string, values []string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, v := range values {
			esc := strings.Trim(string(mustJSON(v)), `"`)
			if bytes.Contains(b, []byte(v)) || bytes.Contains(b, []byte(esc)) {
				t.Errorf("%s holds the secret %.12s…", path, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no file under the store")
	}
}

// TestStoreAbilities checks that the wrapper unwraps, so that recall.As
// finds the wrapped store's abilities, and that those abilities cannot
// write a secret: a fork copies what the wrapper already redacted.
func TestStoreAbilities(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.Options{})
	st := secrets.NewStore(mem, newRedactor(t))
	if st.Unwrap() != recall.Store(mem) {
		t.Fatal("Unwrap does not return the wrapped store")
	}
	if _, ok := recall.As[storekit.Purger](st); !ok {
		t.Fatal("recall.As does not find the wrapped store's Purger")
	}
	key := recall.Key{Project: "p", Session: "s"}
	if err := recall.NewSession(st, key).AddItems(ctx, placements[0].item("key "+awsKey)); err != nil {
		t.Fatal(err)
	}
	fork := recall.Key{Project: "p", Session: "f"}
	if _, err := recall.NewSession(st, key).Fork(ctx, 0, fork); err != nil {
		t.Fatal(err)
	}
	_, log, err := mem.Load(ctx, fork)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		if bytes.Contains(e.Data, []byte(awsKey)) {
			t.Errorf("the fork holds the secret: %s", e.Data)
		}
	}
}

// TestStoreFailedWrite checks that a write the store refuses is not
// counted, and that metadata entries are written as they are.
func TestStoreFailedWrite(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.Options{})
	st := secrets.NewStore(mem, newRedactor(t))
	key := recall.Key{Project: "p", Session: "s"}
	_, err := st.Append(ctx, key, recall.IfNew(), recall.Item(`{"text":"`+awsKey+`"}`).Entry())
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Append(ctx, key, recall.IfNew(), recall.Item(`{"text":"`+githubPAT+`"}`).Entry())
	if !errors.Is(err, recall.ErrConflict) {
		t.Fatalf("append to an existing session with IfNew: %v", err)
	}
	if rep := st.Redacted(); rep.String() != "1 secret: 1 aws-access-token" {
		t.Errorf("report %q", rep)
	}
	v := "label-" + awsKey
	if _, err := recall.NewSession(st, key).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{"note": &v}}); err != nil {
		t.Fatal(err)
	}
	if m, _ := st.Stat(ctx, key); m.Metadata["note"] != v {
		t.Errorf("metadata changed: %q", m.Metadata["note"])
	}
}

// TestStoreConcurrent appends secrets from many goroutines through one
// wrapper (run it with -race): every one is redacted and counted once.
func TestStoreConcurrent(t *testing.T) {
	ctx := context.Background()
	st := secrets.NewStore(memstore.New(memstore.Options{}), newRedactor(t))
	const writers, each = 8, 20
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			sess := recall.NewSession(st, recall.Key{Project: "p", Session: "s" + string(rune('a'+w))})
			for range each {
				if err := sess.AddItems(ctx, placements[w%len(placements)].item("key "+awsKey)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if rep := st.Redacted(); rep["aws-access-token"] != writers*each || rep.Total() != writers*each {
		t.Errorf("report %v, want %d aws-access-token", rep, writers*each)
	}
}
