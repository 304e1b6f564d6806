package main

import (
	"runtime/debug"
	"strings"
)

// version describes the binary: the module version (v1.2.3, or "(devel)"
// for a build from a work tree) and, when the build recorded them, the VCS
// commit, its time and whether the tree had changes. It comes from
// runtime/debug.ReadBuildInfo, so "go install ...@v1.2.3" and "go build"
// in a clone both say what they are.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	return describeBuild(info)
}

// describeBuild renders info as version prints it.
func describeBuild(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	var b strings.Builder
	b.WriteString(v)
	if rev != "" {
		b.WriteString(" commit " + rev)
		if dirty {
			b.WriteString(" (modified)")
		}
		if at != "" {
			b.WriteString(" " + at)
		}
	}
	b.WriteString(" " + info.GoVersion)
	return b.String()
}
