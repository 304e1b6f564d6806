package search

import (
	"slices"
	"strings"
)

// The trigram planner: how a store with a trigram index (SQLite's FTS5
// trigram tokenizer, as both SQLite indexes here use it) finds the rows
// that may hold every term, before it checks each candidate's text with
// Query.Match. The stores supply the index access; the plan is the same.

// Window is how many of the newest rows (after the cursor, within the
// filters on rows) an index first matches directly: a common word fills
// its page there at once, and a rarer one is looked up through the
// trigram index, which then yields few candidates to sort. It is also how
// many candidates an index sorts rather than read the newest rows first:
// sorting that many reads as many rows as one window does.
const Window = 4096

// MaxPrefixGrams bounds the trigrams a two-character term is looked up by
// (every place it occurs begins one); a term that begins more is as well
// found by reading the rows.
const MaxPrefixGrams = 256

// MaxTermGrams bounds the trigrams of one term a query asks for: a few,
// spread over the term, select as well as all of them and cost less to
// intersect.
const MaxTermGrams = 12

// TrigramMatch returns the FTS5 query of the rows that may hold every
// term of q: the AND of the trigrams of each term of three characters or
// more (MaxTermGrams of them, spread over a long term, the last one
// included), and for a term of two, the OR of the index's trigrams that
// begin with it, which prefix returns (up to MaxPrefixGrams+1 of them; a
// term with more is left to Query.Match). A term of one character, or one
// holding a NUL (FTS5 reads a query up to a NUL), asks for nothing.
//
// It returns "" when no term has trigrams to ask for (every row is a
// candidate), and some false when a term begins no trigram of the index,
// so no row holds it.
func TrigramMatch(q Query, prefix func(term string) ([]string, error)) (match string, some bool, err error) {
	var groups []string
	for _, t := range q.Terms {
		if strings.IndexByte(t, 0) >= 0 {
			continue
		}
		r := []rune(t)
		switch n := len(r); {
		case n >= 3:
			step := max(1, (n-2+MaxTermGrams-1)/MaxTermGrams)
			for i := 0; i < n-2; i += step {
				groups = append(groups, ftsString(string(r[i:i+3])))
			}
			groups = append(groups, ftsString(string(r[n-3:])))
		case n == 2:
			grams, err := prefix(t)
			if err != nil {
				return "", false, err
			}
			if len(grams) == 0 {
				return "", false, nil
			}
			if len(grams) <= MaxPrefixGrams {
				quoted := make([]string, len(grams))
				for i, g := range grams {
					quoted[i] = ftsString(g)
				}
				groups = append(groups, "("+strings.Join(quoted, " OR ")+")")
			}
		}
	}
	slices.Sort(groups)
	return strings.Join(slices.Compact(groups), " AND "), true, nil
}

// ftsString quotes s as an FTS5 string.
func ftsString(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
