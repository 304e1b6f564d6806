package secrets_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/secrets"
	"github.com/recallkit/recall/storekit"
)

//go:generate go run ./testdata/gen

// corpusCase is a line of testdata/corpus.json (see testdata/gen).
type corpusCase struct {
	Kind  string `json:"kind"` // secret or lookalike
	Name  string `json:"name"`
	Value string `json:"value"`
	Text  string `json:"text"`
}

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	b, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs []corpusCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// placements put a text where sessions hold text: a user message, the
// arguments of a tool call (a JSON string holding JSON), a tool's output,
// and a reasoning summary.
var placements = []struct {
	name string
	item func(text string) recall.Item
}{
	{"message", func(text string) recall.Item {
		return mustJSON(map[string]any{"type": "message", "role": "user", "id": "msg_01",
			"content": []any{map[string]any{"type": "input_text", "text": text}}})
	}},
	{"function_call", func(text string) recall.Item {
		args := string(mustJSON(map[string]any{"command": []string{"bash", "-lc", text}, "timeout_ms": 10000}))
		return mustJSON(map[string]any{"type": "function_call", "call_id": "call_7", "name": "shell", "arguments": args})
	}},
	{"function_call_output", func(text string) recall.Item {
		return mustJSON(map[string]any{"type": "function_call_output", "call_id": "call_7", "output": text,
			"x_unknown": map[string]any{"exit_code": 0, "ok": true}})
	}},
	{"reasoning", func(text string) recall.Item {
		return mustJSON(map[string]any{"type": "reasoning", "id": "rs_1",
			"summary":           []any{map[string]any{"type": "summary_text", "text": "The user pasted: " + text}},
			"encrypted_content": "gAAAAABoU2Vj"})
	}},
}

func mustJSON(v any) recall.Item {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return recall.Item(strings.TrimSpace(b.String()))
}

// texts returns every string value of a JSON document, those inside
// strings that hold JSON included, decoded.
func texts(raw []byte) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
			var inner any
			if json.Unmarshal([]byte(v), &inner) == nil {
				if _, ok := inner.(string); !ok {
					walk(inner)
				}
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return out
}

// shape returns the JSON document with every string replaced by "", and
// strings holding JSON replaced by their shape: what redaction must keep.
func shape(raw []byte) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return fmt.Sprintf("invalid JSON: %q", raw)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			var inner any
			if t := strings.TrimSpace(v); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
				if json.Unmarshal([]byte(v), &inner) == nil {
					return map[string]any{"json": walk(inner)}
				}
			}
			return ""
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		case map[string]any:
			for k := range v {
				v[k] = walk(v[k])
			}
		}
		return v
	}
	return walk(v)
}

func contains(raw []byte, value string) bool {
	for _, s := range texts(raw) {
		if strings.Contains(s, value) {
			return true
		}
	}
	return false
}

// TestCorpus measures the redaction of the corpus: every secret and
// look-alike in every placement. At least 95% of the secrets must be
// redacted and at most 5% of the look-alikes touched; the item keeps its
// shape either way.
func TestCorpus(t *testing.T) {
	r, err := secrets.New(secrets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var secretsN, caught, lookN, touched int
	for _, c := range loadCorpus(t) {
		if !strings.Contains(c.Text, c.Value) {
			t.Fatalf("corpus %s: the text does not hold the value", c.Name)
		}
		for _, p := range placements {
			in := p.item(c.Text)
			if !contains(in, c.Value) {
				t.Fatalf("%s in %s: the item does not hold the value", c.Name, p.name)
			}
			out, rep := r.Item(in)
			if !json.Valid(out) {
				t.Errorf("%s in %s: invalid JSON after redaction: %s", c.Name, p.name, out)
				continue
			}
			if !reflect.DeepEqual(shape(in), shape(out)) {
				t.Errorf("%s in %s: shape changed:\n in %s\nout %s", c.Name, p.name, in, out)
			}
			if strings.Contains(rep.String(), c.Value) {
				t.Errorf("%s in %s: the report shows the secret", c.Name, p.name)
			}
			switch c.Kind {
			case "secret":
				secretsN++
				if contains(out, c.Value) {
					t.Logf("missed secret %s in %s", c.Name, p.name)
				} else {
					caught++
				}
				if (rep.Total() == 0) != (string(in) == string(out)) {
					t.Errorf("%s in %s: report %v does not match the change", c.Name, p.name, rep)
				}
			case "lookalike":
				lookN++
				if rep.Total() > 0 || string(out) != string(in) {
					t.Logf("look-alike %s in %s redacted: %v", c.Name, p.name, rep)
					touched++
				}
			}
		}
	}
	recallRate := float64(caught) / float64(secretsN)
	fpRate := float64(touched) / float64(lookN)
	t.Logf("secrets redacted: %d of %d (%.1f%%); look-alikes redacted: %d of %d (%.1f%%)",
		caught, secretsN, 100*recallRate, touched, lookN, 100*fpRate)
	if secretsN < 50*len(placements) || lookN < 50*len(placements) {
		t.Errorf("the corpus has %d secrets and %d look-alikes placed; want 50 of each in each placement", secretsN, lookN)
	}
	if recallRate < 0.95 {
		t.Errorf("redacted %.1f%% of the secrets, want at least 95%%", 100*recallRate)
	}
	if fpRate > 0.05 {
		t.Errorf("redacted %.1f%% of the look-alikes, want at most 5%%", 100*fpRate)
	}
}

// TestCorpusAfterTheFact measures recall redact on the corpus: every
// case in every placement is stored as it is, one session each, then
// redacted after the fact with Redactor.Session. The same bounds hold as
// on write, every session verifies afterwards, and the log of each that
// held a secret ends with a redaction entry.
func TestCorpusAfterTheFact(t *testing.T) {
	ctx := context.Background()
	r, err := secrets.New(secrets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New(memstore.Options{})
	type stored struct {
		c   corpusCase
		key recall.Key
	}
	var all []stored
	for i, c := range loadCorpus(t) {
		for j, p := range placements {
			key := recall.Key{Project: "corpus", Session: fmt.Sprintf("c%d-p%d", i, j)}
			if _, err := st.Append(ctx, key, recall.Guard{}, recall.Message("user", "look at this").Entry(), recall.Item(p.item(c.Text)).Entry()); err != nil {
				t.Fatal(err)
			}
			all = append(all, stored{c, key})
		}
	}
	var secretsN, caught, lookN, touched int
	for _, s := range all {
		res, err := r.Session(ctx, st, s.key, false)
		if err != nil {
			t.Fatal(err)
		}
		_, log, err := st.Load(ctx, s.key)
		if err != nil {
			t.Fatal(err)
		}
		if res.Report.Total() > 0 && log[len(log)-1].Kind != recall.KindRedaction {
			t.Errorf("%s: redacted without a redaction entry", s.c.Name)
		}
		held := contains(log[1].Data, s.c.Value)
		switch s.c.Kind {
		case "secret":
			secretsN++
			if !held {
				caught++
			}
		case "lookalike":
			lookN++
			if res.Report.Total() > 0 || !held {
				touched++
			}
		}
	}
	if err := storekit.Verify(ctx, st); err != nil {
		t.Error(err)
	}
	recallRate, fpRate := float64(caught)/float64(secretsN), float64(touched)/float64(lookN)
	t.Logf("after the fact: secrets redacted: %d of %d (%.1f%%); look-alikes redacted: %d of %d (%.1f%%)",
		caught, secretsN, 100*recallRate, touched, lookN, 100*fpRate)
	if recallRate < 0.95 || fpRate > 0.05 {
		t.Errorf("after the fact: %.1f%% of the secrets (want >= 95%%), %.1f%% of the look-alikes (want <= 5%%)", 100*recallRate, 100*fpRate)
	}
}
