package redact

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// user info
		{"postgres://u:pw@h:5432/db?sslmode=disable", "postgres://u:xxxxx@h:5432/db?sslmode=disable"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"redis://:pw@h:6379/0", "redis://:xxxxx@h:6379/0"},
		{"rediss://default:pw@h:6380/1?dial_timeout=3s", "rediss://default:xxxxx@h:6380/1?dial_timeout=3s"},
		{"postgres:u:pw@h/db", "postgres:u:xxxxx@h/db"},
		// query parameters, kept in order and byte for byte otherwise
		{"postgres://h/db?password=pw&sslmode=disable", "postgres://h/db?password=xxxxx&sslmode=disable"},
		{"postgres://h/db?sslmode=disable&sslpassword=pw", "postgres://h/db?sslmode=disable&sslpassword=xxxxx"},
		{"redis://h/0?prefix=a:&token=t&access_token=t&secret=s&key=k&auth=a&pwd=p&pass=p&api_key=k&client_secret=s",
			"redis://h/0?prefix=a:&token=xxxxx&access_token=xxxxx&secret=xxxxx&key=xxxxx&auth=xxxxx&pwd=xxxxx&pass=xxxxx&api_key=xxxxx&client_secret=xxxxx"},
		{"redis://h/0?PassWord=pw", "redis://h/0?PassWord=xxxxx"},
		{"redis://h/0?pass%77ord=pw", "redis://h/0?pass%77ord=xxxxx"},
		{"postgres://h/db#password=pw", "postgres://h/db#password=xxxxx"},
		{"sqlite:x.db?_auth_pass=pw", "sqlite:x.db?_auth_pass=xxxxx"},
		// keyword/value DSNs
		{"host=h password=pw user=u", "host=h password=xxxxx user=u"},
		{"host=h password='p w' user=u", "host=h password=xxxxx user=u"},
		{`host=h password='p\'w' user=u`, "host=h password=xxxxx user=u"},
		{"host=h sslpassword = pw dbname=x", "host=h sslpassword = xxxxx dbname=x"},
		// nothing to hide: unchanged
		{"/var/lib/recall.db", "/var/lib/recall.db"},
		{"/var/lib/50%.db", "/var/lib/50%.db"},
		{`C:\recall\data`, `C:\recall\data`},
		{"file:///home/u/with space", "file:///home/u/with space"},
		{"mem://", "mem://"},
		{"", ""},
		// malformed: the scheme and a trusted host at most
		{"postgres://u:pw@h/%zz?password=pw", "postgres://h/[hidden]"},
		{"redis://u:pw@[::1", "redis://[hidden]"},
		{"redis://u:pw@[::1]:6379/%zz", "redis://[::1]:6379/[hidden]"},
		{"redis://u:pa/ss@h:6379/%zz", "redis://[hidden]"},
		{"redis://u:pa?ss@h", "redis://[hidden]"},
		{"redis://:pw%zz", "redis://[hidden]"},
		{"redis://h:pw%zz/0", "redis://[hidden]"},
		{"postgres://u:pw@h:port/db", "postgres://[hidden]"},
		{"postgres://h/%zz?email=a@b", "postgres://[hidden]"},
		{"postgres:u:pw@h/%zz", "postgres:u:xxxxx@h/%zz"},                             // an opaque URL's escapes are not checked
		{"u:pw@h/db", "u:xxxxx@h/db"},                                                 // scheme-less user info
		{"postgres://h/db?x=%zz&password=pw", "postgres://h/db?x=%zz&password=xxxxx"}, // nor a query's
		{"sqlite:///tmp/a%zz?key=pw", "sqlite:///[hidden]"},
	} {
		got := URL(tc.in)
		if got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if again := URL(got); again != got {
			t.Errorf("URL(URL(%q)) = %q, not %q", tc.in, again, got)
		}
	}
}

// hostile are URLs that carry a secret in every place this package knows
// of, well-formed and not, with the secret as written.
var hostile = []struct{ raw, secret string }{
	{"postgres://u:s3cret@h/db", "s3cret"},
	{"postgres://u:s3cret@h/db?password=s3cret", "s3cret"},
	{"postgresql://u:s3cret@h/db?sslpassword=s3cret&sslmode=require", "s3cret"},
	{"postgres://u:s3cret@h/%zz?password=s3cret", "s3cret"},
	{"postgres://u:s3cret@h:5432/db?password=s3cret%zz", "s3cret"},
	{"postgres://u:s3%63ret@h/db", "s3%63ret"},
	{"redis://:s3cret@h:6379/0?token=s3cret", "s3cret"},
	{"rediss://u:s3cret@[::1", "s3cret"},
	{"redis://u:s3/cret@h/0", "s3/cret"},
	{"redis://u:s3cret@h/0?dial_timeout=3s#auth=s3cret", "s3cret"},
	{"host=h password=s3cret", "s3cret"},
	{"host=h password='s3cret' user=u", "s3cret"},
	{"host=h password = s3cret%zz user=u", "s3cret%zz"},
	{"file:///tmp/x?secret=s3cret", "s3cret"},
	{"sqlite:///tmp/x.db?_auth_pass=s3cret", "s3cret"},
	{"sqlite:x.db?key=s3cret", "s3cret"},
	{"s3://AKIA:s3cret@bucket/x?X-Amz-Signature=s3cret", "s3cret"},
	{"unknown://u:s3cret@h/%zz?api_key=s3cret", "s3cret"},
	{"u:s3cret@h", "s3cret"},
	{"redis:u:s3cret@h:%zz", "s3cret"},
}

func TestURLNeverShowsTheSecret(t *testing.T) {
	for _, h := range hostile {
		if got := URL(h.raw); strings.Contains(got, h.secret) || strings.Contains(got, "s3cret") {
			t.Errorf("URL(%q) = %q", h.raw, got)
		}
	}
}

// TestMessage scrubs error texts that quote the URL as drivers do: whole,
// parsed and re-encoded, redacted their own way, or in pieces.
func TestMessage(t *testing.T) {
	for _, h := range hostile {
		raw, secret := h.raw, h.secret
		texts := []string{
			raw,
			fmt.Sprintf("cannot parse %q: bad", raw),
			fmt.Sprintf("cannot parse `%s`: bad", raw),
			"password authentication failed: password=" + secret + " user=u",
			"dial redis://u:" + secret + "@h:6379: refused",
			fmt.Sprintf("invalid value %q", secret),
			"the password is " + secret,
		}
		if u, err := url.Parse(raw); err != nil {
			texts = append(texts, err.Error())
		} else {
			texts = append(texts, u.String(), u.Redacted(), u.Query().Encode())
		}
		for _, text := range texts {
			if got := Message(text, raw); strings.Contains(got, secret) {
				t.Errorf("Message(%q, %q) = %q", text, raw, got)
			}
		}
	}
	// a secret the caller knows of that the URL does not show
	if got := Message("auth failed for pgpass-pw", "postgres://u@h/db", "pgpass-pw"); got != "auth failed for xxxxx" {
		t.Errorf("extra secret: %q", got)
	}
	// a quoted piece of a malformed URL is dropped; the reason stays
	if got := Message(`invalid URL escape "%zz"`, "postgres://u:pw%zz@h/db"); got != "invalid URL escape" {
		t.Errorf("malformed: %q", got)
	}
	// the rest of a message about a well-formed URL is kept
	if got := Message(`redis: invalid database number: "abc"`, "redis://:s3cret@h/abc"); got != `redis: invalid database number: "abc"` {
		t.Errorf("well-formed: %q", got)
	}
}

func TestWrapAndClean(t *testing.T) {
	cause := errors.New("connect postgres://u:s3cret@h/db: refused")
	err := Wrap("sqlstore: open postgres", "postgres://u:s3cret@h/db", cause)
	if want := "sqlstore: open postgres postgres://u:xxxxx@h/db: connect postgres://u:xxxxx@h/db: refused"; err.Error() != want {
		t.Errorf("Wrap: %q, want %q", err, want)
	}
	if !errors.Is(err, cause) {
		t.Error("Wrap hides the cause from errors.Is")
	}
	if got := Clean(cause, "postgres://u:s3cret@h/db"); strings.Contains(got.Error(), "s3cret") || !errors.Is(got, cause) {
		t.Errorf("Clean: %v", got)
	}
	clean := errors.New("refused")
	if got := Clean(clean, "postgres://u:s3cret@h/db"); got != clean {
		t.Errorf("Clean changed a clean error: %v", got)
	}
	if Clean(nil, "x") != nil {
		t.Error("Clean(nil) is not nil")
	}
}

func TestIsSecretParam(t *testing.T) {
	for _, name := range []string{"password", "pass", "pwd", "sslpassword", "token", "secret", "key", "access_token", "auth",
		"PASSWORD", "db_pass", "client_secret", "refresh_token", "api_key", "apikey", "X-Amz-Signature", "sig", "credentials"} {
		if !isSecretParam(name) {
			t.Errorf("%s is not secret", name)
		}
	}
	for _, name := range []string{"sslmode", "prefix", "ttl", "schema", "max_item_size", "dial_timeout", "pool_max_conns", "sync", "user", "host", "dbname"} {
		if isSecretParam(name) {
			t.Errorf("%s is secret", name)
		}
	}
}

func FuzzURL(f *testing.F) {
	for _, h := range hostile {
		f.Add(h.raw)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := URL(in)
		if again := URL(got); again != got {
			t.Errorf("URL(%q) = %q, but URL of that is %q", in, got, again)
		}
		// A password in user info never survives.
		if u, err := url.Parse(in); err == nil && u.User != nil && !isKeyValue(in) {
			if p, ok := u.User.Password(); ok && len(p) > 5 && p != Mask && strings.Contains(got, ":"+p+"@") {
				t.Errorf("URL(%q) = %q shows the password", in, got)
			}
		}
	})
}

// FuzzSecretInAnyURL puts a password in the user info and the query of a
// URL whose path is anything, parsable or not: neither URL nor Message
// over the texts a driver may print may show it. The password starts with
// "zq", which the path never holds and no escaping produces.
func FuzzSecretInAnyURL(f *testing.F) {
	f.Add("s3cret", "db")
	f.Add("s3cret", "%zz")
	f.Add("s3cretpassword", "a@b/c?d#e")
	f.Fuzz(func(t *testing.T, suffix, path string) {
		if strings.Trim(suffix, "abcdefghijklmnopqrstuvwxyz0123456789") != "" || strings.Contains(strings.ToLower(path), "zq") {
			return
		}
		secret := "zq" + suffix
		raw := "postgres://u:" + secret + "@h/" + path + "?password=" + secret + "&sslmode=require"
		texts := []string{raw, fmt.Sprintf("cannot parse %q", raw), "password=" + secret, fmt.Sprintf("%q", secret)}
		if _, err := url.Parse(raw); err != nil {
			texts = append(texts, err.Error())
		}
		if got := URL(raw); strings.Contains(got, "zq") {
			t.Fatalf("URL(%q) = %q", raw, got)
		}
		for _, text := range texts {
			if got := Message(text, raw); strings.Contains(got, "zq") {
				t.Fatalf("Message(%q, %q) = %q", text, raw, got)
			}
		}
	})
}
