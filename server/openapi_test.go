// The OpenAPI document is checked with kin-openapi: the document itself,
// then every request meant to be valid and every response, sent through a
// real listener, against the operation the document gives for it.

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/provider/openai"
)

// docOp is one operation of the OpenAPI document.
type docOp struct {
	method, path string // path as the document writes it: /v1/conversations/{conversation_id}
	re           *regexp.Regexp
}

// docOps reads the operations of the checked-in document.
func docOps(t *testing.T) []docOp {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []docOp
	for p, item := range doc.Paths {
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(p), `[^/]+`) + "$")
		for m := range item {
			if m == "parameters" {
				continue
			}
			ops = append(ops, docOp{method: strings.ToUpper(m), path: p, re: re})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	return ops
}

// muxRoutes returns every pattern the package registers on its mux, read
// from its source, so that a route added without being documented fails
// TestOpenAPIDocumentsEveryRoute.
func muxRoutes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`s\.mux\.Handle(?:Func)?\("([A-Z]+ /[^"]*)"`)
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, "web") {
			continue // the web viewer's pages are not an API
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(b, -1) {
			out = append(out, string(m[1]))
		}
	}
	sort.Strings(out)
	return out
}

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	ops := docOps(t)
	var documented []string
	for _, o := range ops {
		documented = append(documented, o.method+" "+o.path)
	}
	routes := muxRoutes(t)
	if len(routes) < 20 {
		t.Fatalf("found only %d routes in the source: %v", len(routes), routes)
	}
	for _, r := range routes {
		if !slices.Contains(documented, r) {
			t.Errorf("route %q is not in openapi.json", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routes, d) {
			t.Errorf("openapi.json documents %q, which no route serves", d)
		}
	}
}

// checker sends requests through a real listener and validates every
// request meant to be valid, and every response, against the document with
// kin-openapi's validator.
type checker struct {
	*env
	router  routers.Router
	ops     []docOp
	covered map[string]bool // "METHOD path" of the document → a 2xx was validated
}

// The bodies openapi3filter does not decode itself: JSON Lines (as the
// array of its lines, the value the document's schema describes) and the
// text exports and MCP's event stream (as strings).
func init() {
	openapi3filter.RegisterBodyDecoder("application/jsonl", jsonLines)
	openapi3filter.RegisterBodyDecoder("text/markdown", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
}

func newChecker(t *testing.T, e *env) *checker {
	ctx := context.Background()
	doc, err := openapi3.NewLoader().LoadFromData(openAPI)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi.json declares OpenAPI %s, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(ctx, openapi3.EnableSchemaFormatValidation()); err != nil {
		t.Fatalf("openapi.json is not a valid OpenAPI 3.1 document: %v", err)
	}
	// The document names the default listen address; the test's server
	// listens elsewhere.
	doc.Servers = openapi3.Servers{&openapi3.Server{URL: e.ts.URL}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &checker{env: e, router: router, ops: docOps(t), covered: map[string]bool{}}
}

// check sends the request and validates it (when validReq) and its
// response against the document, and checks the status. A response of a
// path or method the document does not have (the mux's 404 and 405) is
// validated as the error of GET /api/v1/me: the document's default
// response, the error shape.
func (c *checker) check(method, path, user string, body any, status int, validReq bool, headers ...string) resp {
	t := c.t
	t.Helper()
	ctx := context.Background()
	r := c.do(method, path, user, body, headers...)
	if r.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.StatusCode, status, r.body)
	}
	req := r.Request.Clone(ctx)
	var reqBody []byte
	switch b := body.(type) {
	case nil:
	case string:
		reqBody = []byte(b)
	default:
		reqBody, _ = json.Marshal(b)
	}
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	op := c.opOf(method, req.URL.Path)
	if op == "" {
		req.Method, req.URL.Path = "GET", "/api/v1/me"
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		t.Fatalf("%s %s: no operation of the document: %v", method, path, err)
	}
	// Each operation's security is checked by the server's own tests; the
	// validator checks shapes.
	opts := &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	if validReq && op != "" {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			t.Errorf("%s %s: request: %v", method, path, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.StatusCode, Header: r.Header, Options: opts}
	out.SetBodyBytes(r.body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		t.Errorf("%s %s: response %d %s: %v", method, path, r.StatusCode, r.body, err)
	}
	if op != "" && status < 300 {
		c.covered[op] = true
	}
	return r
}

// jsonLines decodes a JSON Lines body into the array of its lines.
func jsonLines(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	lines := []any{}
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("line %d: %w", len(lines)+1, err)
		}
		lines = append(lines, v)
	}
	return lines, sc.Err()
}

func (c *checker) opOf(method, path string) string {
	for _, o := range c.ops {
		if o.method == method && o.re.MatchString(path) {
			return o.method + " " + o.path
		}
	}
	return ""
}

func TestOpenAPIResponses(t *testing.T) {
	fake := fakeopenai.New()
	t.Cleanup(fake.Close)
	model, err := openai.New(openai.Config{BaseURL: fake.URL(), APIKey: "k", Model: "fake", API: openai.APIResponses, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, memstore.New(memstore.Options{}), Options{RateLimit: -1, MaxBodyBytes: 64 << 10, Compactor: &compact.Summarizer{Model: model},
		Upstream: fake.URL(), UpstreamAPI: openai.APIResponses}, nil)
	c := newChecker(t, e)
	type obj = map[string]any

	// Operations.
	c.check("GET", "/healthz", "", nil, 200, true)
	c.check("GET", "/readyz", "", nil, 200, true)
	c.check("GET", "/metrics", "", nil, 200, true)
	c.check("GET", "/api/v1/openapi.json", "alice", nil, 200, true)
	c.check("GET", "/api/v1/me", "root", nil, 200, true)
	c.check("GET", "/api/v1/audit", "alice", nil, 403, true)

	// The Conversations API.
	var conv struct {
		ID string `json:"id"`
	}
	c.check("POST", "/v1/conversations", "alice", obj{
		"items":    []any{obj{"role": "user", "content": "hello"}, obj{"type": "message", "role": "assistant", "id": "msg_1", "content": []any{obj{"type": "output_text", "text": "hi"}}}},
		"metadata": obj{"topic": "greetings"},
	}, 200, true, "Idempotency-Key", "create-1").decode(t, &conv)
	cid := conv.ID
	cp := "/v1/conversations/" + cid
	c.check("POST", "/v1/conversations", "alice", obj{}, 200, true)
	c.check("GET", cp, "alice", nil, 200, true)
	c.check("POST", cp, "alice", obj{"metadata": obj{"topic": "plans"}}, 200, true)
	var added struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	c.check("POST", cp+"/items", "alice", obj{"items": []any{
		obj{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
		obj{"type": "function_call_output", "call_id": "c1", "output": "42"},
	}}, 200, true).decode(t, &added)
	c.check("GET", cp+"/items", "alice", nil, 200, true)
	c.check("GET", cp+"/items?limit=2&order=asc", "alice", nil, 200, true)
	c.check("GET", cp+"/items?limit=1&after=msg_1&include%5B%5D=message.output_text.logprobs", "alice", nil, 200, true)
	c.check("GET", cp+"/items/msg_1", "alice", nil, 200, true)
	c.check("GET", cp+"/items/"+added.Data[0].ID, "alice", nil, 200, true)

	// recall's API.
	sp := "/api/v1/sessions/" + cid
	c.check("GET", "/api/v1/sessions", "alice", nil, 200, true)
	c.check("GET", "/api/v1/sessions?limit=1&archived=true&title=x", "alice", nil, 200, true)
	c.check("GET", "/api/v1/sessions?all=true", "root", nil, 200, true)
	c.check("GET", "/api/v1/projects", "alice", nil, 200, true)
	c.check("GET", "/api/v1/sessions?project=user.alice", "alice", nil, 200, true)
	c.check("GET", sp, "alice", nil, 200, true)
	c.check("GET", sp+"?project=user.alice", "alice", nil, 200, true)
	c.check("PATCH", sp, "alice", obj{"title": "Greetings", "pinned": true, "labels": []string{"a"}}, 200, true)
	c.check("GET", sp+"/entries?limit=2", "alice", nil, 200, true)
	c.check("GET", sp+"/usage", "alice", nil, 200, true)
	c.check("GET", sp+"/subagents", "alice", nil, 200, true)
	c.check("GET", sp+"/export", "alice", nil, 200, true)
	c.check("GET", sp+"/export?format=jsonl", "alice", nil, 200, true)
	c.check("GET", sp+"/export?format=markdown", "alice", nil, 200, true)
	c.check("GET", sp+"/export?format=html", "alice", nil, 200, true)
	c.check("GET", "/api/v1/search?q=hello&role=user&limit=5", "alice", nil, 200, true)
	c.check("GET", "/api/v1/sessions?q=hello", "alice", nil, 200, true)
	c.check("GET", "/api/v1/search?q=", "alice", nil, 400, false)
	var fork struct {
		ID string `json:"id"`
	}
	c.check("POST", sp+"/fork", "alice", obj{"at": "msg_1", "title": "branch"}, 201, true).decode(t, &fork)
	c.check("POST", sp+"/fork", "alice", obj{"at": 2}, 201, true)
	c.check("DELETE", cp+"/items/msg_1", "alice", nil, 200, true)
	fake.Enqueue(fakeopenai.Reply{Text: "summary"})
	c.check("POST", sp+"/compact", "alice", obj{"keep": 1}, 200, true)
	var link struct {
		ID string `json:"id"`
	}
	c.check("POST", sp+"/share", "alice", obj{"expires_in": "1d"}, 201, true).decode(t, &link)
	c.check("GET", "/api/v1/shares", "alice", nil, 200, true)
	c.check("DELETE", "/api/v1/shares/"+link.ID, "alice", nil, 200, true)
	c.check("POST", sp+"/rewind", "alice", obj{"to": nil}, 200, true)
	c.check("POST", sp+"/redo", "alice", nil, 200, true)
	c.check("POST", sp+"/redo", "alice", nil, 409, true)
	c.check("POST", sp+"/redact?dry_run=true", "alice", nil, 200, true)
	c.check("POST", sp+"/redact", "alice", nil, 200, true)
	c.check("POST", sp+"/rewind", "alice", obj{"to": "nope"}, 400, true)
	c.check("DELETE", "/api/v1/sessions/"+fork.ID, "alice", nil, 200, true)
	c.check("GET", "/api/v1/trash?limit=5", "alice", nil, 200, true)
	c.check("POST", "/api/v1/sessions/"+fork.ID+"/restore", "alice", nil, 200, true)
	c.check("POST", "/api/v1/sessions/"+fork.ID+"/restore", "alice", nil, 404, true)
	c.check("DELETE", "/api/v1/sessions/"+fork.ID+"?purge=true", "alice", nil, 200, true)
	c.check("DELETE", cp, "alice", nil, 200, true)
	c.check("GET", "/api/v1/audit?limit=3", "root", nil, 200, true)
	c.check("PUT", "/api/v1/policy?dry_run=true", "root", obj{"default": "90d", "labels": obj{"keep": "never"}}, 200, true)
	c.check("PUT", "/api/v1/policy", "root", obj{"default": "never"}, 200, true)
	c.check("GET", "/api/v1/policy", "root", nil, 200, true)
	c.check("GET", "/api/v1/policy", "alice", nil, 403, true)

	// The Responses API through the upstream, with and without a conversation.
	rconv := e.newConv("alice", msg("user", "hello"))
	fake.Enqueue(fakeopenai.Reply{Text: "hello back"})
	c.check("POST", "/v1/responses", "alice", obj{"model": "fake", "input": "hello again", "conversation": rconv}, 200, true)
	fake.Enqueue(fakeopenai.Reply{Text: "stateless"})
	c.check("POST", "/v1/responses", "alice", obj{"model": "fake", "input": "no conversation"}, 200, true)
	c.check("POST", "/v1/responses", "alice", obj{"model": "fake", "input": "x", "conversation": rconv, "previous_response_id": "resp_1"}, 400, true)

	// The MCP server: an initialize request, as an MCP client sends it.
	c.check("POST", "/mcp", "alice", obj{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": obj{
		"protocolVersion": "2025-06-18", "capabilities": obj{}, "clientInfo": obj{"name": "check", "version": "1"},
	}}, 200, true, "Accept", "application/json, text/event-stream")

	// The store routes (remotestore).
	sk := obj{"project": "p", "session": "s"}
	item := obj{"kind": "item", "text": `{"type":"message","role":"user","content":"hi"}`}
	c.check("POST", "/api/v1/store/append", "alice", obj{"key": sk, "guard": obj{"check_seq": true}, "entries": []any{item, item}}, 200, true)
	c.check("POST", "/api/v1/store/import", "alice", obj{"key": sk, "entries": []any{obj{"seq": 1, "kind": "item", "time": "2026-01-01T00:00:00Z", "text": "{}"}}}, 200, true)
	c.check("POST", "/api/v1/store/pop", "alice", obj{"key": sk}, 200, true)
	c.check("POST", "/api/v1/store/fork", "alice", obj{"key": sk, "at_seq": 0, "new_key": obj{"project": "p", "session": "f"}}, 200, true)
	c.check("POST", "/api/v1/store/purge", "alice", obj{"key": sk}, 200, true)
	c.check("GET", "/api/v1/store/page?project=p&session=s&limit=1&oldest=true", "alice", nil, 200, true)
	c.check("GET", "/api/v1/store/stat?project=p&session=s", "alice", nil, 200, true)
	c.check("GET", "/api/v1/store/entries?project=p&session=s&after=0&limit=10", "alice", nil, 200, true)
	c.check("GET", "/api/v1/store/list?project=&limit=5", "alice", nil, 200, true)
	c.check("GET", "/api/v1/store/projects", "alice", nil, 200, true)
	c.check("GET", "/api/v1/store/search?q=hi", "alice", nil, 200, true)
	c.check("POST", "/api/v1/store/remove", "alice", obj{"key": obj{"project": "p", "session": "f"}}, 200, true)
	c.check("GET", "/api/v1/store/stat?project=p&session=gone", "alice", nil, 404, true)
	c.check("POST", "/api/v1/store/append", "alice", obj{"key": sk, "guard": obj{"new": true}}, 409, true)

	// Errors: each in the document's error shape.
	other := e.newConv("bob", msg("user", "bob's"))
	c.check("GET", "/v1/conversations/"+other, "alice", nil, 404, true)
	c.check("GET", "/api/v1/sessions/"+other, "alice", nil, 404, true)
	c.check("GET", "/api/v1/sessions/"+other+"?project=user.bob", "alice", nil, 404, true)
	c.check("GET", "/api/v1/sessions?project=user.bob", "alice", nil, 404, true)
	c.check("GET", cp, "alice", nil, 404, true)
	c.check("GET", "/api/v1/me", "", nil, 401, false)
	c.check("GET", "/v1/conversations/"+other, "rk_wrong", nil, 401, false)
	c.check("POST", "/v1/conversations", "alice", "{not json", 400, false)
	c.check("POST", "/v1/conversations", "alice", obj{"items": []any{"a string"}}, 400, false)
	c.check("POST", "/v1/conversations", "alice", `{"metadata":{"k":"`+strings.Repeat("x", 70<<10)+`"}}`, 413, false)
	c.check("GET", "/api/v1/sessions?limit=0", "alice", nil, 400, false)
	c.check("GET", "/api/v1/sessions?all=true", "alice", nil, 403, true)
	c.check("GET", "/api/v1/sessions/"+other+"/export?format=pdf", "bob", nil, 400, false)
	c.check("PUT", "/v1/conversations", "alice", nil, 405, false)
	c.check("GET", "/v2/nothing", "alice", nil, 404, false)

	// Every operation of the document was answered, and validated.
	for _, o := range c.ops {
		if k := o.method + " " + o.path; !c.covered[k] {
			t.Errorf("no 2xx response of %s was checked against the document", k)
		}
	}
	if testing.Verbose() {
		fmt.Println("checked", len(c.covered), "operations")
	}
}
