package encrypt

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// KeySize is the size of a key-encryption key: 32 bytes (AES-256).
const KeySize = 32

// KEK is a key-encryption key: it wraps the random data key of each
// session. Its ID is derived from the key itself, so a store can say which
// key an entry was sealed under without holding it, and a wrong key is
// told apart from a damaged entry.
type KEK struct {
	id     string
	secret []byte
}

// NewKEK returns the KEK of 32 bytes of key material.
func NewKEK(secret []byte) (KEK, error) {
	if len(secret) != KeySize {
		return KEK{}, fmt.Errorf("%w: a key is %d bytes, not %d", ErrBadKey, KeySize, len(secret))
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("recall/encrypt key id"))
	return KEK{id: hex.EncodeToString(mac.Sum(nil)[:8]), secret: bytes.Clone(secret)}, nil
}

// GenerateKEK returns a new random KEK.
func GenerateKEK() (KEK, error) {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return KEK{}, fmt.Errorf("encrypt: generate key: %w", err)
	}
	return NewKEK(b)
}

// ID identifies the key (16 hex digits, derived from it one way).
func (k KEK) ID() string { return k.id }

// IsZero reports whether k holds no key.
func (k KEK) IsZero() bool { return k.id == "" }

// String returns the key as text, base64, the form ParseKEK reads back:
// what `recall keys new` prints.
func (k KEK) String() string { return base64.StdEncoding.EncodeToString(k.secret) }

// ParseKEK reads a key written as text: 64 hex digits or the base64 of 32
// bytes, surrounding white space ignored, or exactly 32 raw bytes.
func ParseKEK(b []byte) (KEK, error) {
	s := strings.TrimSpace(string(b))
	if raw, err := hex.DecodeString(s); err == nil && len(raw) == KeySize {
		return NewKEK(raw)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(s); err == nil && len(raw) == KeySize {
			return NewKEK(raw)
		}
	}
	if len(b) == KeySize {
		return NewKEK(b)
	}
	return KEK{}, fmt.Errorf("%w: expected 64 hex digits, or the base64 of 32 bytes (`recall keys new` makes one)", ErrBadKey)
}

// Keyring is the keys of a project: Current seals what is written, and
// every key of the ring opens what was sealed under it. Old holds the keys
// a rotation replaces until Rotate has re-wrapped every session under
// Current. A Keyring is a KeyProvider that gives every project the same
// keys.
type Keyring struct {
	Current KEK
	Old     []KEK
}

// Keys implements KeyProvider.
func (r Keyring) Keys(context.Context, string) (Keyring, error) { return r, nil }

// find returns the key of the ring with id.
func (r Keyring) find(id string) (KEK, bool) {
	if r.Current.id == id && id != "" {
		return r.Current, true
	}
	for _, k := range r.Old {
		if k.id == id {
			return k, true
		}
	}
	return KEK{}, false
}

// ids lists the IDs of the ring's keys, for an error.
func (r Keyring) ids() string {
	var ids []string
	for _, k := range append([]KEK{r.Current}, r.Old...) {
		if !k.IsZero() {
			ids = append(ids, k.id)
		}
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// KeyProvider gives the keys of a project. A server that keeps a key per
// user project (one user's namespace) implements it to look the key up;
// deleting a project's key makes its sessions unreadable for good
// (crypto-shredding), whatever copies of the store exist.
type KeyProvider interface {
	// Keys returns project's keyring. A project without a key returns an
	// error wrapping ErrNoKey (or a Keyring whose Current is zero, which
	// can read nothing and write nothing).
	Keys(ctx context.Context, project string) (Keyring, error)
}

// ProviderFunc is a KeyProvider written as a function.
type ProviderFunc func(ctx context.Context, project string) (Keyring, error)

// Keys implements KeyProvider.
func (f ProviderFunc) Keys(ctx context.Context, project string) (Keyring, error) {
	return f(ctx, project)
}

// LoadKEK reads a key from a source:
//
//	file:/path/to/key   the file's contents (see ParseKEK); a plain path too,
//	                    and ~/ is the user's home directory
//	env:NAME            the environment variable NAME
//	cmd:COMMAND         the standard output of COMMAND, run by the shell
//	                    (sh -c; cmd /c on Windows), so a password manager or
//	                    a KMS client can hand the key over
//
// The key itself never appears in an error.
func LoadKEK(ctx context.Context, source string) (KEK, error) {
	kind, arg, ok := strings.Cut(source, ":")
	if !ok || kind != "env" && kind != "cmd" && kind != "file" {
		kind, arg = "file", source
	}
	if arg == "" {
		return KEK{}, fmt.Errorf("%w: empty key source %q", ErrBadKey, source)
	}
	var b []byte
	var err error
	switch kind {
	case "env":
		v, set := os.LookupEnv(arg)
		if !set || v == "" {
			return KEK{}, fmt.Errorf("%w: the environment variable %s is not set", ErrNoKey, arg)
		}
		b = []byte(v)
	case "cmd":
		shell, flag := "sh", "-c"
		if runtime.GOOS == "windows" {
			shell, flag = "cmd", "/c"
		}
		cmd := exec.CommandContext(ctx, shell, flag, arg)
		cmd.Stderr = os.Stderr
		if b, err = cmd.Output(); err != nil {
			return KEK{}, fmt.Errorf("%w: key command %q: %v", ErrNoKey, arg, err)
		}
	default:
		if rest, ok := strings.CutPrefix(arg, "~/"); ok {
			home, err := os.UserHomeDir()
			if err != nil {
				return KEK{}, fmt.Errorf("%w: key file: %v", ErrNoKey, err)
			}
			arg = filepath.Join(home, rest)
		}
		if b, err = os.ReadFile(arg); err != nil {
			return KEK{}, fmt.Errorf("%w: key file: %v", ErrNoKey, err)
		}
	}
	k, err := ParseKEK(b)
	if err != nil {
		return KEK{}, fmt.Errorf("key from %s: %w", kind, err)
	}
	return k, nil
}

// LoadKeyring reads the current key from source and the old keys from
// the sources in old (see LoadKEK).
func LoadKeyring(ctx context.Context, source string, old ...string) (Keyring, error) {
	cur, err := LoadKEK(ctx, source)
	if err != nil {
		return Keyring{}, err
	}
	r := Keyring{Current: cur}
	for _, s := range old {
		k, err := LoadKEK(ctx, s)
		if err != nil {
			return Keyring{}, fmt.Errorf("old key: %w", err)
		}
		r.Old = append(r.Old, k)
	}
	return r, nil
}

// DirKeys is a KeyProvider with one key file per project, DIR/PROJECT.key
// (see ParseKEK): a service's key per user project. A project whose file
// is missing has no key (ErrNoKey): removing the file shreds the
// project's sessions. Old keys of a project are in DIR/PROJECT.key.old,
// one per line, while a rotation runs. It reads the files at each call,
// so a key removed takes effect at once.
func DirKeys(dir string) KeyProvider {
	return ProviderFunc(func(ctx context.Context, project string) (Keyring, error) {
		if project == "" || strings.ContainsAny(project, `/\`) || project == "." || project == ".." {
			return Keyring{}, fmt.Errorf("%w: project %q", ErrNoKey, project)
		}
		path := filepath.Join(dir, project+".key")
		cur, err := LoadKEK(ctx, "file:"+path)
		if err != nil {
			return Keyring{}, fmt.Errorf("project %s: %w", project, err)
		}
		r := Keyring{Current: cur}
		old, err := os.ReadFile(path + ".old")
		if err != nil && !os.IsNotExist(err) {
			return Keyring{}, fmt.Errorf("project %s: old keys: %w", project, err)
		}
		for line := range strings.Lines(string(old)) {
			if strings.TrimSpace(line) == "" {
				continue
			}
			k, err := ParseKEK([]byte(line))
			if err != nil {
				return Keyring{}, fmt.Errorf("project %s: old keys: %w", project, err)
			}
			r.Old = append(r.Old, k)
		}
		return r, nil
	})
}
