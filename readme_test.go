package recall_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every Go snippet of the README runs as written: each stands, but for
// spacing, in an Example function of some package (the README's own are
// in example_readme_test.go files), whose output go test checks.
func TestReadmeSnippetsAreExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var examples strings.Builder
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if name := d.Name(); !d.IsDir() && strings.HasPrefix(name, "example") && strings.HasSuffix(name, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			examples.WriteString(oneSpaced(string(b)) + "\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	snippets := regexp.MustCompile("(?s)\n```go\n(.*?)\n```").FindAllStringSubmatch(string(readme), -1)
	if len(snippets) == 0 {
		t.Fatal("the README has no Go snippet")
	}
	for _, s := range snippets {
		if !strings.Contains(examples.String(), oneSpaced(s[1])) {
			t.Errorf("this README snippet is in no example_*_test.go file, so nothing runs it:\n%s", s[1])
		}
	}
}

// oneSpaced returns s with each run of white space made one space.
func oneSpaced(s string) string { return strings.Join(strings.Fields(s), " ") }
