package storeurl

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/secrets"
)

// A fake GitHub token (random, never issued).
const fakeToken = "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"

// TestRedactParam: redact=1 wraps any store in the redaction, so that
// the file store's files never hold the secret; redact=0 and no
// parameter leave the store as it is; another value is an invalid URL.
func TestRedactParam(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := Open(ctx, "file://"+dir+"?sync=never&redact=1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := recall.As[*secrets.Store](st); !ok {
		t.Fatalf("redact=1 opened a %T", st)
	}
	if err := recall.NewSession(st, key).AddItems(ctx, item("token "+fakeToken)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if bytes.Contains(b, []byte(fakeToken)) {
			t.Errorf("%s holds the token", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, u := range []string{"mem://", "mem://?redact=0"} {
		st, err := Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := recall.As[*secrets.Store](st); ok {
			t.Errorf("%s opened a redacting store", u)
		}
		st.Close()
	}
	if _, err := Open(ctx, "mem://?redact=maybe"); !errors.Is(err, ErrInvalidURL) {
		t.Errorf("redact=maybe: %v, want ErrInvalidURL", err)
	}
}
