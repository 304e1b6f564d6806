package watch

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall"
)

var testService = Service{
	Name:        "recall-watch-claude-code",
	Description: "recall: import claude-code transcripts as they are written",
	Args:        []string{"/opt/my tools/recall", "--store", "postgres://u:p%41ss$x@db/recall", "import", "--watch", "claude-code"},
	Env:         []string{"RECALL_HOME=/home/me/my recall", "CLAUDE_CONFIG_DIR=/home/me/.claude"},
}

func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	got, err := SystemdUnit(testService)
	if err != nil {
		t.Fatal(err)
	}
	want := `[Unit]
Description=recall: import claude-code transcripts as they are written

[Service]
Type=simple
ExecStart="/opt/my tools/recall" --store "postgres://u:p%%41ss$$x@db/recall" import --watch claude-code
Environment="RECALL_HOME=/home/me/my recall"
Environment=CLAUDE_CONFIG_DIR=/home/me/.claude
Restart=on-failure
RestartSec=10

[Install]
WantedBy=default.target
`
	if got != want {
		t.Errorf("unit:\n%s\nwant:\n%s", got, want)
	}
	bad := testService
	bad.Args = []string{"/bin/recall", "a\nb"}
	if _, err := SystemdUnit(bad); err == nil {
		t.Error("an argument with a line break: no error")
	}
}

func TestLaunchdPlist(t *testing.T) {
	t.Parallel()
	svc := testService
	svc.Args = append(svc.Args, "<&>")
	got := LaunchdPlist(svc, "/Users/me/Library/Logs/recall-watch-claude-code.log")
	// Well-formed, with every string as it was.
	var strs []string
	dec := xml.NewDecoder(strings.NewReader(got))
	dec.Strict = true
	var in string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("plist does not parse: %v\n%s", err, got)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			in = tok.Name.Local
		case xml.CharData:
			if in == "string" || in == "key" {
				strs = append(strs, string(tok))
			}
		case xml.EndElement:
			in = ""
		}
	}
	joined := strings.Join(strs, "|")
	for _, want := range []string{
		"Label|com.github.recallkit.recall-watch-claude-code|ProgramArguments|/opt/my tools/recall|--store|postgres://u:p%41ss$x@db/recall|import|--watch|claude-code|<&>",
		"EnvironmentVariables|RECALL_HOME|/home/me/my recall|CLAUDE_CONFIG_DIR|/home/me/.claude",
		"StandardErrorPath|/Users/me/Library/Logs/recall-watch-claude-code.log",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("plist strings %q lack %q", joined, want)
		}
	}
	for _, want := range []string{"<key>RunAtLoad</key>\n\t<true/>", "<key>SuccessfulExit</key>\n\t\t<false/>"} {
		if !strings.Contains(got, want) {
			t.Errorf("plist lacks %q:\n%s", want, got)
		}
	}
}

// TestInstall writes the service of each system into a temporary home.
func TestInstall(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "xdg"))

	path, enable, err := Install("linux", testService)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, "xdg", "systemd", "user", "recall-watch-claude-code.service"); path != want {
		t.Errorf("linux: %s, want %s", path, want)
	}
	if enable != "systemctl --user daemon-reload && systemctl --user enable --now recall-watch-claude-code.service" {
		t.Errorf("linux: enable with %q", enable)
	}
	unit, _ := SystemdUnit(testService)
	checkFile(t, path, unit)

	t.Setenv("XDG_CONFIG_HOME", "")
	if path, _, err = Install("linux", testService); err != nil || path != filepath.Join(home, ".config", "systemd", "user", "recall-watch-claude-code.service") {
		t.Errorf("linux without XDG_CONFIG_HOME: %s, %v", path, err)
	}

	path, enable, err = Install("darwin", testService)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, "Library", "LaunchAgents", "com.github.recallkit.recall-watch-claude-code.plist"); path != want {
		t.Errorf("darwin: %s, want %s", path, want)
	}
	if !strings.HasPrefix(enable, "launchctl bootstrap gui/$(id -u) ") {
		t.Errorf("darwin: enable with %q", enable)
	}
	checkFile(t, path, LaunchdPlist(testService, filepath.Join(home, "Library", "Logs", "recall-watch-claude-code.log")))

	if _, _, err := Install("windows", testService); !errors.Is(err, recall.ErrUnsupported) {
		t.Errorf("windows: %v, want ErrUnsupported", err)
	}
	win := Service{Name: "recall-watch-codex", Args: []string{`C:\Program Files\recall\recall.exe`, "import", "--watch", "codex"}}
	if got, want := TaskCommand(win), `schtasks /Create /SC ONLOGON /TN "recall-watch-codex" /TR "\"C:\Program Files\recall\recall.exe\" import --watch codex"`; got != want {
		t.Errorf("TaskCommand:\n%s\nwant\n%s", got, want)
	}
}

// checkFile checks the content of a written service file, and that only
// its owner reads it (it may hold a store URL with a password).
func checkFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s:\n%s\nwant:\n%s", path, got, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, %v; want 0600", path, fi.Mode().Perm(), err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
