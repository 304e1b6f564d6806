package remotestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// The tokens `recall login` saves live in one file, credentials.json, in
// $XDG_CONFIG_HOME/recall (~/.config/recall when XDG_CONFIG_HOME is not
// set): a JSON object from each server's base URL (as CheckURL returns
// it) to its token. The directory is made mode 0700 and the file written
// mode 0600, through a temp file renamed over it, so a crash leaves the
// old file or the new, and no other user can read a token.

// TokenEnv is the environment variable whose token, when set, is used for
// every server instead of the saved ones.
const TokenEnv = "RECALL_TOKEN"

// ErrNoToken reports a server with no saved token and no RECALL_TOKEN.
var ErrNoToken = errors.New("remotestore: no token for this server")

// CredentialsPath returns the file the tokens are saved in.
func CredentialsPath() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("remotestore: no XDG_CONFIG_HOME and no home directory: %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "recall", "credentials.json"), nil
}

// readCredentials returns the saved tokens by server; none when the file
// does not exist.
func readCredentials() (map[string]string, string, error) {
	path, err := CredentialsPath()
	if err != nil {
		return nil, "", err
	}
	creds := map[string]string{}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return creds, path, nil
	}
	if err != nil {
		return nil, path, fmt.Errorf("remotestore: credentials: %w", err)
	}
	if err := json.Unmarshal(b, &creds); err != nil {
		return nil, path, fmt.Errorf("remotestore: credentials %s: not a JSON object of tokens: %w", path, err)
	}
	return creds, path, nil
}

// Token returns the token for the server at baseURL: RECALL_TOKEN when
// set, else the one `recall login` saved, else an error wrapping
// ErrNoToken that says to run `recall login URL`.
func Token(baseURL string) (string, error) {
	if t := os.Getenv(TokenEnv); t != "" {
		return t, nil
	}
	u, err := CheckURL(baseURL)
	if err != nil {
		return "", err
	}
	creds, _, err := readCredentials()
	if err != nil {
		return "", err
	}
	if t := creds[u.String()]; t != "" {
		return t, nil
	}
	return "", fmt.Errorf("%w %s: run `recall login %s` (or set %s)", ErrNoToken, u, u, TokenEnv)
}

// Servers returns the base URLs of the servers a token is saved for,
// sorted.
func Servers() ([]string, error) {
	creds, _, err := readCredentials()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(creds))
	for u := range creds {
		out = append(out, u)
	}
	slices.Sort(out)
	return out, nil
}

// SaveToken keeps token for the server at baseURL in the credentials
// file, replacing any it held.
func SaveToken(baseURL, token string) error {
	return changeCredentials(baseURL, func(creds map[string]string, key string) bool {
		creds[key] = token
		return true
	})
}

// RemoveToken forgets the token of the server at baseURL; it reports
// whether there was one.
func RemoveToken(baseURL string) (bool, error) {
	found := false
	err := changeCredentials(baseURL, func(creds map[string]string, key string) bool {
		_, found = creds[key]
		delete(creds, key)
		return found
	})
	return found, err
}

// changeCredentials applies change to the saved tokens and writes them
// back atomically when it reports a change.
func changeCredentials(baseURL string, change func(map[string]string, string) bool) error {
	u, err := CheckURL(baseURL)
	if err != nil {
		return err
	}
	creds, path, err := readCredentials()
	if err != nil {
		return err
	}
	if !change(creds, u.String()) {
		return nil
	}
	b, _ := json.MarshalIndent(creds, "", "  ") // a map of strings always marshals
	return writePrivate(path, append(b, '\n'))
}

// writePrivate writes data to path readable by its owner only: the
// directory made 0700, a temp file of mode 0600 synced and renamed over
// path, and removed on any error.
func writePrivate(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("remotestore: credentials: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("remotestore: credentials: %w", err)
	}
	f, err := os.CreateTemp(dir, ".credentials-*.tmp")
	if err != nil {
		return fmt.Errorf("remotestore: credentials: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return fmt.Errorf("remotestore: credentials: %w", err)
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("remotestore: credentials: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("remotestore: credentials: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("remotestore: credentials: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("remotestore: credentials: %w", err)
	}
	return nil
}
