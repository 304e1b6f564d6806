package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseAge parses an age such as "30d", "12h", "90m", "1d12h" or any Go
// duration ("1h30m"). A day is 24 hours. The age must be positive.
func parseAge(s string) (time.Duration, error) {
	rest := strings.TrimSpace(s)
	var d time.Duration
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		days, err := strconv.ParseUint(rest[:i], 10, 16)
		if err != nil {
			return 0, fmt.Errorf("bad age %q: days must be a whole number", s)
		}
		d = time.Duration(days) * 24 * time.Hour
		rest = rest[i+1:]
	}
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("bad age %q: use d, h, m or s, as in 30d or 12h", s)
		}
		d += r
	}
	if d <= 0 {
		return 0, fmt.Errorf("bad age %q: must be more than zero", s)
	}
	return d, nil
}
