package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/internal/age"
)

// webFS holds the viewer's templates and static assets.
//
//go:embed web
var webFS embed.FS

// webPageSize is how many sessions, hits or items a page shows; more
// load as the reader scrolls.
const webPageSize = 50

// webSubagents is how many subagent records a session page nests, and
// webSubItems how many of each one's newest items it shows.
const (
	webSubagents = 20
	webSubItems  = 20
)

// staticAsset is one embedded file, with the hash its URL carries.
type staticAsset struct {
	body  []byte
	ctype string
	hash  string
}

var (
	staticAssets = loadStatic()
	webTemplates = template.Must(template.New("").Funcs(template.FuncMap{
		"asset": assetURL,
		"age":   func(t time.Time) string { return age.Ago(t, time.Now()) },
		"stamp": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"user":  projectLabel,
		"item":  func(d sessionData, it webItem) itemCtx { return itemCtx{it, d.ID, d.CSRF} },
		"count": count,
		// source names the tool a session came from (importer.Source).
		"source": importer.Source,
	}).ParseFS(webFS, "web/templates/*.html"))
)

// count says how many things there are: "1 item", "2 items".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

func loadStatic() map[string]staticAsset {
	out := map[string]staticAsset{}
	entries, err := fs.ReadDir(webFS, "web/static")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	for _, e := range entries {
		b, _ := fs.ReadFile(webFS, "web/static/"+e.Name())
		if e.Name() == "chroma.css" {
			continue
		}
		sum := sha256.Sum256(b)
		out[e.Name()] = staticAsset{body: b, ctype: mime.TypeByExtension(path.Ext(e.Name())), hash: hex.EncodeToString(sum[:6])}
	}
	sum := sha256.Sum256(chromaCSS)
	out["chroma.css"] = staticAsset{body: chromaCSS, ctype: "text/css; charset=utf-8", hash: hex.EncodeToString(sum[:6])}
	return out
}

// assetURL is the URL of a static asset, with its content hash so it can
// be cached for good.
func assetURL(name string) string { return "/static/" + name + "?v=" + staticAssets[name].hash }

// webRoutes registers the web viewer.
func (s *Server) webRoutes() {
	s.mux.HandleFunc("GET /{$}", s.page(s.webList))
	s.mux.HandleFunc("GET /signin", s.page(s.webSignInPage))
	s.mux.HandleFunc("POST /signin", s.page(s.webSignIn))
	s.mux.HandleFunc("POST /signout", s.page(s.webSignOut))
	s.mux.HandleFunc("GET /static/{name}", s.page(s.webStatic))
	s.mux.HandleFunc("GET /share/{token}", s.page(s.sharedPage)) // a share link: no token, no cookie
	s.mux.HandleFunc("GET /s/{session_id}", s.page(s.webSession))
	s.mux.HandleFunc("GET /s/{session_id}/events", s.page(s.webEvents))
	s.mux.HandleFunc("GET /s/{session_id}/delete", s.page(s.webConfirmDelete))
	s.mux.HandleFunc("GET /s/{session_id}/export", s.page(s.webExport))
	s.mux.HandleFunc("POST /s/{session_id}/{action}", s.page(s.webAction))
	s.mux.HandleFunc("GET /trash", s.page(s.webTrash))
	s.mux.HandleFunc("POST /trash/{session_id}/restore", s.page(s.webRestore))
}

func (s *Server) webStatic(w http.ResponseWriter, r *http.Request) error {
	a, ok := staticAssets[r.PathValue("name")]
	if !ok {
		return pageError(http.StatusNotFound, "No such file.")
	}
	w.Header().Set("Content-Type", a.ctype)
	if r.URL.Query().Get("v") == a.hash {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.Header().Set("ETag", `"`+a.hash+`"`)
	if r.Header.Get("If-None-Match") == `"`+a.hash+`"` {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	_, _ = w.Write(a.body)
	return nil
}

// pageBase is what every page's layout needs.
type pageBase struct {
	PageTitle string
	User      string
	Admin     bool
	SignedIn  bool // a sign-out button is shown (AuthToken)
	CSRF      string
}

func (s *Server) base(w http.ResponseWriter, r *http.Request, title string) pageBase {
	u, _ := userFrom(r.Context())
	return pageBase{PageTitle: title, User: u.Name, Admin: u.Admin, SignedIn: s.opts.Auth == AuthToken && u.Name != "",
		CSRF: s.csrfToken(w, r)}
}

// render writes a template to a buffer first, so a failing template is
// a clean 500 rather than half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	var b bytes.Buffer
	if err := webTemplates.ExecuteTemplate(&b, name, data); err != nil {
		s.log.ErrorContext(r.Context(), "web: render", slog.String("template", name), slog.Any("error", err))
		http.Error(w, "The page could not be rendered.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// webStatus answers a page with a status and a one-line message.
func (s *Server) webStatus(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r, status, "error.html", struct {
		pageBase
		Status  int
		Message string
	}{s.base(w, r, http.StatusText(status)), status, msg})
}

// pageError is the error of a page answered with status and msg:
// webError writes it as webStatus does.
func pageError(status int, msg string) *APIError { return &APIError{Status: status, Message: msg} }

// webError answers an error of the store or of bad input as a page, in
// the words the API uses (apiErrorOf).
func (s *Server) webError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *APIError
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, recall.ErrNotFound):
		ae = &APIError{Status: http.StatusNotFound, Message: "No such session."}
	case errors.Is(err, context.Canceled):
		return
	default:
		if ae = apiErrorOf(err); ae == nil {
			s.log.ErrorContext(r.Context(), "web: request failed", slog.Any("error", err))
			ae = &APIError{Status: http.StatusInternalServerError, Message: "The server had an error while processing your request."}
		}
		s.logStoreDown(r, err)
	}
	setRetryAfter(w, ae.RetryAfter)
	s.webStatus(w, r, ae.Status, ae.Message)
}
