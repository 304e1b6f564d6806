package server

import (
	"mime"
	"net"
	"net/http"
	"strings"
)

// Under AuthNone every request is DefaultUser's, so what keeps a web page
// the person opens from reading and changing their sessions is this
// layer, in front of everything else:
//
//   - The server answers only to this machine's names in the Host header:
//     localhost (and *.localhost), 127.0.0.0/8, [::1] and
//     Options.AllowedHosts. A page whose name an attacker re-points at
//     127.0.0.1 (DNS rebinding) is the same origin as the server to the
//     browser, but its requests carry the attacker's name as their Host.
//   - A write (any method but GET, HEAD and OPTIONS) whose Origin is sent
//     and is not the server's own is refused. Browsers send Origin with
//     every cross-origin write, including the "no-cors" ones a page may
//     send without asking the server first.
//   - A write to the API whose body is of a type a page may send to
//     another origin without asking (text/plain, a form, multipart) is
//     refused unless it carries an Authorization header, which such a
//     page cannot set: the API's bodies are JSON. The viewer's own forms
//     are checked by their CSRF tokens instead (web.go).
func (s *Server) guardLocal(next http.Handler) http.Handler {
	if s.opts.Auth != AuthNone {
		return next
	}
	allowed := map[string]bool{}
	for _, h := range s.opts.AllowedHosts {
		allowed[strings.ToLower(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !localHost(r.Host, allowed) {
			s.writeError(w, r, &APIError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "host_not_allowed",
				Message: "This server runs without authentication (--auth none) and answers only to localhost, 127.0.0.1 and [::1], and to the names given with --allowed-host; the Host of this request is none of them."})
			return
		}
		if isWrite(r.Method) && !sameOrigin(r) {
			s.writeError(w, r, &APIError{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "cross_origin",
				Message: "A write from a page of another origin is refused: this server runs without authentication (--auth none)."})
			return
		}
		if isWrite(r.Method) && !isWebPath(r.URL.Path) && r.Header.Get("Authorization") == "" && simpleBody(r) {
			s.writeError(w, r, &APIError{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error", Code: "unsupported_media_type",
				Message: "Send the request body as application/json (with Content-Type: application/json): this server runs without authentication (--auth none) and refuses the body types any web page can send it."})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isWrite(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// localHost reports whether a request's Host names this machine, or one
// of the allowed names (with or without a port).
func localHost(hostport string, allowed map[string]bool) bool {
	hostport = strings.ToLower(hostport)
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]") // no port
	}
	switch {
	case host == "":
		return false
	case allowed[host] || allowed[hostport]:
		return true
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return true // resolved to loopback by browsers themselves (RFC 6761)
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// simpleBody reports whether a request has a body of a type that a web
// page may send to another origin without a CORS preflight: no
// Content-Type at all, text/plain, application/x-www-form-urlencoded or
// multipart/form-data.
func simpleBody(r *http.Request) bool {
	if r.ContentLength == 0 && r.Header.Get("Content-Type") == "" {
		return false // no body: nothing for such a page to smuggle in
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return true
	}
	switch mt {
	case "text/plain", "application/x-www-form-urlencoded", "multipart/form-data":
		return true
	}
	return false
}
