package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/redact"
)

// StateDir returns the state directory the CLI uses for a mirror of a store
// whose home is home to the replica at replicaURL:
// <home>/mirror/<hash of the URL>, one per replica, so positions kept for
// one replica are never taken for another's. The hash is of the URL with
// its secrets redacted (storeurl.Redact), so a new password keeps the
// positions.
func StateDir(home, replicaURL string) string {
	sum := sha256.Sum256([]byte(redact.URL(replicaURL)))
	return filepath.Join(home, "mirror", hex.EncodeToString(sum[:8]))
}

// StateDirs lists the state directories under <home>/mirror that hold a
// cursor file: one for each replica a mirror of this home has written to.
func StateDirs(home string) ([]string, error) {
	root := filepath.Join(home, "mirror")
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mirror: list state dirs: %w", err)
	}
	var dirs []string
	for _, e := range ents {
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, stateFileName)); e.IsDir() && err == nil {
			dirs = append(dirs, dir)
		}
	}
	slices.Sort(dirs)
	return dirs, nil
}

// SyncStateDir is StateDir's counterpart for a two-way sync (TwoWay) with
// the store at remoteURL: <home>/sync/<hash of the URL>. It is kept apart
// from a mirror's, since a sync may map a project to another key.
func SyncStateDir(home, remoteURL string) string {
	return filepath.Join(home, "sync", filepath.Base(StateDir(home, remoteURL)))
}

// Forget removes the state directory dir of a mirror (or a sync): its
// cursor file. Nothing is lost by it: the next mirror or sync to that
// replica finds every position from the replica itself. It returns the
// replica name the cursor file recorded ("" when none).
func Forget(dir string) (string, error) {
	f := &stateFile{dir: dir}
	doc, _, err := f.read()
	if err != nil && !errors.Is(err, recall.ErrCorrupt) {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil {
		return doc.Replica, fmt.Errorf("mirror: forget %s: %w", dir, err)
	}
	return doc.Replica, nil
}

// ReplicaName returns the replica name the cursor file of dir records.
func ReplicaName(dir string) string {
	doc, _, _ := (&stateFile{dir: dir}).read()
	return doc.Replica
}
