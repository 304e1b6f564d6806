package secrets_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/recallkit/recall/secrets"
)

// Fake secrets of the formats the tests use (random, never issued).
const (
	awsKey      = "AKIAZ4XNBV7QK2MDPL3F"
	githubPAT   = "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"
	highEntropy = "q7Lx9vR2mN4tZ8wKp3Jd"
)

func newRedactor(t testing.TB, patterns ...secrets.Pattern) *secrets.Redactor {
	t.Helper()
	r, err := secrets.New(secrets.Options{Patterns: patterns})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestItemBytes checks that redaction changes the bytes of the secret and
// nothing else: spacing, key order, numbers and unknown fields are kept,
// and an item without a secret comes back as it was.
func TestItemBytes(t *testing.T) {
	r := newRedactor(t)
	cases := []struct{ name, in, want string }{
		{"no secret", `{"type":"message", "content" : [ {"type":"input_text","text":"hello AKIA is a prefix"} ], "x":{"n":[1,2.50,null,true]}}`,
			`{"type":"message", "content" : [ {"type":"input_text","text":"hello AKIA is a prefix"} ], "x":{"n":[1,2.50,null,true]}}`},
		{"message", `{"type":"message", "content" : [ {"type":"input_text","text":"key ` + awsKey + ` ok"} ], "x":{"n":[1,2.50,null,true]}}`,
			`{"type":"message", "content" : [ {"type":"input_text","text":"key [REDACTED:aws-access-token] ok"} ], "x":{"n":[1,2.50,null,true]}}`},
		{"escapes kept around", `{"text":"line1\nkey=` + awsKey + `\t\u00e9 <b>"}`,
			`{"text":"line1\nkey=[REDACTED:aws-access-token]\t√© <b>"}`},
		{"twice", `{"output":"` + githubPAT + ` and ` + githubPAT + `"}`,
			`{"output":"[REDACTED:github-pat] and [REDACTED:github-pat]"}`},
		{"key is not changed", `{"` + awsKey + `":"` + awsKey + `"}`,
			`{"` + awsKey + `":"[REDACTED:aws-access-token]"}`},
		{"encrypted_content is ciphertext", `{"type":"reasoning","encrypted_content":"` + awsKey + `","summary":[{"type":"summary_text","text":"` + awsKey + `"}]}`,
			`{"type":"reasoning","encrypted_content":"` + awsKey + `","summary":[{"type":"summary_text","text":"[REDACTED:aws-access-token]"}]}`},
		{"not JSON", `{"text":"` + awsKey, `{"text":"` + awsKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, rep := r.JSON([]byte(c.in))
			want := strings.ReplaceAll(c.want, "√©", "\u00e9")
			if string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			if (rep.Total() > 0) != (c.in != c.want) {
				t.Errorf("report %v for a change %v", rep, c.in != c.want)
			}
		})
	}
}

// TestArguments checks function_call arguments, a JSON string that holds
// JSON: they stay valid JSON of the same shape, a secret that only a key
// of the arguments marks (api_key) is found, and arguments that are not
// JSON are redacted as text.
func TestArguments(t *testing.T) {
	r := newRedactor(t)
	call := func(args string) []byte {
		b, _ := json.Marshal(map[string]string{"type": "function_call", "call_id": "c1", "name": "http", "arguments": args})
		return b
	}
	t.Run("json", func(t *testing.T) {
		args := `{"url":"https://api.acme.dev","headers":{"X-Token":"` + githubPAT + `"},"api_key": "` + highEntropy + `","n":3}`
		out, rep := r.Item(call(args))
		var item map[string]string
		if err := json.Unmarshal(out, &item); err != nil {
			t.Fatal(err)
		}
		want := `{"url":"https://api.acme.dev","headers":{"X-Token":"[REDACTED:github-pat]"},"api_key": "[REDACTED:generic-api-key]","n":3}`
		if item["arguments"] != want {
			t.Errorf("arguments\n got %s\nwant %s", item["arguments"], want)
		}
		if rep["github-pat"] != 1 || rep["generic-api-key"] != 1 || rep.Total() != 2 {
			t.Errorf("report %v", rep)
		}
	})
	t.Run("not json", func(t *testing.T) {
		out, rep := r.Item(call(`{"cmd":"export GH=` + githubPAT))
		var item map[string]string
		if err := json.Unmarshal(out, &item); err != nil {
			t.Fatal(err)
		}
		if want := `{"cmd":"export GH=[REDACTED:github-pat]`; item["arguments"] != want || rep.Total() != 1 {
			t.Errorf("arguments %s, report %v; want %s", item["arguments"], rep, want)
		}
	})
}

func TestPatterns(t *testing.T) {
	r := newRedactor(t,
		secrets.Pattern{Name: "employee-id", Regexp: `EMP-\d{6}`},
		secrets.Pattern{Name: "pin", Regexp: `pin=(\d{4,8})`},
		secrets.Pattern{Name: "empty", Regexp: `z*`},
	)
	got, rep := r.String("ask EMP-123456 for pin=4821, not EMP-12")
	if want := "ask [REDACTED:employee-id] for pin=[REDACTED:pin], not EMP-12"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if rep.String() != "2 secrets: 1 employee-id, 1 pin" {
		t.Errorf("report %q", rep)
	}
	for _, bad := range []secrets.Pattern{{Name: "", Regexp: "x"}, {Name: "a[b]", Regexp: "x"}, {Name: "bad", Regexp: "("}} {
		if _, err := secrets.New(secrets.Options{Patterns: []secrets.Pattern{bad}}); !errors.Is(err, secrets.ErrInvalidPattern) {
			t.Errorf("New(%+v): %v, want ErrInvalidPattern", bad, err)
		}
	}
	if p, err := secrets.ParsePattern(`ticket=T-\d+=x`); err != nil || p.Name != "ticket" || p.Regexp != `T-\d+=x` {
		t.Errorf("ParsePattern: %+v, %v", p, err)
	}
	for _, bad := range []string{"", "name", "=re", "name="} {
		if _, err := secrets.ParsePattern(bad); !errors.Is(err, secrets.ErrInvalidPattern) {
			t.Errorf("ParsePattern(%q): %v, want ErrInvalidPattern", bad, err)
		}
	}
}

func TestURLPassword(t *testing.T) {
	r := newRedactor(t)
	for in, want := range map[string]string{
		"postgres://app:s3cr3t-Pw0rd@db:5432/app":    "postgres://app:[REDACTED:url-password]@db:5432/app",
		"redis://:Hq8vN2mx7Lp@cache:6379/0":          "redis://:[REDACTED:url-password]@cache:6379/0",
		"postgres://app:${PGPASSWORD}@db/app":        "postgres://app:${PGPASSWORD}@db/app",
		"postgres://app:xxxxx@db/app":                "postgres://app:xxxxx@db/app",
		"postgres://app:password@db/app":             "postgres://app:password@db/app",
		"https://github.com/acme/infra, mail a@b.io": "https://github.com/acme/infra, mail a@b.io",
	} {
		if got, _ := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReportString(t *testing.T) {
	rep := secrets.Report{"github-pat": 1, "aws-access-token": 2}
	if got, want := rep.String(), "3 secrets: 2 aws-access-token, 1 github-pat"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := (secrets.Report{}).String(); got != "no secrets" {
		t.Errorf("empty report: %q", got)
	}
	if got := (secrets.Report{"jwt": 1}).String(); got != "1 secret: 1 jwt" {
		t.Errorf("one: %q", got)
	}
}

// FuzzJSON checks that redaction of any JSON keeps it valid JSON of the
// same shape, and never panics on anything.
func FuzzJSON(f *testing.F) {
	r := newRedactor(f)
	f.Add([]byte(`{"type":"message","content":[{"type":"input_text","text":"` + awsKey + `"}]}`))
	f.Add([]byte(`{"arguments":"{\"k\":\"` + githubPAT + `\"}"}`))
	f.Add([]byte(`["\u0000", "\ud800", 1e9, {"a":"b\"c"}]`))
	f.Add([]byte(`{"a":"postgres://u:p4ssw0rdX@h/d"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, _ := r.JSON(in)
		if !json.Valid(in) {
			if string(out) != string(in) {
				t.Fatalf("invalid JSON changed")
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON after redaction: %s", out)
		}
		if a, b := shape(in), shape(out); !equalJSON(a, b) {
			t.Fatalf("shape changed:\n in %s\nout %s", in, out)
		}
	})
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestRedactIdempotent: what a redaction wrote is found clean by the
// next one, a URL whose password is a marker included.
func TestRedactIdempotent(t *testing.T) {
	r := newRedactor(t)
	for _, text := range []string{
		"postgres://deploy:hunter2-Secret9@db.internal:5432/app",
		"export GH_TOKEN=ghp_4fJ9kQ2mX7pL0vR8sT3wY6zB1cN5dH9gK2aE",
	} {
		once, rep := r.String(text)
		if rep.Total() == 0 {
			t.Fatalf("%q: nothing redacted", text)
		}
		if twice, rep2 := r.String(once); twice != once || rep2.Total() != 0 {
			t.Errorf("%q redacted again: %q, %v", once, twice, rep2)
		}
	}
}
