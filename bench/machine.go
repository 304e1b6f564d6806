package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine describes where the numbers were measured.
type machine struct {
	date      time.Time
	cores     int
	cpu       string
	memory    string
	os        string
	goVersion string
	dataDir   string
	fs        string
	load      string
}

func describeMachine(dataDir string) machine {
	m := machine{
		date:      time.Now().UTC(),
		cores:     runtime.NumCPU(),
		cpu:       "unknown CPU",
		memory:    "unknown",
		os:        runtime.GOOS + "/" + runtime.GOARCH,
		goVersion: runtime.Version(),
		dataDir:   dataDir,
		fs:        "unknown file system",
		load:      "unknown",
	}
	if v := procField("/proc/cpuinfo", "model name"); v != "" {
		m.cpu = v
	}
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		if kb, err := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64); err == nil {
			m.memory = fmt.Sprintf("%.1f GiB", kb/(1<<20))
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.os += " (Linux " + strings.TrimSpace(string(b)) + ")"
	}
	if l := loadAverage(); l != "" {
		m.load = l
	}
	if fs := fileSystem(dataDir); fs != "" {
		m.fs = fs
	}
	return m
}

// loadAverage returns the 1, 5 and 15 minute load averages, or "" where
// /proc/loadavg is missing.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// procField returns the value of the first "key: value" line of a /proc
// file, or "".
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// fileSystem returns the type of the file system dir is on, from the
// longest mount point of /proc/mounts that holds it: fsync costs nothing
// on tmpfs, so the report must say.
func fileSystem(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return ""
	}
	best, fs := "", ""
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		mnt := f[1]
		if (abs == mnt || strings.HasPrefix(abs, strings.TrimSuffix(mnt, "/")+"/")) && len(mnt) > len(best) {
			best, fs = mnt, f[2]
		}
	}
	return fs
}
