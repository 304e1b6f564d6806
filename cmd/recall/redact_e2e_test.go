package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// TestRedactAfterTheFact imports the secrets fixture without redaction,
// builds the search index, then runs recall redact: --dry-run reports and
// changes nothing; the real run leaves no byte of a secret in any file of
// the store (the logs, the list index, the search index; the SQLite
// database), the log ends with a redaction entry naming each rule and
// none of the secrets, recall check passes, and a second run finds
// nothing.
func TestRedactAfterTheFact(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"file", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if store == "sqlite" {
				e.store = "sqlite://" + filepath.Join(e.home, "recall.db")
			}
			e.ok("", "import", "claude-code", "--no-redact", secretsFixturePath(t))
			e.ok("", "search", "deploy")
			dry := e.ok("", "redact", secretsSID, "--dry-run")
			contains(t, "dry run", dry.stdout, "would redact 6 secrets: 2 aws-access-token, 1 github-pat, 1 private-key, 1 slack-bot-token, 1 url-password")
			if found := storeHolds(t, e.home, fixtureSecrets); len(found) != len(fixtureSecrets) {
				t.Fatalf("after a dry run the store holds %d of the %d secrets", len(found), len(fixtureSecrets))
			}

			r := e.ok("", "redact", secretsSID)
			contains(t, "redact", r.stdout, "1 sessions scanned, 1 holding secrets: redacted 6 secrets")
			if found := storeHolds(t, e.home, fixtureSecrets); len(found) > 0 {
				t.Errorf("after recall redact the store holds %q", found)
			}
			e.ok("", "check")
			show := e.ok("", "show", secretsSID)
			contains(t, "show", show.stdout, "GH_TOKEN=[REDACTED:github-pat]")
			if hits := e.ok("", "search", "ghp_4fJ9kQ2mX7pL0vR8sT3wY6zB1cN5dH9gK2aE").stdout; strings.Contains(hits, secretsSID[:8]) {
				t.Errorf("search still finds the secret: %s", hits)
			}

			var log []recall.Entry
			for _, line := range strings.Split(strings.TrimSpace(e.ok("", "export", secretsSID, "--format", "jsonl").stdout), "\n") {
				var en recall.Entry
				if json.Unmarshal([]byte(line), &en) == nil && en.Kind != "" {
					log = append(log, en)
				}
			}
			var note storekit.Redaction
			if len(log) == 0 || log[len(log)-1].Kind != recall.KindRedaction || json.Unmarshal(log[len(log)-1].Data, &note) != nil {
				t.Fatalf("the log does not end with a redaction entry: %d entries", len(log))
			}
			rules := map[string]int{}
			for _, re := range note.Entries {
				for _, f := range re.Findings {
					rules[f.Rule]++
				}
			}
			if rules["aws-access-token"] != 2 || rules["github-pat"] != 1 || rules["private-key"] != 1 || rules["url-password"] != 1 {
				t.Errorf("the redaction entry's findings: %v", rules)
			}

			again := e.ok("", "redact", "--all")
			contains(t, "second run", again.stdout, "0 holding secrets")
		})
	}
}

// TestRedactUsage: IDs and --all exclude each other, and one is needed.
func TestRedactUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fails(exitUsage, "IDs or --all", "redact")
	e.fails(exitUsage, "IDs or --all", "redact", "--all", "abc")
}
