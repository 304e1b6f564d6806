package mirror

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/durable"
)

// stateFileName is the cursor file inside Options.StateDir.
const stateFileName = "cursors.json"

// stateVersion is the format of the cursor file.
const stateVersion = 1

// stateFile is the durable cursor: for each session, the last seq the
// replica confirmed, with the last replication error. It is a cache of the
// replica's own positions: a file that is behind costs an idempotent
// replay, a missing or unreadable one a Stat per session on the replica.
type stateFile struct {
	dir string
}

// stateDoc is the JSON document of the cursor file.
type stateDoc struct {
	Version  int            `json:"version"`
	Replica  string         `json:"replica,omitempty"`
	Saved    time.Time      `json:"saved"`
	Sessions []savedSession `json:"sessions"`
	// LastError is the last replication error of the whole mirror.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// savedSession is one session's line of the cursor file.
type savedSession struct {
	Key recall.Key `json:"key"`
	Seq int64      `json:"seq"`
	// Recheck: the position is in doubt (see session.doubt).
	Recheck bool `json:"recheck,omitempty"`
	// Remove: a removal from the replica is owed (PropagateDeletes), to
	// be made before anything of the session is copied again: a restart
	// neither drops it nor appends a re-created session's log onto the
	// removed one's.
	Remove      bool      `json:"remove,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

func openStateFile(dir string) (*stateFile, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mirror: state dir: %w", err)
	}
	return &stateFile{dir: dir}, nil
}

func (f *stateFile) path() string { return filepath.Join(f.dir, stateFileName) }

// read returns the saved positions by key. A missing file is empty. A file
// that does not decode is an error the caller may ignore, since the file
// is only a cache.
func (f *stateFile) read() (stateDoc, map[recall.Key]savedSession, error) {
	b, err := os.ReadFile(f.path())
	if errors.Is(err, fs.ErrNotExist) {
		return stateDoc{}, map[recall.Key]savedSession{}, nil
	}
	if err != nil {
		return stateDoc{}, map[recall.Key]savedSession{}, fmt.Errorf("mirror: read cursor file: %w", err)
	}
	var doc stateDoc
	if err := json.Unmarshal(b, &doc); err != nil || doc.Version != stateVersion {
		if err == nil {
			err = fmt.Errorf("version %d, want %d", doc.Version, stateVersion)
		}
		return stateDoc{}, map[recall.Key]savedSession{}, fmt.Errorf("mirror: cursor file %s: %w: %v", f.path(), recall.ErrCorrupt, err)
	}
	byKey := make(map[recall.Key]savedSession, len(doc.Sessions))
	for _, ss := range doc.Sessions {
		byKey[ss.Key] = ss
	}
	return doc, byKey, nil
}

// write replaces the cursor file atomically: the document goes to a temp
// file in the same directory, which is fsynced and renamed over the old
// file, and then the directory is fsynced so the rename survives a power
// loss. A crash at any point leaves the old file or the new one, never a
// mix; a temp file left behind by a crash is harmless.
func (f *stateFile) write(doc stateDoc) error {
	doc.Version = stateVersion
	b, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		return fmt.Errorf("mirror: encode cursor file: %w", err)
	}
	if err := durable.WriteFile(f.path(), stateFileName+".tmp-*", append(b, '\n')); err != nil {
		return fmt.Errorf("mirror: write cursor file: %w", err)
	}
	return nil
}
