// Package redact hides the secrets of store URLs and DSNs, and of the error
// messages about them, so that nothing recall prints or records shows a
// password. It is the one implementation of the rules; storeurl.Redact is
// its public face, and every backend builds its open errors with it.
//
// The rules:
//
//   - the password of a URL's user info is replaced by Mask (the user stays);
//   - the value of every query, fragment or key/value parameter whose name
//     looks secret is replaced by Mask: pwd, key, sig, and any name that
//     contains pass, secret, token, auth, credential or signature, or ends
//     in key (password, sslpassword, access_token, api_key...);
//   - a libpq keyword/value DSN ("host=h password='p w'") is handled;
//   - a string that does not parse as a URL is never echoed: only its
//     scheme and host are kept, when string scanning finds them unambiguous,
//     and Hidden stands for the rest.
//
// Driver errors may quote the URL they failed on, whole or in pieces;
// Message scrubs an error text knowing the URL it is about.
package redact

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Mask replaces a secret: the same as url.URL.Redacted uses, so a URL
// redacted by either reads the same.
const Mask = "xxxxx"

// Hidden stands for the part of a malformed URL that is not shown.
const Hidden = "[hidden]"

// URL returns raw (a store URL, a keyword/value DSN or a path) with every
// secret it may carry replaced (see the package documentation). A string
// with nothing to hide is returned unchanged; redacting twice is the same
// as redacting once.
func URL(raw string) string {
	switch {
	case raw == "":
		return ""
	case isKeyValue(raw):
		return maskAssignments(raw, kvValue)
	case isPlainPath(raw):
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return malformed(raw)
	}
	changed := false
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Mask)
			changed = true
		}
	}
	if o := maskOpaque(u.Opaque); o != u.Opaque {
		u.Opaque, changed = o, true
	}
	if q := maskQuery(u.RawQuery); q != u.RawQuery {
		u.RawQuery, changed = q, true
	}
	fragment := ""
	if u.Fragment != "" {
		if f := u.EscapedFragment(); maskQuery(f) != f {
			fragment = "#" + maskQuery(f)
			u.Fragment, u.RawFragment, changed = "", "", true
		}
	}
	if !changed {
		return raw
	}
	return u.String() + fragment
}

// isSecretParam reports whether a parameter of this name (in a URL query
// or a keyword/value DSN) carries a secret whose value must not be shown.
func isSecretParam(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "pwd", "key", "sig":
		return true
	}
	for _, part := range []string{"pass", "secret", "token", "auth", "credential", "signature"} {
		if strings.Contains(n, part) {
			return true
		}
	}
	return strings.HasSuffix(n, "key") // api_key, apikey, access_key
}

// Message returns msg, the text of an error about the store at raw, with
// raw itself redacted and every secret raw carries (and any of secrets, for
// example a password read from a password file) replaced by Mask, in any
// of the forms a driver may quote it. Parameters and URLs that appear in
// msg on their own are redacted too. When raw does not parse, quoted
// pieces of it (a bad escape, a port) are dropped, since which of its
// pieces are secret is unknown.
func Message(msg, raw string, secrets ...string) string {
	if raw != "" {
		if r := URL(raw); r != raw {
			msg = strings.ReplaceAll(msg, raw, r)
		}
	}
	all := slices.Concat(secretsOf(raw), secrets)
	// Longest first, so a secret that contains another is masked whole.
	slices.SortFunc(all, func(a, b string) int { return len(b) - len(a) })
	for _, s := range all {
		if s == "" || s == Mask {
			continue
		}
		for _, form := range forms(s) {
			msg = strings.ReplaceAll(msg, form, Mask)
		}
	}
	msg = userinfoInText.ReplaceAllString(msg, "${1}"+Mask+"@")
	msg = maskAssignments(msg, textValue)
	if raw != "" && !isKeyValue(raw) && !isPlainPath(raw) {
		if _, err := url.Parse(raw); err != nil {
			msg = dropQuotedPieces(msg, raw)
		}
	}
	return msg
}

// Wrap returns err as the error of op on the store at raw: its text is
// "op URL: message", with the URL redacted and the message scrubbed by
// Message; errors.Is and errors.As see err.
func Wrap(op, raw string, err error, secrets ...string) error {
	return &redacted{msg: op + " " + URL(raw) + ": " + Message(err.Error(), raw, secrets...), err: err}
}

// Clean returns err unchanged when its text shows none of raw's secrets,
// and otherwise an error with the text scrubbed by Message that wraps
// err: a last line of defence over errors from code that may have quoted
// the URL.
func Clean(err error, raw string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := Message(msg, raw); clean != msg {
		return &redacted{msg: clean, err: err}
	}
	return err
}

// redacted is an error whose text was scrubbed; the raw text is computed
// once and never kept.
type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// --- finding the parts

// kvStart matches the start of a libpq keyword/value DSN.
var kvStart = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*=`)

// isKeyValue reports whether raw is a keyword/value DSN rather than a URL.
func isKeyValue(raw string) bool {
	return kvStart.MatchString(raw) && !strings.Contains(raw, "://")
}

// isPlainPath reports whether raw is a file path with no place to hold a
// secret: no scheme, user info, query, fragment or parameter. Such a path
// is shown as is, even when it would not parse as a URL (a '%' in a name).
func isPlainPath(raw string) bool {
	if strings.ContainsAny(raw, "@?#=") {
		return false
	}
	scheme, _, ok := strings.Cut(raw, ":")
	return !ok || !IsScheme(scheme) || len(scheme) == 1 // C:\dir is a path
}

// IsScheme reports whether s is a URL scheme (RFC 3986).
func IsScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// maskOpaque masks the password of an opaque URL that has user info
// (postgres:user:pass@host/db): everything between the first ':' and the
// last '@'. Without a ':', the "scheme" was the user of a scheme-less
// user:pass@host, and all before the '@' is the password.
func maskOpaque(opaque string) string {
	if p, ok := opaquePassword(opaque); ok && p != Mask {
		at := strings.LastIndex(opaque, "@")
		return opaque[:at-len(p)] + Mask + opaque[at:]
	}
	return opaque
}

// opaquePassword returns what may be the password in an opaque URL's user
// info (see maskOpaque).
func opaquePassword(opaque string) (string, bool) {
	at := strings.LastIndex(opaque, "@")
	if at < 0 {
		return "", false
	}
	if c := strings.Index(opaque[:at], ":"); c >= 0 {
		return opaque[c+1 : at], true
	}
	return opaque[:at], true
}

// maskQuery masks the values of the secret parameters of a raw
// (still escaped) query, keeping everything else byte for byte.
func maskQuery(rawQuery string) string {
	if rawQuery == "" {
		return ""
	}
	// name=value pieces inside other values, too: a driver may read them.
	rawQuery = maskAssignments(rawQuery, textValue)
	parts := strings.Split(rawQuery, "&")
	for i, part := range parts {
		name, value, ok := strings.Cut(part, "=")
		if !ok || value == "" || value == Mask {
			continue
		}
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if isSecretParam(name) {
			parts[i] = part[:len(part)-len(value)] + Mask
		}
	}
	return strings.Join(parts, "&")
}

// assignment matches name=value, the value quoted in single quotes (libpq,
// with backslash escapes) or bare. Which bytes end a bare value depends on
// where the assignment stands, so it is left to the caller.
var assignment = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.-]*)(\s*=\s*)('(?:[^'\\]|\\.)*'?)?`)

// kvValue ends a bare value in a keyword/value DSN: only white space does.
// textValue ends one in free text, such as a query quoted in an error.
func kvValue(c byte) bool   { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func textValue(c byte) bool { return kvValue(c) || strings.IndexByte("&#;,\"'`)", c) >= 0 }

// maskAssignments replaces the value of every secret name=value in s.
func maskAssignments(s string, ends func(byte) bool) string {
	var b strings.Builder
	last := 0
	for _, m := range assignment.FindAllStringSubmatchIndex(s, -1) {
		if m[0] < last { // inside the value just masked
			continue
		}
		name := s[m[2]:m[3]]
		// A bare value runs up to the first end byte; so does whatever
		// follows a closing quote, as nothing can be known of it.
		valueStart, valueEnd := m[5], m[1]
		for valueEnd < len(s) && !ends(s[valueEnd]) {
			valueEnd++
		}
		// A value that starts with Mask was masked already; what follows
		// it ("xxxxx:" before a message) is not the secret.
		if !isSecretParam(name) || valueEnd == valueStart || strings.HasPrefix(s[valueStart:valueEnd], Mask) {
			continue
		}
		b.WriteString(s[last:valueStart])
		b.WriteString(Mask)
		last = valueEnd
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// userinfoInText matches the user info of a URL inside free text, up to
// the password.
var userinfoInText = regexp.MustCompile("([A-Za-z][A-Za-z0-9+.-]*://[^\\s/?#@:\"'`]*:)[^\\s/?#@\"'`]+@")

// malformed redacts a string that does not parse as a URL: it keeps the
// scheme, and the host when no '@' can hide a password in what looks like
// it, and shows Hidden for the rest. It never echoes the rest, since where
// its secrets are is unknown.
func malformed(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !IsScheme(scheme) {
		if s, _, ok := strings.Cut(raw, ":"); ok && IsScheme(s) {
			return strings.ToLower(s) + ":" + Hidden
		}
		return Hidden
	}
	scheme = strings.ToLower(scheme)
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	host := authority
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		host = authority[at+1:]
	}
	// A password with a raw '/', '?' or '#' would put its '@' after the
	// authority as scanned: then nothing of it can be trusted.
	if strings.Contains(rest[len(authority):], "@") || authority != "" && !plausibleHost(host) {
		return scheme + "://" + Hidden
	}
	return scheme + "://" + host + "/" + Hidden
}

// plausibleHost reports whether h is a host with an optional numeric
// port: a name or an address, nothing that could be a stray password.
func plausibleHost(h string) bool {
	if i := strings.LastIndex(h, ":"); i >= 0 && !strings.HasSuffix(h, "]") {
		port := h[i+1:]
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return false
		}
		h = h[:i]
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		return len(h) > 2 && strings.Trim(h[1:len(h)-1], "0123456789abcdefABCDEF:.") == ""
	}
	if h == "" {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// secretsOf returns the secret values raw carries, as written and decoded.
func secretsOf(raw string) []string {
	var out []string
	add := func(v string) {
		if v == "" || v == Mask {
			return
		}
		out = append(out, v)
		if d, err := url.PathUnescape(v); err == nil && d != v {
			out = append(out, d)
		}
		if d, err := url.QueryUnescape(v); err == nil && d != v {
			out = append(out, d)
		}
	}
	if raw == "" || isPlainPath(raw) {
		return nil
	}
	// Parameters, in a query, a fragment or a keyword/value DSN: scanned
	// in the raw text, so that a URL that does not parse is covered too.
	ends := textValue
	if isKeyValue(raw) {
		ends = kvValue
	}
	for _, m := range assignment.FindAllStringSubmatchIndex(raw, -1) {
		if !isSecretParam(raw[m[2]:m[3]]) {
			continue
		}
		end := m[1]
		for end < len(raw) && !ends(raw[end]) {
			end++
		}
		add(raw[m[5]:end])
		if m[6] < 0 {
			continue
		}
		quoted := raw[m[6]:m[7]]
		add(quoted)
		inner := strings.TrimSuffix(strings.TrimPrefix(quoted, "'"), "'")
		add(inner)
		add(strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(inner))
	}
	if isKeyValue(raw) {
		return out
	}
	if u, err := url.Parse(raw); err == nil {
		if u.User != nil {
			if p, ok := u.User.Password(); ok {
				add(p)
				// and as written, which may be escaped otherwise
				_, rest, _ := strings.Cut(raw, "//")
				if i := strings.IndexAny(rest, "/?#"); i >= 0 {
					rest = rest[:i]
				}
				if at := strings.LastIndex(rest, "@"); at >= 0 {
					if _, p, ok := strings.Cut(rest[:at], ":"); ok {
						add(p)
					}
				}
			}
		}
		if p, ok := opaquePassword(u.Opaque); ok {
			add(p)
		}
		for _, part := range strings.Split(u.RawQuery, "&") {
			if name, value, ok := strings.Cut(part, "="); ok {
				if n, err := url.QueryUnescape(name); err == nil && isSecretParam(n) {
					add(value)
				}
			}
		}
		return out
	}
	// Does not parse: whatever stands between the user's ':' and the last
	// '@' may be a password.
	rest := raw
	if _, r, ok := strings.Cut(raw, "://"); ok {
		rest = r
	} else if _, r, ok := strings.Cut(raw, ":"); ok {
		rest = r
	}
	// Both the first and the last '@', since either may end the user info.
	for _, at := range []int{strings.Index(rest, "@"), strings.LastIndex(rest, "@")} {
		if at < 0 {
			continue
		}
		if c := strings.Index(rest[:at], ":"); c >= 0 {
			add(rest[c+1 : at])
		}
	}
	return out
}

// forms returns s as a driver may quote it: as is, escaped for a URL, and
// escaped for a Go string.
func forms(s string) []string {
	q := strconv.Quote(s)
	f := []string{s, url.QueryEscape(s), url.PathEscape(s), q[1 : len(q)-1]}
	slices.Sort(f)
	return slices.Compact(f)
}

// quoted matches a piece of text in double quotes or backquotes, as
// drivers quote the values they reject.
var quoted = regexp.MustCompile("\\s?(\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`)")

// dropQuotedPieces removes from msg every quoted piece of raw, a URL that
// does not parse, and everything of a quoted piece that holds Hidden.
func dropQuotedPieces(msg, raw string) string {
	return quoted.ReplaceAllStringFunc(msg, func(m string) string {
		q := strings.TrimLeft(m, " \t")
		inner := q[1 : len(q)-1]
		if u, err := strconv.Unquote(q); err == nil {
			inner = u
		}
		if inner != "" && (strings.Contains(raw, inner) || strings.Contains(inner, Hidden)) {
			return ""
		}
		return m
	})
}
