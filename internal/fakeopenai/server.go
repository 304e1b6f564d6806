// Package fakeopenai is a local stand-in for an OpenAI-compatible server,
// for tests. It speaks the real wire format of POST /v1/responses,
// POST /v1/responses/compact and POST /v1/chat/completions: JSON bodies
// and SSE streams, function calls, usage, compaction items, and OpenAI
// error bodies with retry headers. It records every request so a test can
// assert what the model was sent.
//
// Replies are scripted: queued with Enqueue and served first in, first
// out; when the queue is empty the Responder decides (by default an echo
// of the last user message). A reply is rendered in the shape of the
// endpoint it was requested from, streamed when the request asked for it.
package fakeopenai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Reply is one scripted answer.
type Reply struct {
	// Text is the assistant message; "" with tool calls sends none.
	Text string
	// ToolCalls are function calls the model makes.
	ToolCalls []ToolCall
	// Usage is reported with the reply. Zero reports a deterministic
	// estimate: a token per 4 bytes of request body and of reply text.
	Usage Usage
	// Extra are raw Responses output items placed before the message (for
	// example a "reasoning" item). The chat endpoint ignores them.
	Extra []json.RawMessage

	// Status, when not 0 or 200, answers with that HTTP status and an
	// OpenAI error body carrying Error.
	Status int
	// Error is the error message of a Status reply or a StreamError.
	Error string
	// RetryAfter, when positive, sets the retry-after-ms header of a
	// Status reply.
	RetryAfter time.Duration

	// StreamError, when set on a streamed reply, sends the first text delta
	// and then an error event carrying Error instead of completing.
	StreamError bool
	// CutStream, when set on a streamed reply, sends the first text delta
	// and then ends the body cleanly, without a final event: a server
	// that went away mid-reply.
	CutStream bool
	// StallStream, when set on a streamed reply, sends the first text
	// delta and then holds the stream open, sending nothing more, until
	// the client goes away or the server closes: a client that
	// disconnects mid-stream.
	StallStream bool
	// Hang holds the request open until the client goes away or the
	// server closes; crash tests use it to catch a turn in flight.
	Hang bool
}

// ToolCall is a function call in a Reply.
type ToolCall struct {
	ID        string // call_id; default "call_<n>"
	Name      string
	Arguments string // JSON text; default "{}"
}

// Usage is token usage in a Reply.
type Usage struct {
	Input, Output int64
}

// Server is a fake OpenAI-compatible server. Create it with New.
type Server struct {
	srv *httptest.Server

	mu        sync.Mutex
	apiKey    string
	queue     []Reply
	responder func(Request) Reply
	requests  []Request
	seq       int
	notify    chan Request
	noCompact bool
	noRecord  bool
}

// New starts a server. Close it when done.
func New() *Server {
	s := &Server{responder: Echo}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL returns the base URL a client is configured with, ending in "/v1".
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close shuts the server down, ending hung requests.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Enqueue adds replies to the script.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// SetResponder sets what answers when the script is empty. It is called
// from the server's goroutines. nil restores Echo.
func (s *Server) SetResponder(f func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f == nil {
		f = Echo
	}
	s.responder = f
}

// SetAPIKey makes the server require key as the bearer token; other
// requests get a 401 (and are recorded). "" accepts any request.
func (s *Server) SetAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = key
}

// SetNoCompact makes POST /v1/responses/compact answer 404, as servers
// without the endpoint do (such requests are not recorded); false restores
// the endpoint.
func (s *Server) SetNoCompact(off bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noCompact = off
}

// SetRecord sets whether requests are kept for Requests (the default);
// benchmarks that send many large requests turn it off, so that a long
// run holds no memory. Requests are numbered either way.
func (s *Server) SetRecord(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noRecord = !on
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Notify returns a channel that receives each request as it arrives
// (before it is answered). Requests that find the channel full are not
// sent to it; it buffers 64.
func (s *Server) Notify() <-chan Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notify == nil {
		s.notify = make(chan Request, 64)
	}
	return s.notify
}

// Echo is the default responder: it answers "echo: " and the text of the
// last user message, so a test can see what reached the model.
func Echo(r Request) Reply {
	return Reply{Text: "echo: " + r.LastUserText()}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "cannot read body", 0)
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, top: &topFields{}}
	s.mu.Lock()
	noCompact := s.noCompact
	s.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses/compact") && !noCompact:
		req.API = "compact"
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
		req.API = "responses"
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions"):
		req.API = "chat"
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), 0)
		return
	}
	top := req.fields() // decoded once here, for every later Field too
	if top == nil {
		writeError(w, http.StatusBadRequest, "We could not parse the JSON body of your request.", 0)
		return
	}
	for name, v := range map[string]any{"model": &req.Model, "stream": &req.Stream} {
		if raw, ok := top[name]; ok && json.Unmarshal(raw, v) != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("Invalid type for '%s'.", name), 0)
			return
		}
	}

	s.mu.Lock()
	s.seq++
	req.N = s.seq
	if !s.noRecord {
		s.requests = append(s.requests, req)
	}
	if s.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+s.apiKey {
		s.mu.Unlock()
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided.", 0)
		return
	}
	var rep Reply
	scripted := len(s.queue) > 0
	if scripted {
		rep, s.queue = s.queue[0], s.queue[1:]
	}
	responder, notify := s.responder, s.notify
	s.mu.Unlock()
	if notify != nil {
		select {
		case notify <- req:
		default:
		}
	}
	if !scripted {
		rep = responder(req)
	}

	if rep.Hang {
		<-r.Context().Done()
		return
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		writeError(w, rep.Status, rep.Error, rep.RetryAfter)
		return
	}
	if rep.Usage == (Usage{}) {
		rep.Usage = Usage{Input: int64(len(body)/4 + 1), Output: int64(len(rep.Text)/4 + 1)}
	}
	for i := range rep.ToolCalls {
		if rep.ToolCalls[i].ID == "" {
			rep.ToolCalls[i].ID = fmt.Sprintf("call_%d_%d", req.N, i+1)
		}
		if rep.ToolCalls[i].Arguments == "" {
			rep.ToolCalls[i].Arguments = "{}"
		}
	}
	r2 := render{req: req, rep: rep, w: w, done: r.Context().Done()}
	switch req.API {
	case "responses":
		r2.responses()
	case "compact":
		r2.compact()
	default:
		r2.chat()
	}
}

// writeError answers with an OpenAI error body.
func writeError(w http.ResponseWriter, status int, msg string, retryAfter time.Duration) {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case status >= 500:
		typ = "server_error"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	if retryAfter > 0 {
		w.Header().Set("retry-after-ms", fmt.Sprint(retryAfter.Milliseconds()))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": code,
	}})
	w.Write(b)
}

// Request is one request the server received.
type Request struct {
	N      int    // 1 for the first request the server received
	API    string // "responses", "compact" or "chat"
	Method string
	Path   string
	Header http.Header
	Body   []byte
	Model  string
	Stream bool

	top *topFields // the body's top-level members, decoded once
}

// topFields decodes a request body's top-level members the first time
// they are asked for, so that a reply reading several fields of a long
// conversation does not decode it once for each.
type topFields struct {
	once sync.Once
	m    map[string]json.RawMessage // nil when the body is not an object
}

func (r Request) fields() map[string]json.RawMessage {
	decode := func() (m map[string]json.RawMessage) {
		if json.Unmarshal(r.Body, &m) != nil {
			return nil
		}
		return m
	}
	if r.top == nil { // a Request made by hand
		return decode()
	}
	r.top.once.Do(func() { r.top.m = decode() })
	return r.top.m
}

// Field decodes the top-level field name of the body into v and reports
// whether it was present.
func (r Request) Field(name string, v any) bool {
	raw, ok := r.fields()[name]
	if !ok {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// Input returns the conversation sent: the Responses (or compact) "input"
// items (a string input becomes one user message) or the chat
// "messages", each as the raw JSON object received.
func (r Request) Input() []json.RawMessage {
	var items []json.RawMessage
	if r.API == "chat" {
		r.Field("messages", &items)
		return items
	}
	if r.Field("input", &items) {
		return items
	}
	var s string
	if r.Field("input", &s) {
		b, _ := json.Marshal(map[string]string{"role": "user", "content": s})
		return []json.RawMessage{b}
	}
	return nil
}

// Message is the role and text of one message of a request.
type Message struct {
	Role, Text string
}

// Messages returns the role and text of every message the request sent,
// in order, whatever the API. Items that are not messages (function
// calls, tool outputs, reasoning) are left out; so is the "instructions"
// field, which Instructions returns.
func (r Request) Messages() []Message {
	var out []Message
	for _, raw := range r.Input() {
		var m struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Role == "" || (m.Type != "" && m.Type != "message") {
			continue
		}
		if m.Role == "tool" {
			continue
		}
		out = append(out, Message{Role: m.Role, Text: contentText(m.Content)})
	}
	return out
}

// LastUserText returns the text of the last user message sent, or "".
func (r Request) LastUserText() string {
	ms := r.Messages()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == "user" {
			return ms[i].Text
		}
	}
	return ""
}

// Instructions returns the Responses "instructions" field, or the text of
// a leading system message of a chat request.
func (r Request) Instructions() string {
	if r.API == "chat" {
		ms := r.Messages()
		if len(ms) > 0 && (ms[0].Role == "system" || ms[0].Role == "developer") {
			return ms[0].Text
		}
		return ""
	}
	var s string
	r.Field("instructions", &s)
	return s
}

// Temperature returns the temperature sent, or nil.
func (r Request) Temperature() *float64 {
	var t float64
	if !r.Field("temperature", &t) {
		return nil
	}
	return &t
}

// ToolNames returns the names of the function tools offered.
func (r Request) ToolNames() []string {
	var tools []struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	r.Field("tools", &tools)
	var names []string
	for _, t := range tools {
		if t.Name != "" {
			names = append(names, t.Name)
		} else {
			names = append(names, t.Function.Name)
		}
	}
	return names
}

// contentText returns the text of message content: a string or a list of
// parts with "text".
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
