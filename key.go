package recall

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
)

// maxProjectLen is the longest project key ProjectKey produces; longer
// results are cut and suffixed with a short hash of the whole.
const maxProjectLen = 200

// Key names one session record.
//
// Project partitions sessions by workspace (see [ProjectKey]). Session is the
// conversation's ID. Subpath, when set, names a subagent record that belongs
// to the session ("subagents/researcher-1"); such a record is not a main
// session: List skips it and removing the parent removes it.
type Key struct {
	Project string `json:"project"`
	Session string `json:"session"`
	Subpath string `json:"subpath,omitempty"`
}

// String returns "project/session" or "project/session:subpath".
func (k Key) String() string {
	if k.Subpath == "" {
		return k.Project + "/" + k.Session
	}
	return k.Project + "/" + k.Session + ":" + k.Subpath
}

// Parent returns the main session's key: k without its Subpath.
func (k Key) Parent() Key { return Key{Project: k.Project, Session: k.Session} }

// IsMain reports whether k names a main session rather than a subagent record.
func (k Key) IsMain() bool { return k.Subpath == "" }

// Validate checks every part of k and returns an error wrapping
// [ErrInvalidKey] when one is bad. Project and Session must each be a valid
// ID (see [ValidateID], though a project may be up to 255 bytes); Subpath is
// empty or "/"-separated valid IDs.
func (k Key) Validate() error {
	if why := validateName(k.Project, maxProjectLen+55); why != "" {
		return fmt.Errorf("%w: project %q: %s", ErrInvalidKey, k.Project, why)
	}
	if why := validateName(k.Session, MaxIDLen); why != "" {
		return fmt.Errorf("%w: session %q: %s", ErrInvalidKey, k.Session, why)
	}
	if k.Subpath == "" {
		return nil
	}
	segs := strings.Split(k.Subpath, "/")
	if len(segs) > 8 {
		return fmt.Errorf("%w: subpath %q: more than 8 segments", ErrInvalidKey, k.Subpath)
	}
	for _, s := range segs {
		if why := validateName(s, MaxIDLen); why != "" {
			return fmt.Errorf("%w: subpath %q: segment %q: %s", ErrInvalidKey, k.Subpath, s, why)
		}
	}
	return nil
}

// ValidateID checks a session ID that came from a user: 1 to 128 bytes of
// [A-Za-z0-9._-], and not "." or "..". The error wraps [ErrInvalidKey].
func ValidateID(id string) error {
	if why := validateName(id, MaxIDLen); why != "" {
		return fmt.Errorf("%w: id %q: %s", ErrInvalidKey, id, why)
	}
	return nil
}

// validateName returns why s is not a valid name, or "" when it is.
func validateName(s string, max int) string {
	switch {
	case s == "":
		return "empty"
	case len(s) > max:
		return fmt.Sprintf("longer than %d bytes", max)
	case s == "." || s == "..":
		return "reserved name"
	}
	for i := 0; i < len(s); i++ {
		if !isIDByte(s[i]) {
			return fmt.Sprintf("byte %q at %d is outside [A-Za-z0-9._-]", s[i], i)
		}
	}
	return ""
}

func isIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// ProjectKey turns a workspace directory into a project key. It resolves
// the absolute, real path (following symlinks where the path exists) and
// replaces every byte outside [A-Za-z0-9] with '-', the folder name Claude
// Code uses for the same directory. A result over 200 bytes is cut and gets
// '-' plus a short hash of the full name, so distinct long paths stay
// distinct. The result is always a valid Key.Project.
func ProjectKey(dir string) (string, error) {
	if strings.IndexByte(dir, 0) >= 0 {
		return "", fmt.Errorf("%w: project dir contains a NUL byte", ErrInvalidKey)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("recall: project key of %q: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return projectName(abs), nil
}

// projectName is the pure part of ProjectKey, for a path already resolved.
func projectName(path string) string {
	b := []byte(path)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	if len(b) == 0 {
		return "-"
	}
	if len(b) <= maxProjectLen {
		return string(b)
	}
	sum := sha256.Sum256([]byte(path))
	return string(b[:maxProjectLen]) + "-" + hex.EncodeToString(sum[:])[:12]
}

// NewSessionID returns a new session ID: a random UUID (version 4) in its
// canonical text form. Its first 8 hex characters are 32 random bits, so
// they tell apart sessions created in the same minute, and a person can
// type them to name a session: two of 10,000 sessions share them with a
// chance of about 1%. (IDs were time-ordered UUIDv7 before, whose first 8
// characters are the same for every session of about a minute; such IDs
// stay valid. A session's creation time is Meta.Created.)
func NewSessionID() string {
	return uuid.NewString()
}
