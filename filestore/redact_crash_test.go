package filestore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/secrets"
	"github.com/recallkit/recall/storekit"
)

var redactKey = recall.Key{Project: "redact", Session: "s"}

func init() { childRoles["redact"] = childRedact }

// childRedact redacts redactKey (role "redact"): it says "ready", runs
// secrets.Redactor.Session, says "done" and waits for the kill.
func childRedact() error {
	s, err := childStore(filestore.SyncAlways)
	if err != nil {
		return err
	}
	r, err := secrets.New(secrets.Options{})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	if _, err := r.Session(context.Background(), s, redactKey, false); err != nil {
		return err
	}
	fmt.Println("done")
	select {} // wait for the kill
}

// TestRedactSIGKILL kills a child redacting a session (a rewrite of most
// of its log) at random moments before, during and after the rewrite, and
// checks after every kill that the log's bytes are exactly those before
// the redaction or exactly those after it, never a mix, that the store
// verifies, and that the session goes on.
func TestRedactSIGKILL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pristine := t.TempDir()
	s := openStore(t, pristine)
	for i := range 400 {
		text := fmt.Sprintf("item %d %s", i, bytes.Repeat([]byte("x"), 600))
		if i%3 == 0 {
			text += fmt.Sprintf(" GH_TOKEN=ghp_4fJ9kQ2mX7pL0vR8sT3wY6zB1cN5dH9g%04d", i)
		}
		if _, err := s.Append(ctx, redactKey, recall.Guard{}, recall.Message("user", text).Entry()); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	logPath := filepath.Join("projects", redactKey.Project, redactKey.Session+".jsonl")
	old, err := os.ReadFile(filepath.Join(pristine, logPath))
	if err != nil {
		t.Fatal(err)
	}

	// Calibrate: how long a child takes from "ready" to "done", and the
	// bytes it leaves.
	calib := copyHome(t, pristine)
	c := startPurgeChild(t, testkit.Command("redact", envHome+"="+calib))
	start := time.Now()
	if !c.WaitLines(2, time.Minute) || c.Lines()[1] != "done" {
		t.Fatalf("calibration child said %q\n%s", c.Lines(), c.Stderr())
	}
	took := time.Since(start)
	c.Kill()
	redacted, err := os.ReadFile(filepath.Join(calib, logPath))
	if err != nil || bytes.Equal(redacted, old) || bytes.Contains(redacted, []byte("ghp_")) {
		t.Fatalf("the calibration redaction left %d bytes (%v), the same as before: %v", len(redacted), err, bytes.Equal(redacted, old))
	}

	rounds := testkit.Size(6, 40)
	rng := testkit.Rand(t)
	var nBefore, nAfter int
	for round := range rounds {
		home := copyHome(t, pristine)
		c := startPurgeChild(t, testkit.Command("redact", envHome+"="+home))
		time.Sleep(time.Duration(rng.Int64N(int64(took)*5/4 + 1))) // a random moment to kill
		c.Kill()

		got, err := os.ReadFile(filepath.Join(home, logPath))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case bytes.Equal(got, old):
			nBefore++
		case sameRedacted(got, redacted):
			nAfter++
		default:
			t.Fatalf("round %d: after SIGKILL the log holds %d bytes: neither the %d before the redaction nor the %d after", round, len(got), len(old), len(redacted))
		}
		st := openStore(t, home)
		if err := storekit.Verify(ctx, st); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if _, err := st.Append(ctx, redactKey, recall.Guard{}, recall.Message("user", "go on").Entry()); err != nil {
			t.Fatalf("round %d: append: %v", round, err)
		}
		st.Close()
		os.RemoveAll(home)
	}
	t.Logf("redaction took %v; %d kills left the log as before, %d as after", took, nBefore, nAfter)
}

// sameRedacted reports whether two logs a redaction left are the same
// bytes but for the time of the redaction entry, their last line.
func sameRedacted(a, b []byte) bool {
	ia, ib := bytes.LastIndexByte(a[:len(a)-1], '\n'), bytes.LastIndexByte(b[:len(b)-1], '\n')
	if ia < 0 || ib < 0 || !bytes.Equal(a[:ia], b[:ib]) {
		return false
	}
	var ea, eb recall.Entry
	if json.Unmarshal(a[ia+1:], &ea) != nil || json.Unmarshal(b[ib+1:], &eb) != nil {
		return false
	}
	return ea.Kind == recall.KindRedaction && ea.Seq == eb.Seq && bytes.Equal(ea.Data, eb.Data)
}
