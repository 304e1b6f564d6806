package storeurl

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// params are a URL's query parameters, which the built-in openers take one
// by one; whatever no opener takes is an error, so a misspelt option is
// never silently ignored.
type params struct {
	u      *url.URL
	values url.Values
}

func newParams(u *url.URL) *params { return &params{u: u, values: u.Query()} }

// take removes and returns parameter name ("" when absent).
func (p *params) take(name string) string {
	v := p.values.Get(name)
	p.values.Del(name)
	return v
}

// maxItemSize takes max_item_size.
func (p *params) maxItemSize() (int, error) {
	v := p.take("max_item_size")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, p.errorf("max_item_size %q is not a positive number of bytes", v)
	}
	return n, nil
}

// done fails if parameters are left that no one took, naming those known.
func (p *params) done(known ...string) error {
	if len(p.values) == 0 {
		return nil
	}
	return p.errorf("unknown option %s (this store takes %s)",
		strings.Join(slices.Sorted(maps.Keys(p.values)), ", "), strings.Join(append(known, "max_item_size"), ", "))
}

// rest returns the URL without the parameters that were taken, for a
// driver that parses the rest itself.
func (p *params) rest() string {
	u := *p.u
	u.RawQuery = p.values.Encode()
	return u.String()
}

// errorf returns an error about the URL (ErrInvalidURL), which it names
// redacted.
func (p *params) errorf(format string, args ...any) error {
	return &invalidURL{fmt.Errorf("storeurl: %s: %s", Redact(p.u.String()), fmt.Sprintf(format, args...))}
}
