package watch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/recallkit/recall/importer/claudecode"
	"github.com/recallkit/recall/importer/watch"
	"github.com/recallkit/recall/memstore"
)

// A watcher follows a Claude Code projects folder and imports a
// transcript written once it watches; here it stops after that import.
func Example() {
	projects, err := os.MkdirTemp("", "projects")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(projects)
	st := memstore.New(memstore.Options{})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	src := watch.Source{Tool: claudecode.Tool, Roots: []string{projects}, Find: claudecode.Find, Mapper: claudecode.NewMapper}
	err = watch.Run(ctx, st, []watch.Source{src}, watch.Options{
		Report: func(r watch.Report) {
			switch {
			case r.Watching != nil:
				// The folder is under watch: Claude Code writes a
				// transcript in a new project's folder.
				dir := filepath.Join(projects, "-home-dev-app")
				_ = os.Mkdir(dir, 0o755)
				_ = os.WriteFile(filepath.Join(dir, "5b4a1c52-0d2e-4c6e-9a53-2f1d3e4b5a61.jsonl"), []byte(
					`{"type":"user","cwd":"/home/dev/app","sessionId":"5b4a1c52-0d2e-4c6e-9a53-2f1d3e4b5a61","uuid":"u1","timestamp":"2025-10-01T09:00:00.000Z","message":{"role":"user","content":"Hello"}}`+"\n"+
						`{"type":"assistant","cwd":"/home/dev/app","sessionId":"5b4a1c52-0d2e-4c6e-9a53-2f1d3e4b5a61","uuid":"u2","timestamp":"2025-10-01T09:00:01.000Z","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Hi."}]}}`+"\n"), 0o644)
			case r.Summary != nil:
				fmt.Printf("%s: %d items from %s\n", r.Tool, r.Summary.Items, filepath.Base(r.File))
				stop()
			}
		},
	})
	fmt.Println("stopped:", err)
	// Output:
	// claude-code: 2 items from 5b4a1c52-0d2e-4c6e-9a53-2f1d3e4b5a61.jsonl
	// stopped: <nil>
}
