package secrets

import "testing"

// TestGates checks that every gate found its rule with the keyword it
// expects, so that a change of gitleaks' rules is noticed here rather
// than as a slower scan.
func TestGates(t *testing.T) {
	d, err := defaultDetector()
	if err != nil {
		t.Fatal(err)
	}
	if len(d.gated) != len(gates) {
		t.Errorf("%d of the %d gates apply: a rule of gates changed its keywords", len(d.gated), len(gates))
	}
	if len(d.near.Config.Rules) < 50 || len(d.wide.Config.Rules) < 100 {
		t.Errorf("near has %d rules and wide %d: gitleaks' semi-generic rules changed their form", len(d.near.Config.Rules), len(d.wide.Config.Rules))
	}
	for _, c := range []struct {
		g    gate
		text string
		want bool
	}{
		{gates["jwt"], "the key is here", false},
		{gates["jwt"], "token eyjhbgcioijiuzi1niisinr5cci6ikpxvcj9.eyj", true},
		{gates["vault-service-token"], "it works. yes.", false},
		{gates["vault-service-token"], "token s.abcdefghijklmnopqrstuvwx", true},
	} {
		if got := c.g.open(c.text); got != c.want {
			t.Errorf("gate %q on %q: %v, want %v", c.g.keyword, c.text, got, c.want)
		}
	}
}

func TestAssigned(t *testing.T) {
	for text, want := range map[string]bool{
		`key, %d)`:                      false,
		`key recall.Key) error`:         false,
		`key = "q7Lx9vR2mN4tZ8wKp3Jd"`:  true,
		`key": "q7Lx9vR2mN4tZ8wKp3Jd"`:  true,
		`key := q7Lx9vR2mN4tZ8wKp3Jd`:   true,
		`key => 'q7Lx9vR2mN4tZ8wKp3Jd'`: true,
		`key: short`:                    false,
	} {
		if got := assigned(text, len("key")); got != want {
			t.Errorf("assigned(%q) = %v, want %v", text, got, want)
		}
	}
}
