package sqlstore

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/recallkit/recall/search"
)

// A search's plan on the trigram index: which grams each term asks for,
// as FTS5 or pg_trgm and LIKE want them.

// indexPlan is how the trigram index serves a query.
type indexPlan struct {
	// match is the FTS5 query of the candidate rows (SQLite), or "".
	match string
	// none: no row holds a match (SQLite), since some term begins no
	// trigram of the index, which holds every row.
	none bool
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

// plan returns the indexPlan of the query: on SQLite the FTS5 query of
// search.TrigramMatch over the index's vocabulary; on PostgreSQL the words
// pg_trgm looks up and the codes of two-character CJK terms.
func (sq searchQuery) plan(ctx context.Context, tx querier) (indexPlan, error) {
	if !sq.pg {
		match, some, err := search.TrigramMatch(search.Query{Terms: sq.terms}, func(term string) ([]string, error) {
			return prefixGrams(ctx, tx, term)
		})
		return indexPlan{match: match, none: !some}, err
	}
	var p indexPlan
	for _, t := range sq.terms {
		if utf8.RuneCountInString(t) >= 3 {
			p.like = append(p.like, likeWords(t)...)
		} else if code, ok := termBigram(t); ok {
			p.grams = append(p.grams, code)
		}
	}
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
// to one more than search.MaxPrefixGrams.
func prefixGrams(ctx context.Context, tx querier, term string) ([]string, error) {
	// "\xff" follows every UTF-8 text that begins with term.
	rs, err := tx.query(ctx, `SELECT term FROM search_vocab WHERE term >= $1 AND term < $2 LIMIT $3`,
		term, term+"\xff", search.MaxPrefixGrams+1)
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
