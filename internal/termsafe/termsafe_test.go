package termsafe

import "testing"

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want, keepTabs string }{
		{"plain 张三", "plain 张三", "plain 张三"},
		{"a\nb\tc", `a\nb\tc`, "a\\nb\tc"},
		{"\t", `\t`, "\t"},
		{"bad\xffbyte", `bad\xffbyte`, `bad\xffbyte`},
		{"\xe4\t", `\xe4\t`, "\\xe4\t"},
		{"bidi\u202eevil", `bidi\u202eevil`, `bidi\u202eevil`},
		{"ok \uFFFD", "ok \uFFFD", "ok \uFFFD"},
		{"\x1b]0;x\r", `\x1b]0;x\r`, `\x1b]0;x\r`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := EscapeKeepTabs(c.in); got != c.keepTabs {
			t.Errorf("EscapeKeepTabs(%q) = %q, want %q", c.in, got, c.keepTabs)
		}
	}
}
