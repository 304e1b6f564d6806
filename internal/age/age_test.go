package age

import (
	"testing"
	"time"
)

func TestParseAge(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"30d", 30 * 24 * time.Hour, false},
		{"12h", 12 * time.Hour, false},
		{"90m", 90 * time.Minute, false},
		{"1d12h", 36 * time.Hour, false},
		{"1h30m", 90 * time.Minute, false},
		{"45s", 45 * time.Second, false},
		{"0d", 0, true},
		{"-1h", 0, true},
		{"d", 0, true},
		{"1.5d", 0, true},
		{"30", 0, true},
		{"3x", 0, true},
		{"", 0, true},
		{"99999999d", 0, true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, error %t", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestAges covers the ages gc and search take.
func TestAges(t *testing.T) {
	const day = 24 * time.Hour
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"30d", 30 * day}, {"12h", 12 * time.Hour}, {"1y", 365 * day}, {"2w", 14 * day},
		{"1y30d", 395 * day}, {"1d12h", 36 * time.Hour}, {"90m", 90 * time.Minute}, {"100y", 100 * 365 * day},
	} {
		if got, err := Parse(tt.in); err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"-1d", "-1h", "999999d", "101y", "6000w", "0y", "1d-2h", "y", "1.5y", "d1", "1d2y", "99999999999h"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, got)
		}
	}
}

func TestFormat(t *testing.T) {
	const day = 24 * time.Hour
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{365 * day, "1y"}, {730 * day, "2y"}, {14 * day, "2w"}, {30 * day, "30d"}, {day, "1d"},
		{36 * time.Hour, "36h"}, {90 * time.Minute, "90m"}, {45 * time.Second, "45s"},
	} {
		got := Format(tt.d)
		if got != tt.want {
			t.Errorf("Format(%v) = %q, want %q", tt.d, got, tt.want)
		}
		if back, err := Parse(got); err != nil || back != tt.d {
			t.Errorf("Parse(Format(%v)) = %v, %v", tt.d, back, err)
		}
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 6, 23, 14, 30, 0, 0, time.Local)
	tests := map[time.Duration]string{
		10 * time.Second:    "just now",
		5 * time.Minute:     "5m ago",
		3 * time.Hour:       "3h ago",
		49 * time.Hour:      "2d ago",
		29 * 24 * time.Hour: "29d ago",
		45 * 24 * time.Hour: "2026-05-09",
	}
	for d, want := range tests {
		if got := Ago(now.Add(-d), now); got != want {
			t.Errorf("Ago(-%v) = %q, want %q", d, got, want)
		}
	}
	if got := Ago(time.Time{}, now); got != "-" {
		t.Errorf("Ago(zero) = %q, want -", got)
	}
}
