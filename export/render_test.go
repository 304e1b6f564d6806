package export_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/recallkit/recall/export"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run 'go test ./export -run Golden -update' to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update after checking the change):\n%s", name, got)
	}
}

func TestMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := export.Markdown(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "session.md", b.Bytes())
}

func TestHTMLGolden(t *testing.T) {
	var b bytes.Buffer
	if err := export.HTML(&b, fixture()); err != nil {
		t.Fatal(err)
	}
	golden(t, "session.html", b.Bytes())
}
