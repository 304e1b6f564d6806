package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/secrets"
	"github.com/recallkit/recall/storekit"
)

const mirrorSecret = "ghp_4fJ9kQ2mX7pL0vR8sT3wY6zB1cN5dH9gK2aE"

// redactable writes a session holding mirrorSecret through s.
func redactable(t *testing.T, s recall.Store, k recall.Key) {
	t.Helper()
	if _, err := s.Append(context.Background(), k, recall.Guard{}, recall.ItemEntries(item("hello"), item("GH_TOKEN="+mirrorSecret), item("bye"))...); err != nil {
		t.Fatal(err)
	}
}

// dirHolds reports the files under dir that hold s.
func dirHolds(t *testing.T, dir, s string) []string {
	t.Helper()
	var held []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(s)) {
			held = append(held, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// redactThrough redacts k through s with the default rules.
func redactThrough(t *testing.T, s recall.Store, k recall.Key) secrets.Redacted {
	t.Helper()
	r, err := secrets.New(secrets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Session(context.Background(), s, k, false)
	if err != nil || res.Report.Total() != 1 {
		t.Fatalf("redact: %+v, %v", res, err)
	}
	return res
}

// A redaction through the mirror rewrites the replica's copies of the
// entries too: no file of a file-store replica holds the secret after,
// its log ends with the same redaction entry, and it verifies. A replica
// that was down when the redaction happened (here: a mirror started
// after it, with no cursor) is rewritten by the catch-up, not reported
// diverged.
func TestRedactReplicates(t *testing.T) {
	ctx := context.Background()
	open := func(dir string) *filestore.Store {
		s, err := filestore.Open(filestore.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, later := range []bool{false, true} {
		pdir, dir := t.TempDir(), t.TempDir()
		primary, replica := open(pdir), open(dir)
		m := newMirror(t, primary, replica, fastOptions(t.TempDir()))
		k := recall.Key{Project: "p", Session: "s"}
		redactable(t, m, k)
		flush(t, m, 10*time.Second)
		if len(dirHolds(t, dir, mirrorSecret)) == 0 {
			t.Fatal("the replica never held the secret")
		}
		if later {
			m.Close() // closes both stores
			primary = open(pdir)
			redactThrough(t, primary, k) // while no mirror runs
			replica = open(dir)
			m = newMirror(t, primary, replica, fastOptions(""))
			if _, err := m.Append(ctx, k, recall.Guard{}, item("after").Entry()); err != nil {
				t.Fatal(err)
			}
		} else {
			redactThrough(t, m, k)
		}
		flush(t, m, 10*time.Second)
		if held := dirHolds(t, dir, mirrorSecret); len(held) > 0 {
			t.Errorf("later=%v: the replica's files still hold the secret: %v", later, held)
		}
		_, mine, _ := primary.Load(ctx, k)
		_, theirs, err := replica.Load(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameEntries(mine, theirs); err != nil {
			t.Errorf("later=%v: the replica's log differs from the primary's: %v", later, err)
		}
		if err := storekit.Verify(ctx, replica); err != nil {
			t.Errorf("later=%v: %v", later, err)
		}
		m.Close()
	}
}

// noRewrite hides a store's storekit.Rewriter.
type noRewrite struct{ recall.Store }

// A replica that cannot rewrite its logs stops the session at the
// redaction and Status says why, rather than keeping the plaintext
// quietly.
func TestRedactReplicaCannotRewrite(t *testing.T) {
	primary, replica := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	m := newMirror(t, primary, noRewrite{replica}, fastOptions(t.TempDir()))
	k := recall.Key{Project: "p", Session: "s"}
	redactable(t, m, k)
	flush(t, m, 10*time.Second)
	redactThrough(t, m, k)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Flush(ctx); !errors.Is(err, mirror.ErrNotFlushed) {
		t.Fatalf("flush = %v, want ErrNotFlushed", err)
	}
	var found bool
	for _, st := range m.Status(ctx) {
		if st.Key == k && st.Stuck && strings.Contains(st.LastError, "cannot rewrite") {
			found = true
		}
	}
	if !found {
		t.Errorf("Status does not report the session: %+v", m.Status(ctx))
	}
}
