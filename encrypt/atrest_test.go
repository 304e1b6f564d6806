package encrypt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/encrypt"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/redisstore"
)

// The plaintext the at-rest tests write, and look for in what the stores
// keep: none of it may be found there.
var secrets = []string{"zebraplaintext7731", "Titlesecret4412", "compactsecret5521", "subagentsecret9044", "firstprompt6630"}

// writeSecrets writes sessions that hold every secret through st: items
// (the first a user prompt), a user title, an auto title, a compaction, a
// subagent record, a fork, labels and metadata (which are not sealed, and
// hold no secret). It returns the keys written.
func writeSecrets(t testing.TB, st recall.Store) []recall.Key {
	t.Helper()
	ctx := context.Background()
	key := recall.Key{Project: "proj", Session: "s1"}
	msg := func(role, text string) recall.Item {
		return recall.Item(fmt.Sprintf(`{"type":"message","role":%q,"content":%q}`, role, text))
	}
	sess := recall.NewSession(st, key)
	if _, err := sess.Create(ctx, recall.CreateOptions{Title: "Titlesecret4412 of s1", Items: []recall.Item{msg("user", "firstprompt6630 hello")}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.AddItems(ctx, msg("assistant", "the zebraplaintext7731 answer"), msg("user", "more zebraplaintext7731")); err != nil {
		t.Fatal(err)
	}
	m, err := st.Stat(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	comp := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: m.LastSeq, Replaced: 3, Items: []recall.Item{msg("user", "summary compactsecret5521")}})
	if _, err := st.Append(ctx, key, recall.IfLastSeq(m.LastSeq), comp); err != nil {
		t.Fatal(err)
	}
	sub := recall.Key{Project: "proj", Session: "s1", Subpath: "subagents/a1"}
	if _, err := st.Append(ctx, sub, recall.Guard{}, msg("user", "subagentsecret9044").Entry()); err != nil {
		t.Fatal(err)
	}
	other := recall.Key{Project: "proj", Session: "s2"}
	if _, err := st.Append(ctx, other, recall.Guard{}, msg("user", "zebraplaintext7731 again").Entry(), recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "auto Titlesecret4412", Source: recall.TitleAuto})); err != nil {
		t.Fatal(err)
	}
	fork := recall.Key{Project: "proj", Session: "s3"}
	if _, err := recall.NewSession(st, key).Fork(ctx, 0, fork); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(st, key).ChangeMeta(ctx, recall.MetaChange{Labels: []string{"label-visible"}}); err != nil {
		t.Fatal(err)
	}
	return []recall.Key{key, sub, other, fork}
}

// checkSecrets reads the sessions back through st and checks that the
// secrets are all there, in plaintext.
func checkSecrets(t testing.TB, st recall.Store) {
	t.Helper()
	ctx := context.Background()
	var all bytes.Buffer
	for _, key := range []recall.Key{{Project: "proj", Session: "s1"}, {Project: "proj", Session: "s1", Subpath: "subagents/a1"}, {Project: "proj", Session: "s2"}, {Project: "proj", Session: "s3"}} {
		m, entries, err := st.Load(ctx, key)
		if err != nil {
			t.Fatalf("load %s: %v", key, err)
		}
		fmt.Fprintln(&all, m.Title, m.FirstPrompt)
		for _, e := range entries {
			all.Write(e.Data)
		}
	}
	for _, s := range secrets {
		if !bytes.Contains(all.Bytes(), []byte(s)) {
			t.Errorf("%s not read back through the encrypted store", s)
		}
	}
	p, err := st.List(ctx, "proj", recall.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range p.Sessions {
		if m.Key.Session == "s1" && (m.Title != "Titlesecret4412 of s1" || m.FirstPrompt != "firstprompt6630 hello" || !slices.Equal(m.Labels, []string{"label-visible"})) {
			t.Errorf("List of s1: title %q, first prompt %q, labels %q", m.Title, m.FirstPrompt, m.Labels)
		}
	}
}

// wantNoSecrets fails if raw holds any secret.
func wantNoSecrets(t testing.TB, where string, raw []byte) {
	t.Helper()
	if len(raw) == 0 {
		t.Fatalf("%s: nothing read", where)
	}
	for _, s := range secrets {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("%s holds %q in plaintext", where, s)
		}
	}
	// The JSON of the items is inside the seal too.
	if bytes.Contains(raw, []byte(`"role":"user"`)) {
		t.Errorf("%s holds an item in plaintext", where)
	}
}

// readDir returns the bytes of every file under dir.
func readDir(t testing.TB, dir string) []byte {
	t.Helper()
	var all []byte
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		all = append(all, b...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func TestAtRestFileStore(t *testing.T) {
	dir := t.TempDir()
	st := encrypt.Wrap(openFile(t, dir), testRing(t), encrypt.Options{})
	writeSecrets(t, st)
	checkSecrets(t, st)
	st.Close()
	wantNoSecrets(t, "file store "+dir, readDir(t, dir))
}

func TestAtRestSQLite(t *testing.T) {
	dir := t.TempDir()
	st := encrypt.Wrap(openSQLite(t, filepath.Join(dir, "recall.db")), testRing(t), encrypt.Options{})
	writeSecrets(t, st)
	checkSecrets(t, st)
	st.Close()
	wantNoSecrets(t, "SQLite files", readDir(t, dir))
}

func TestAtRestPostgres(t *testing.T) {
	dsn, schema := testsvc.PostgresSchema(t)
	st := encrypt.Wrap(openPostgres(t, dsn, schema), testRing(t), encrypt.Options{})
	defer st.Close()
	writeSecrets(t, st)
	checkSecrets(t, st)
	wantNoSecrets(t, "PostgreSQL schema "+schema, testsvc.SchemaText(t, dsn, schema))
}

func TestAtRestRedis(t *testing.T) {
	url, prefix := testsvc.RedisPrefix(t)
	ctx := context.Background()
	inner, err := redisstore.Open(ctx, url, redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	st := encrypt.Wrap(inner, testRing(t), encrypt.Options{})
	defer st.Close()
	writeSecrets(t, st)
	checkSecrets(t, st)
	wantNoSecrets(t, "Redis keys "+prefix+"*", testsvc.PrefixText(t, url, prefix))
}

// TestMirrorReplicatesCiphertext puts a mirror under the encrypted store:
// the replica receives the sealed log, and opens with the key.
func TestMirrorReplicatesCiphertext(t *testing.T) {
	ctx := context.Background()
	primaryDir, replicaDir := t.TempDir(), t.TempDir()
	m, err := mirror.New(openFile(t, primaryDir), openFile(t, replicaDir), mirror.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	st := encrypt.Wrap(m, testRing(t), encrypt.Options{})
	writeSecrets(t, st)
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	wantNoSecrets(t, "primary", readDir(t, primaryDir))
	wantNoSecrets(t, "replica", readDir(t, replicaDir))
	replica := encrypt.Wrap(openFile(t, replicaDir), testRing(t), encrypt.Options{})
	defer replica.Close()
	checkSecrets(t, replica)
}

// TestExportDecrypts exports a session of an encrypted store: the key
// holder gets the plaintext.
func TestExportDecrypts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := encrypt.Wrap(openFile(t, dir), testRing(t), encrypt.Options{})
	defer st.Close()
	keys := writeSecrets(t, st)
	var out bytes.Buffer
	if err := export.Stream(ctx, &out, export.FormatJSONL, st, keys[0]); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"zebraplaintext7731", "Titlesecret4412", "compactsecret5521", "firstprompt6630"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("export lacks %s:\n%s", s, out.String())
		}
	}
	// An export read back into another encrypted store is sealed there.
	dir2 := t.TempDir()
	st2 := encrypt.Wrap(openFile(t, dir2), testRing(t), encrypt.Options{})
	defer st2.Close()
	if err := export.ImportJSONL(ctx, st2, &out, export.ImportOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	wantNoSecrets(t, "imported store", readDir(t, dir2))
	_, entries, err := st2.Load(ctx, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(entries)
	if !bytes.Contains(raw, []byte("zebraplaintext7731")) {
		t.Errorf("imported session does not read back: %s", raw)
	}
}
