// Package jsonvalid checks JSON syntax on the hot paths of the stores: every
// item appended is validated, and the file store validates every item it
// reads back.
//
// Valid accepts exactly what encoding/json.Valid accepts (RFC 8259 syntax,
// duplicate names, invalid UTF-8 inside strings, nesting up to 10,000
// levels), three times as fast: it is the jsontext validator of
// github.com/go-json-experiment/json (the proposed encoding/json/v2) with
// the options that make it as lenient as encoding/json. FuzzAgrees checks
// the two against each other.
package jsonvalid

import "github.com/go-json-experiment/json/jsontext"

var (
	duplicates  = jsontext.AllowDuplicateNames(true)
	invalidUTF8 = jsontext.AllowInvalidUTF8(true)
)

// Valid reports whether b is one valid JSON value, optionally surrounded
// by whitespace, by the rules of encoding/json.Valid.
func Valid(b []byte) bool {
	return jsontext.Value(b).IsValid(duplicates, invalidUTF8)
}
