package sqlstore

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A search's plan on the trigram index: which grams each term asks for,
// as FTS5 or pg_trgm and LIKE want them.

// indexPlan is how the trigram index serves a query.
type indexPlan struct {
	// match is the FTS5 query of the candidate rows (SQLite), or "".
	// The rows not yet in the index (the tail, see ftsBatch) are
	// candidates too.
	match string
	// tailOnly: only the tail can hold a match (SQLite), since some term
	// begins no trigram of the index.
	tailOnly bool
	// like are the strings checked with LIKE, which pg_trgm's index
	// serves (PostgreSQL): the words of three characters or more of each
	// term (see likeWords). A term that is one of them is checked by its
	// LIKE alone, the others by strpos too.
	like []string
	// grams are the codes of the terms of two CJK characters (see
	// cjkBigrams), which PostgreSQL's bigram index looks rows up by;
	// strpos checks the terms.
	grams []int32
}

// maxPrefixGrams bounds the trigrams a two-character term is looked up
// by; a term that begins more is as well found by reading every row.
const maxPrefixGrams = 256

// plan returns the indexPlan of the query. On SQLite a term of three
// characters or more asks for its trigrams (a few of them, see
// ftsTrigrams), and one of two for any trigram that begins with it (every
// place it occurs begins one, see the migration); one character is left to
// instr alone.
func (sq searchQuery) plan(ctx context.Context, tx querier) (indexPlan, error) {
	var p indexPlan
	var groups []string
	for _, t := range sq.terms {
		n := utf8.RuneCountInString(t)
		switch {
		case sq.pg:
			if n >= 3 {
				p.like = append(p.like, likeWords(t)...)
			} else if code, ok := termBigram(t); ok {
				p.grams = append(p.grams, code)
			}
		case n >= 3:
			groups = append(groups, ftsTrigrams(t)...)
		case n == 2:
			grams, err := prefixGrams(ctx, tx, t)
			if err != nil {
				return indexPlan{}, err
			}
			if len(grams) == 0 {
				return indexPlan{tailOnly: true}, nil
			}
			if len(grams) <= maxPrefixGrams {
				for i, g := range grams {
					grams[i] = ftsString(g)
				}
				groups = append(groups, "("+strings.Join(grams, " OR ")+")")
			}
		}
	}
	slices.Sort(groups)
	p.match = strings.Join(slices.Compact(groups), " AND ")
	slices.Sort(p.like)
	p.like = slices.Compact(p.like)
	slices.Sort(p.grams)
	p.grams = slices.Compact(p.grams)
	return p, nil
}

// termBigram returns the code in the bigram index (PostgreSQL) of a term
// of two CJK characters, and false for any other term.
func termBigram(term string) (int32, bool) {
	a, n := utf8.DecodeRuneInString(term)
	b, m := utf8.DecodeRuneInString(term[n:])
	if n+m != len(term) || !isCJK(a) || !isCJK(b) {
		return 0, false
	}
	return bigramCode(a, b), true
}

// prefixGrams returns the trigrams of the index that begin with term, up
// to one more than maxPrefixGrams.
func prefixGrams(ctx context.Context, tx querier, term string) ([]string, error) {
	// "\xff" follows every UTF-8 text that begins with term.
	rs, err := tx.query(ctx, `SELECT term FROM search_vocab WHERE term >= $1 AND term < $2 LIMIT $3`,
		term, term+"\xff", maxPrefixGrams+1)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var g string
		if err := rs.Scan(&g); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rs.Err()
}

// likeWords returns the strings pg_trgm's index looks a term of three
// characters or more up by (LIKE '%word%'): its words (runs of letters and
// digits) of three characters or more, or the term itself when it has
// none. pg_trgm reads a pattern's words, padding each with spaces where
// a word ends inside the pattern: the trigrams of a word's first letter,
// or its first two, after a space ("  q", " qu") are among the commonest
// of any text. A word alone has none of them, and every row that holds
// the term holds its words; strpos then checks the term.
func likeWords(term string) []string {
	words := strings.FieldsFunc(term, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	var out []string
	for _, w := range words {
		if utf8.RuneCountInString(w) >= 3 {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return []string{term}
	}
	return out
}

// likePattern returns the LIKE pattern of the rows holding term.
func likePattern(term string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(term) + "%"
}

// ftsMaxTrigrams bounds the trigrams of one term an FTS5 query asks for:
// a few, spread over the term, select as well as all of them, and cost
// less to intersect.
const ftsMaxTrigrams = 12

// ftsTrigrams returns the trigrams of term (three characters or more)
// that its FTS5 query asks for, as FTS5 strings: all of them, or
// ftsMaxTrigrams or so spread over a long term, the last included.
func ftsTrigrams(term string) []string {
	r := []rune(term)
	n := len(r) - 2
	step := 1
	if n > ftsMaxTrigrams {
		step = (n + ftsMaxTrigrams - 1) / ftsMaxTrigrams
	}
	var grams []string
	for i := 0; i < n; i += step {
		grams = append(grams, ftsString(string(r[i:i+3])))
	}
	if (n-1)%step != 0 {
		grams = append(grams, ftsString(string(r[n-1:n+2])))
	}
	return grams
}

// ftsString quotes s as an FTS5 string.
func ftsString(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
