package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// TestSecretsNeverShown puts a password ("hunter2xy", or "hunter/2xy") in
// the user info and in the query of a URL of every registered scheme and a
// few unknown ones, well-formed and not: neither Open's error nor Redact
// may show it. The servers named do not exist (port 1), so the drivers
// fail as they would on an outage, after parsing.
func TestSecretsNeverShown(t *testing.T) {
	leaky := "leaky" + fmt.Sprint(time.Now().UnixNano())
	Register(leaky, func(_ context.Context, u *url.URL) (recall.Store, error) {
		// a careless third-party opener that quotes the URL
		return nil, fmt.Errorf("leaky: cannot open %s (password %s)", u, u.Query().Get("password"))
	})
	t.Cleanup(func() { unregister(leaky) })
	dir := t.TempDir()
	var urls []string
	for _, scheme := range append(Schemes(), "sqlite3", "http", "unknown+x") {
		for _, rest := range []string{
			"u:hunter2xy@127.0.0.1:1/db?password=hunter2xy&connect_timeout=2&sslmode=disable",
			"u:hunter2xy@127.0.0.1:1/db?sslpassword=hunter2xy&token=hunter2xy&access_token=hunter2xy&key=hunter2xy&auth=hunter2xy",
			"u:hunter2xy@127.0.0.1:1/0?secret=hunter2xy&db_pass=hunter2xy#auth=hunter2xy",
			"u:hunter2xy@" + dir + "/x?password=hunter2xy",
			":hunter2xy@/" + dir + "/y?pwd=hunter2xy",
			// malformed: a bad escape, a bad port, an unclosed bracket, a raw '/' in the password
			"u:hunter2xy@127.0.0.1:1/%zz?password=hunter2xy",
			"u:hunter2xy@h:port/db?password=hunter2xy",
			"u:hunter2xy@[::1/db?password=hunter2xy",
			"u:hunter/2xy@h/db?password=hunter2xy",
		} {
			urls = append(urls, scheme+"://"+rest)
		}
		urls = append(urls, scheme+":u:hunter2xy@h/%zz?password=hunter2xy")
	}
	urls = append(urls, "host=h password=hunter2xy port=x", "host=h password='hunter2xy' sslpassword=hunter2xy")
	for _, raw := range urls {
		t.Run(Redact(raw), func(t *testing.T) {
			if r := Redact(raw); strings.Contains(r, "hunter") {
				t.Errorf("Redact(%q) = %q", raw, r)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := Open(ctx, raw)
			if err == nil {
				_ = st.Close()
				return
			}
			if msg := err.Error(); strings.Contains(msg, "hunter") || strings.Contains(msg, "\n") {
				t.Errorf("Open(%q) error: %q", raw, msg)
			}
		})
	}
}

// TestErrorsStillWrap: scrubbing an error's text keeps its cause for
// errors.Is.
func TestErrorsStillWrap(t *testing.T) {
	errCustom := errors.New("custom failure")
	scheme := "wraps" + fmt.Sprint(time.Now().UnixNano())
	Register(scheme, func(_ context.Context, u *url.URL) (recall.Store, error) {
		return nil, fmt.Errorf("open %s: %w", u, errCustom)
	})
	t.Cleanup(func() { unregister(scheme) })
	_, err := Open(context.Background(), scheme+"://u:s3cret@h/")
	if !errors.Is(err, errCustom) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open: %v", err)
	}
	_, err = Open(context.Background(), "nosuch://u:s3cret@h/%zz")
	if !errors.Is(err, ErrUnknownScheme) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open of an unknown scheme: %v", err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db?sslmode=disable&password=pw": "postgres://u:xxxxx@h:5432/db?sslmode=disable&password=xxxxx",
		"redis://:pw@h:6379/0?prefix=app:":                      "redis://:xxxxx@h:6379/0?prefix=app:",
		"host=h password='p w' user=u":                          "host=h password=xxxxx user=u",
		"postgres://u:pw@h/%zz?password=pw":                     "postgres://h/[hidden]",
		"/var/lib/recall":                                       "/var/lib/recall",
		"mem://":                                                "mem://",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// A keyword/value connection string given where a URL is expected is
// refused, rather than taken as a path: the file store would create a
// directory named after the password in it.
func TestKeywordValueDSNRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, dsn := range []string{
		"host=db password=s3cret dbname=recall",
		"password=s3cret",
		"  user=u password=s3cret",
	} {
		st, err := Open(context.Background(), dsn)
		if err == nil {
			st.Close()
			t.Errorf("Open(%q) opened a store", dsn)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "postgres://") {
			t.Errorf("Open(%q) = %v: want a hint without the secret", dsn, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("the working directory holds %v (%v); want nothing created", entries, err)
	}
	// A path that merely holds '=' further on is still a path.
	st, err := Open(context.Background(), filepath.Join(dir, "a=b"))
	if err != nil {
		t.Fatalf("a path with '=': %v", err)
	}
	st.Close()
}
