package importer_test

import (
	"context"
	"fmt"
	"log"

	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/claudecode"
	"github.com/recallkit/recall/importer/codex"
	"github.com/recallkit/recall/memstore"
)

// Import Claude Code transcripts, then see what importing Codex rollouts
// would write.
func Example_tools() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()
	projects, rollouts := "claudecode/testdata/projects", []string{"codex/testdata/sessions"}

	sum, err := claudecode.Import(ctx, store, projects, importer.Options{})       // projects: claudecode.DefaultPath(), ~/.claude/projects
	sum, err = codex.Import(ctx, store, rollouts, importer.Options{DryRun: true}) // rollouts: codex.DefaultPaths(), ~/.codex/sessions and archived_sessions
	fmt.Println(sum.Sessions.New, sum.Sessions.Updated, sum.Items, sum.Skipped)

	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1 0 10 map[event_msg:agent_message:1 event_msg:token_count:1 event_msg:user_message:1 malformed:1 torn:1 unknown:world_state:1]
}
