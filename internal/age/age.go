// Package age reads and writes the ages people type: "30d", "12h", "1y",
// "2w", "90m", "1d12h", or any positive Go duration; and says how long ago
// a time was ("3h ago", Ago) for every listing recall prints.
package age

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxAge is the longest age Parse accepts: a hundred years. Anything
// longer is a typo, and would overflow time.Duration soon after.
const maxAge = 100 * 365 * 24 * time.Hour

// ageUnits are the units Parse knows beyond Go's, in the order they
// must appear. A year is 365 days, a week 7 and a day 24 hours.
var ageUnits = []struct {
	unit byte
	d    time.Duration
}{
	{'y', 365 * 24 * time.Hour},
	{'w', 7 * 24 * time.Hour},
	{'d', 24 * time.Hour},
}

// errAge is the reason every bad age shares.
var errAge = errors.New("use a positive whole number and a unit: y, w, d, h, m or s, as in 30d, 12h or 1d12h")

// Parse parses an age such as "30d", "12h", "1y", "2w", "90m",
// "1d12h" or any positive Go duration ("1h30m"). It refuses negative and
// zero ages and ones longer than a hundred years.
func Parse(s string) (time.Duration, error) {
	rest := strings.TrimSpace(s)
	if rest == "" {
		return 0, fmt.Errorf("bad age %q: %w", s, errAge)
	}
	if strings.HasPrefix(rest, "-") {
		return 0, fmt.Errorf("bad age %q: an age cannot be negative", s)
	}
	var d time.Duration
	for _, u := range ageUnits {
		i := strings.IndexByte(rest, u.unit)
		if i < 0 {
			continue
		}
		n, err := strconv.ParseUint(rest[:i], 10, 32)
		if err != nil || i == 0 {
			if errors.Is(err, strconv.ErrRange) {
				return 0, fmt.Errorf("bad age %q: longer than 100 years", s)
			}
			return 0, fmt.Errorf("bad age %q: %w", s, errAge)
		}
		if time.Duration(n) > maxAge/u.d {
			return 0, fmt.Errorf("bad age %q: longer than 100 years", s)
		}
		d += time.Duration(n) * u.d
		rest = rest[i+1:]
	}
	if rest != "" {
		if strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, "+") {
			return 0, fmt.Errorf("bad age %q: %w", s, errAge)
		}
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("bad age %q: %w", s, errAge)
		}
		d += r
	}
	switch {
	case d <= 0:
		return 0, fmt.Errorf("bad age %q: must be more than zero", s)
	case d > maxAge:
		return 0, fmt.Errorf("bad age %q: longer than 100 years", s)
	}
	return d, nil
}

// Format writes d in the largest of Parse's units that divides it
// evenly: 365 days as "1y", 14 days as "2w", 30 days as "30d", else Go's
// form ("36h0m0s" as "36h"). Parse reads what it writes.
func Format(d time.Duration) string {
	for _, u := range ageUnits {
		if d >= u.d && d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + string(u.unit)
		}
	}
	if d%time.Hour == 0 {
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	if d%time.Minute == 0 {
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}

// Ago says how long before now t was, the way recall's listings show it
// (the CLI, the web viewer and the MCP tools): "just now", "5m ago",
// "3h ago", "12d ago", and from 30 days on the date, as 2026-05-09 in
// the local time zone. A zero t is "-".
func Ago(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "-"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
	return t.Local().Format("2006-01-02")
}
