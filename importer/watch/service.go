package watch

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/durable"
)

// Service is a user service that runs a command at login and keeps it
// running: a watcher, for one.
type Service struct {
	// Name names the service: the systemd unit is Name.service, the
	// launchd agent's label is LabelPrefix+Name.
	Name string
	// Description is one line for people.
	Description string
	// Args is the command line, the executable (an absolute path) first.
	Args []string
	// Env holds KEY=value pairs the command runs with (a service does not
	// inherit the variables of the shell that installed it).
	Env []string
}

// LabelPrefix begins the label of a launchd agent Install writes.
const LabelPrefix = "com.github.recallkit."

// Install writes svc's file where the service manager of goos (a
// runtime.GOOS value) looks for a user's services, replacing one written
// before: a systemd user unit under $XDG_CONFIG_HOME/systemd/user
// (default ~/.config/systemd/user) on Linux, a launchd agent under
// ~/Library/LaunchAgents on macOS. It returns the file's path and the
// shell command that enables and starts the service. On other systems it
// returns an error wrapping recall.ErrUnsupported (on Windows,
// TaskCommand gives the command that registers the service instead).
func Install(goos string, svc Service) (path, enable string, err error) {
	if svc.Name == "" || len(svc.Args) == 0 {
		return "", "", fmt.Errorf("watch: install: the service needs a name and a command")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", "", fmt.Errorf("watch: install: %w", err)
	}
	var content string
	switch goos {
	case "linux":
		dir := os.Getenv("XDG_CONFIG_HOME")
		if dir == "" || !filepath.IsAbs(dir) { // the XDG spec ignores a relative one
			dir = filepath.Join(home, ".config")
		}
		path = filepath.Join(dir, "systemd", "user", svc.Name+".service")
		enable = "systemctl --user daemon-reload && systemctl --user enable --now " + svc.Name + ".service"
		content, err = SystemdUnit(svc)
	case "darwin":
		label := LabelPrefix + svc.Name
		path = filepath.Join(home, "Library", "LaunchAgents", label+".plist")
		enable = "launchctl bootstrap gui/$(id -u) " + shellQuote(path)
		content = LaunchdPlist(svc, filepath.Join(home, "Library", "Logs", svc.Name+".log"))
	default:
		return "", "", fmt.Errorf("watch: install a service on %s: %w", goos, recall.ErrUnsupported)
	}
	if err != nil {
		return "", "", err
	}
	if err := writeFile(path, content); err != nil {
		return "", "", fmt.Errorf("watch: install: %w", err)
	}
	return path, enable, nil
}

// writeFile replaces path with content atomically (durable.WriteFile).
// The file is the owner's alone (CreateTemp's mode, 0600): it may hold a
// store URL with its password.
func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return durable.WriteFile(path, "."+filepath.Base(path)+".*", []byte(content))
}

// SystemdUnit returns svc as a systemd user unit: started at login,
// restarted after a failure (not after a clean stop), its output in the
// journal (journalctl --user -u NAME). A value with a line break cannot be
// written into a unit and is an error.
func SystemdUnit(svc Service) (string, error) {
	for _, s := range append(append([]string{svc.Description}, svc.Args...), svc.Env...) {
		if strings.ContainsAny(s, "\n\r") {
			return "", fmt.Errorf("watch: a systemd unit cannot hold %q: it has a line break", s)
		}
	}
	var b strings.Builder
	b.WriteString("[Unit]\n")
	fmt.Fprintf(&b, "Description=%s\n", strings.ReplaceAll(svc.Description, "%", "%%"))
	b.WriteString("\n[Service]\nType=simple\n")
	args := make([]string, len(svc.Args))
	for i, a := range svc.Args {
		args[i] = systemdQuote(strings.ReplaceAll(a, "$", "$$"))
	}
	fmt.Fprintf(&b, "ExecStart=%s\n", strings.Join(args, " "))
	for _, e := range svc.Env {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote(e))
	}
	b.WriteString("Restart=on-failure\nRestartSec=10\n")
	b.WriteString("\n[Install]\nWantedBy=default.target\n")
	return b.String(), nil
}

// systemdQuote quotes s for a unit file's command line or Environment=:
// in double quotes when it holds anything beyond a safe set, with '%'
// doubled (systemd expands %-specifiers in both).
func systemdQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if plain(s) {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// LaunchdPlist returns svc as a launchd agent: started at login,
// restarted after a failure (not after a clean exit), its output
// appended to logFile.
func LaunchdPlist(svc Service, logFile string) string {
	var b strings.Builder
	str := func(indent, s string) {
		b.WriteString(indent + "<string>")
		_ = xml.EscapeText(&b, []byte(s))
		b.WriteString("</string>\n")
	}
	key := func(indent, k string) {
		b.WriteString(indent + "<key>")
		_ = xml.EscapeText(&b, []byte(k))
		b.WriteString("</key>\n")
	}
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
`)
	key("\t", "Label")
	str("\t", LabelPrefix+svc.Name)
	key("\t", "ProgramArguments")
	b.WriteString("\t<array>\n")
	for _, a := range svc.Args {
		str("\t\t", a)
	}
	b.WriteString("\t</array>\n")
	if len(svc.Env) > 0 {
		key("\t", "EnvironmentVariables")
		b.WriteString("\t<dict>\n")
		for _, e := range svc.Env {
			k, v, _ := strings.Cut(e, "=")
			key("\t\t", k)
			str("\t\t", v)
		}
		b.WriteString("\t</dict>\n")
	}
	b.WriteString("\t<key>RunAtLoad</key>\n\t<true/>\n")
	b.WriteString("\t<key>KeepAlive</key>\n\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n")
	b.WriteString("\t<key>ThrottleInterval</key>\n\t<integer>10</integer>\n")
	key("\t", "StandardOutPath")
	str("\t", logFile)
	key("\t", "StandardErrorPath")
	str("\t", logFile)
	b.WriteString("</dict>\n</plist>\n")
	return b.String()
}

// TaskCommand returns the schtasks command that registers svc with the
// Windows Task Scheduler, to run at logon. The task runs with the user's
// own environment, so svc.Env is not part of it.
func TaskCommand(svc Service) string {
	args := make([]string, len(svc.Args))
	for i, a := range svc.Args {
		args[i] = a
		if !plain(a) { // a Windows path has no '"'
			args[i] = `\"` + a + `\"`
		}
	}
	return fmt.Sprintf(`schtasks /Create /SC ONLOGON /TN "%s" /TR "%s"`, svc.Name, strings.Join(args, " "))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if plain(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// plain reports whether s needs no quotes: a shell, systemd and schtasks
// take it as one word as it is.
func plain(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == ""
}
