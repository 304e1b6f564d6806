package gemini

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer/watch"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
)

// recall import --watch gemini follows the recordings: a line Gemini CLI
// appends is imported, the recording being the transcript the watcher
// follows; logs.json, which Import alone reads, gives nothing here.
func TestWatch(t *testing.T) {
	tmp := copyFixture(t)
	st := memstore.New(memstore.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	watching := make(chan struct{})
	done := make(chan error, 1)
	src := watch.Source{Tool: Tool, Roots: []string{tmp}, Find: Find, Mapper: NewMapper}
	go func() {
		done <- watch.Run(ctx, st, []watch.Source{src}, watch.Options{Report: func(r watch.Report) {
			if r.Watching != nil {
				close(watching)
			}
		}})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	<-watching
	_, before, _ := logOf(t, st, mainKey)
	if len(before) != len(wantMain) {
		t.Fatalf("at the start: %d items", len(before))
	}
	appendTo(t, filepath.Join(tmp, "app", "chats", filepath.Base(mainFile)), `at?"}]}`+"\n")
	testkit.Eventually(t, 10*time.Second, "the completed line imported", func() bool {
		m, err := st.Stat(ctx, mainKey)
		return err == nil && m.ItemCount == 4
	})
	if _, err := st.Stat(ctx, recall.Key{Project: "-home-dev-app", Session: logsSID}); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("the watcher imported a session of logs.json: %v", err)
	}
}
