package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
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
		"age":   age,
		"stamp": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"user":  func(project string) string { return strings.TrimPrefix(project, userPrefix) },
		"item":  func(d sessionData, it webItem) itemCtx { return itemCtx{it, d.ID, d.CSRF} },
		"count": count,
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
	s.mux.HandleFunc("GET /{$}", s.webList)
	s.mux.HandleFunc("GET /signin", s.webSignInPage)
	s.mux.HandleFunc("POST /signin", s.webSignIn)
	s.mux.HandleFunc("POST /signout", s.webSignOut)
	s.mux.HandleFunc("GET /static/{name}", s.webStatic)
	s.mux.HandleFunc("GET /s/{session_id}", s.webSession)
	s.mux.HandleFunc("GET /s/{session_id}/events", s.webEvents)
	s.mux.HandleFunc("GET /s/{session_id}/delete", s.webConfirmDelete)
	s.mux.HandleFunc("GET /s/{session_id}/export", s.webExport)
	s.mux.HandleFunc("POST /s/{session_id}/{action}", s.webAction)
}

func (s *Server) webStatic(w http.ResponseWriter, r *http.Request) {
	a, ok := staticAssets[r.PathValue("name")]
	if !ok {
		s.webStatus(w, r, http.StatusNotFound, "No such file.")
		return
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
		return
	}
	_, _ = w.Write(a.body)
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

func (s *Server) webSignInPage(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth == AuthNone {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "signin.html", struct {
		pageBase
		Next  string
		Error string
	}{pageBase{PageTitle: "Sign in"}, safeNext(r.URL.Query().Get("next")), ""})
}

// safeNext keeps a post-sign-in target only when it is a clean path of
// this server's pages: one leading "/", no backslash or control character
// anywhere, no "." or ".." segment (http.Redirect would clean
// "/s/../\\evil.example" to "/\\evil.example", which browsers take for
// another site), and a page of the viewer. Anything else goes to "/".
func safeNext(next string) string {
	p, _, _ := strings.Cut(next, "?")
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsRune(next, '\\') ||
		strings.ContainsFunc(next, unicode.IsControl) || path.Clean(p) != p || !isWebPath(p) {
		return "/"
	}
	return next
}

func (s *Server) webSignIn(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth == AuthNone {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if !sameOrigin(r) {
		s.webStatus(w, r, http.StatusForbidden, "The sign-in form was sent from another site.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	token := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	if _, err := s.auth.authenticate(r.Context(), s.store, clientAddr(r), token); err != nil {
		msg := "That token is not valid. Create one with 'recall token create --user NAME'."
		if !errors.Is(err, ErrUnauthorized) {
			s.webError(w, r, err)
			return
		}
		s.render(w, r, http.StatusUnauthorized, "signin.html", struct {
			pageBase
			Next  string
			Error string
		}{pageBase{PageTitle: "Sign in"}, next, msg})
		return
	}
	setCookie(w, r, sessionCookie, token, sessionCookieAge)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) webSignOut(w http.ResponseWriter, r *http.Request) {
	if !s.checkCSRF(r) {
		s.webStatus(w, r, http.StatusForbidden, "The form had expired; reload the page and try again.")
		return
	}
	clearCookie(w, r, sessionCookie)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// listRow is one session of the list.
type listRow struct {
	ID          string
	Title       string
	Project     string
	FirstPrompt string
	Updated     time.Time
	Items       int
	Pinned      bool
	Archived    bool
	Own         bool // the reader's own: linked, its first prompt shown
}

// hitRow is one search hit.
type hitRow struct {
	ID, Title, Role, Anchor string
	Snippet                 template.HTML
	Time                    time.Time
}

type listData struct {
	pageBase
	Q        string
	Project  string
	Projects []string
	Archived bool
	Pinned   bool // ?pinned=1: the pinned sessions only
	Rows     []listRow
	Hits     []hitRow
	More     string // the URL of the next page; "" on the last
	// MorePinned is the URL of the pinned sessions after the first page's
	// pinnedCap, when there are more.
	MorePinned string
	Error      string
}

func (s *Server) webList(w http.ResponseWriter, r *http.Request) {
	u, err := apiUser(r)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	q := r.URL.Query()
	d := listData{pageBase: s.base(w, r, "Sessions"), Q: strings.TrimSpace(q.Get("q")), Project: q.Get("project"),
		Archived: q.Get("archived") == "1", Pinned: q.Get("pinned") == "1", Projects: []string{u.Project()}}
	if u.Admin {
		if d.Projects, err = s.userProjects(r.Context(), u); err != nil {
			s.webError(w, r, err)
			return
		}
	}
	if d.Project == "" || !slices.Contains(d.Projects, d.Project) {
		d.Project = u.Project()
	}
	if d.Q != "" {
		err = s.webSearch(r, u, &d)
	} else {
		err = s.webListPage(r, u, &d)
	}
	if err != nil {
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
			s.webError(w, r, err)
			return
		}
		d.Error = ae.Message
	}
	name := "list.html"
	if q.Get("frag") == "1" {
		name = "rows"
	}
	s.render(w, r, http.StatusOK, name, d)
}

// userProjects lists the users' projects, sorted, for an admin's project
// filter: those that hold sessions, and the admin's own, which may hold
// none yet but is the one listed when no other is picked (the filter
// shows the project listed, so it must offer it).
func (s *Server) userProjects(ctx context.Context, admin User) ([]string, error) {
	ps, err := recall.Projects(ctx, s.store)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range ps {
		if strings.HasPrefix(p.Project, userPrefix) {
			out = append(out, p.Project)
		}
	}
	if i, found := slices.BinarySearch(out, admin.Project()); !found {
		out = slices.Insert(out, i, admin.Project())
	}
	return out, nil
}

// nextURL is the list's URL with the cursor set.
func nextURL(r *http.Request, cursor string) string {
	q := r.URL.Query()
	q.Set("cursor", cursor)
	q.Del("frag")
	return "/?" + q.Encode()
}

// webListPage reads one page of the list: on the first, the pinned
// sessions (up to pinnedCap, from the store's listing of pinned sessions),
// then up to webPageSize others from the cursor on. With ?pinned=1 it
// lists the pinned sessions only, paged the same way; the first page
// links there (MorePinned) when it could not show every pinned session.
// Every page ends on one of the store's own cursors.
func (s *Server) webListPage(r *http.Request, u User, d *listData) error {
	ctx := r.Context()
	cursor := r.URL.Query().Get("cursor")
	opts := recall.ListOptions{IncludeArchived: d.Archived, Pinned: d.Pinned, Cursor: cursor}
	keep := func(m recall.Meta) bool { return !d.Archived || m.Archived }
	others := func(m recall.Meta) bool { return !m.Pinned && keep(m) }
	if d.Pinned {
		others = keep // the listing holds pinned sessions only
	}
	var metas []recall.Meta
	if cursor == "" && !d.Pinned {
		pinned := recall.ListOptions{IncludeArchived: d.Archived, Pinned: true}
		found, more, err := s.collect(ctx, d.Project, pinned, pinnedCap, keep)
		if err != nil {
			return err
		}
		metas = found
		if more != "" {
			q := r.URL.Query()
			q.Set("pinned", "1")
			q.Set("cursor", more)
			q.Del("frag")
			d.MorePinned = "/?" + q.Encode()
		}
	}
	rest, next, err := s.collect(ctx, d.Project, opts, webPageSize, others)
	if err != nil {
		return cursorErr(err, cursor)
	}
	metas = append(metas, rest...)
	own := u.Project()
	d.Rows = make([]listRow, len(metas))
	for i, m := range metas {
		row := listRow{ID: m.Key.Session, Title: m.Title, Project: m.Key.Project, Updated: m.Updated, Items: m.ItemCount,
			Pinned: m.Pinned, Archived: m.Archived, Own: m.Key.Project == own}
		if row.Own {
			row.FirstPrompt = m.FirstPrompt // kept by the store: the list reads no items
		}
		d.Rows[i] = row
	}
	if next != "" {
		d.More = nextURL(r, next)
	}
	return nil
}

// webSearch runs a full-text search over the reader's own sessions.
func (s *Server) webSearch(r *http.Request, u User, d *listData) error {
	d.Project = u.Project() // search reads items: only the reader's own
	cursor := r.URL.Query().Get("cursor")
	if _, err := recall.ParseSearchCursor(cursor); cursor != "" && err != nil {
		return badCursor()
	}
	page, err := recall.Search(r.Context(), s.store, recall.SearchOptions{Query: d.Q, Project: u.Project(),
		IncludeArchived: d.Archived, Limit: webPageSize, Cursor: cursor})
	if err != nil {
		return searchErr(err)
	}
	for _, h := range page.Hits {
		anchor := ""
		if h.Ref.Seq > 0 {
			anchor = "#i-" + strings.ReplaceAll(refString(h.Ref), ".", "-")
		}
		d.Hits = append(d.Hits, hitRow{ID: h.Key.Session, Title: h.Title, Role: h.Role, Anchor: anchor,
			Snippet: highlight(h.Snippet, h.Matches), Time: h.Time})
	}
	if page.Next != "" {
		d.More = nextURL(r, page.Next)
	}
	return nil
}

// highlight escapes a snippet and marks its matches.
func highlight(snippet string, spans []recall.Span) template.HTML {
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		if sp.Start < at || sp.End > len(snippet) || sp.Start > sp.End {
			continue
		}
		b.WriteString(template.HTMLEscapeString(snippet[at:sp.Start]))
		b.WriteString("<mark>" + template.HTMLEscapeString(snippet[sp.Start:sp.End]) + "</mark>")
		at = sp.End
	}
	b.WriteString(template.HTMLEscapeString(snippet[at:]))
	return template.HTML(b.String()) // #nosec: every part escaped
}

// sessionData is a session page.
type sessionData struct {
	pageBase
	ID         string
	Meta       recall.Meta
	ForkedFrom string // the origin's id, when it is the reader's
	ForkedAt   string // the origin item's anchor
	Items      []webItem
	Older      string // the URL of the page of older items; "" at the start
	Compaction *compactionView
	Subagents  []subView
	Formats    []export.Format
	LastSeq    int64 // the seq the items were read at: live updates go on from it
}

// compactionView is a compaction boundary: how many items it replaced,
// and the seq of the items that summarize them.
type compactionView struct {
	Replaced int
	Seq      int64
	Strategy string
}

// subView is a subagent record nested in its session's page.
type subView struct {
	Subpath string
	Meta    recall.Meta
	Items   []webItem
	More    int // items not shown
}

func (s *Server) webSession(w http.ResponseWriter, r *http.Request) {
	key, err := sessionKey(r)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	ctx := r.Context()
	m, err := s.store.Stat(ctx, key)
	if err != nil {
		s.webError(w, r, sessionErr(err, key))
		return
	}
	var before recall.ItemRef
	if b := r.URL.Query().Get("before"); b != "" {
		var ok bool
		if before, ok = parseRef(b); !ok {
			s.webStatus(w, r, http.StatusBadRequest, "Invalid 'before': expected an item's place such as 12 or 12.3.")
			return
		}
	}
	d, err := s.sessionPage(ctx, key, m, before)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	d.pageBase = s.base(w, r, titleOr(m))
	if r.URL.Query().Get("frag") == "1" {
		s.render(w, r, http.StatusOK, "items", d)
		return
	}
	if before.Seq == 0 {
		if err := s.subagents(ctx, key, &d); err != nil {
			s.webError(w, r, err)
			return
		}
	}
	s.render(w, r, http.StatusOK, "session.html", d)
}

func titleOr(m recall.Meta) string {
	if m.Title != "" {
		return m.Title
	}
	return "Untitled session"
}

// sessionPage reads one page of a session's items: the newest
// webPageSize, or those just before the place before.
func (s *Server) sessionPage(ctx context.Context, key recall.Key, m recall.Meta, before recall.ItemRef) (sessionData, error) {
	d := sessionData{ID: key.Session, Meta: m, Formats: export.Formats}
	if f := m.ForkedFrom; f != nil && f.Key.Project == key.Project && f.Key.IsMain() {
		d.ForkedFrom, d.ForkedAt = f.Key.Session, fmt.Sprintf("i-%d", f.Seq)
	}
	got, err := recall.ReadItems(ctx, s.store, key, recall.ItemPageOptions{Limit: webPageSize, After: before})
	if err != nil {
		return d, err
	}
	if before.Seq == 0 {
		d.LastSeq = max(got.LastSeq, m.LastSeq)
	}
	page := got.Items // newest first
	slices.Reverse(page)
	start := !got.More // the page reaches the start of the view
	if len(page) > 0 && !start {
		d.Older = fmt.Sprintf("/s/%s?before=%s", key.Session, refString(page[0].Ref))
	}
	if len(page) > 0 && start {
		es, err := s.store.Entries(ctx, key, page[0].Ref.Seq-1, 1)
		if err != nil {
			return d, err
		}
		var c recall.Compaction
		if len(es) == 1 && es[0].Kind == recall.KindCompaction && json.Unmarshal(es[0].Data, &c) == nil {
			d.Compaction = &compactionView{Replaced: c.Replaced, Seq: es[0].Seq, Strategy: c.Strategy}
		}
	}
	for _, l := range page {
		d.Items = append(d.Items, renderItem(l))
	}
	return d, nil
}

// subagents nests the session's subagent records, each with its newest
// items.
func (s *Server) subagents(ctx context.Context, key recall.Key, d *sessionData) error {
	page, err := s.store.List(ctx, key.Project, recall.ListOptions{Parent: key.Session, Limit: webSubagents, IncludeArchived: true})
	if err != nil {
		return err
	}
	for _, m := range page.Sessions {
		live, _, err := s.store.Items(ctx, m.Key, webSubItems)
		if err != nil {
			return err
		}
		sv := subView{Subpath: m.Key.Subpath, Meta: m, More: max(0, m.ItemCount-len(live))}
		for _, l := range live {
			sv.Items = append(sv.Items, renderItem(l))
		}
		d.Subagents = append(d.Subagents, sv)
	}
	return nil
}

func (s *Server) webConfirmDelete(w http.ResponseWriter, r *http.Request) {
	key, err := sessionKey(r)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	m, err := s.store.Stat(r.Context(), key)
	if err != nil {
		s.webError(w, r, sessionErr(err, key))
		return
	}
	s.render(w, r, http.StatusOK, "delete.html", sessionData{pageBase: s.base(w, r, "Delete "+titleOr(m)), ID: key.Session, Meta: m})
}

func (s *Server) webExport(w http.ResponseWriter, r *http.Request) {
	key, err := sessionKey(r)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	format := r.URL.Query().Get("format")
	f, err := export.ParseFormat(format)
	if err != nil {
		s.webStatus(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown export format %q; use markdown, html, json or jsonl.", shorten(format)))
		return
	}
	err = s.streamExport(w, r, f, key, func(h http.Header) {
		ctype := map[export.Format]string{export.FormatMarkdown: "text/markdown; charset=utf-8", export.FormatHTML: "text/html; charset=utf-8",
			export.FormatJSON: "application/json", export.FormatJSONL: "application/jsonl"}[f]
		h.Set("Content-Type", ctype)
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": key.Session + f.Ext()}))
		h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
		h.Set("Cache-Control", "no-store")
	})
	if err != nil {
		s.webError(w, r, sessionErr(err, key))
	}
}

// webAction serves the forms of a session page: rename, pin, archive,
// fork and delete. Each needs the page's CSRF token.
func (s *Server) webAction(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !s.checkCSRF(r) {
		s.webStatus(w, r, http.StatusForbidden, "The form had expired or came from another site; reload the page and try again.")
		return
	}
	key, err := sessionKey(r)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	ctx := r.Context()
	m, err := s.store.Stat(ctx, key)
	if err != nil {
		s.webError(w, r, sessionErr(err, key))
		return
	}
	back := "/s/" + url.PathEscape(key.Session)
	on := r.PostFormValue("value") == "1"
	switch r.PathValue("action") {
	case "rename":
		title := strings.TrimSpace(r.PostFormValue("title"))
		if len(title) > maxTitleLen {
			s.webStatus(w, r, http.StatusBadRequest, fmt.Sprintf("The title is longer than %d bytes.", maxTitleLen))
			return
		}
		_, err = recall.SetTitle(ctx, s.store, key, title, recall.TitleUser)
	case "pin":
		_, err = recall.SetPinned(ctx, s.store, key, on)
	case "archive":
		_, err = recall.SetArchived(ctx, s.store, key, on)
	case "fork":
		ref, ok := parseRef(r.PostFormValue("at"))
		if !ok || ref.Seq > m.LastSeq {
			s.webStatus(w, r, http.StatusBadRequest, "Invalid 'at': not an item of this session.")
			return
		}
		newKey := recall.Key{Project: key.Project, Session: newConversationID()}
		if _, err = recall.Fork(ctx, s.store, key, ref.Seq, newKey); err == nil {
			back = "/s/" + url.PathEscape(newKey.Session)
		}
	case "delete":
		if m.Pinned { // as recall rm without --force and the API without force=true
			s.webStatus(w, r, http.StatusConflict, "This session is pinned: unpin it first.")
			return
		}
		if err = s.store.Remove(ctx, key); err == nil {
			back = "/"
		}
	default:
		s.webStatus(w, r, http.StatusNotFound, "No such action.")
		return
	}
	if err != nil {
		s.webError(w, r, sessionErr(err, key))
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// age says how long ago t was, briefly.
func age(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
	return t.Format("2 Jan 2006")
}
