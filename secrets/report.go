package secrets

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Report counts the secrets redacted, by rule id. It never holds a
// secret, so it is safe to print and log.
type Report map[string]int

// Total returns the number of secrets redacted.
func (r Report) Total() int {
	n := 0
	for _, c := range r {
		n += c
	}
	return n
}

// Add adds the counts of o to r.
func (r Report) Add(o Report) {
	for rule, n := range o {
		r[rule] += n
	}
}

// String summarises r, most frequent rule first:
// "3 secrets: 2 aws-access-token, 1 github-pat", or "no secrets".
func (r Report) String() string {
	total := r.Total()
	if total == 0 {
		return "no secrets"
	}
	rules := slices.Collect(maps.Keys(r))
	slices.SortFunc(rules, func(a, b string) int {
		if r[a] != r[b] {
			return r[b] - r[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(rules))
	for _, rule := range rules {
		if r[rule] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", r[rule], rule))
		}
	}
	noun := "secrets"
	if total == 1 {
		noun = "secret"
	}
	return fmt.Sprintf("%d %s: %s", total, noun, strings.Join(parts, ", "))
}
