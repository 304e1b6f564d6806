package main

// End-to-end tests of recall serve and recall token: real processes of the
// recall binary on free loopback ports, driven by the official openai-go
// client and by plain net/http, stopped by real signals.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/server"
)

// served is one running recall serve process.
type served struct {
	t   *testing.T
	cmd *exec.Cmd
	// URL is the server's base URL, http://127.0.0.1:PORT, read from its
	// start line.
	URL string

	mu   sync.Mutex
	logb bytes.Buffer // stderr so far
	done chan struct{}
	code int // exit code, once done is closed
}

// serveEnviron is the environment e.run gives a command.
func (e *env) serveEnviron() []string {
	vars := append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(e.home, "user"),
		"RECALL_HOME=" + e.home,
		"TERM=dumb",
		"GORACE=atexit_sleep_ms=0",
	}, e.vars...)
	if e.store != "" {
		vars = append(vars, "RECALL_STORE="+e.store)
	}
	return vars
}

// startLine matches the start line of recall serve and captures the
// address it listens on.
var startLine = regexp.MustCompile(`msg="recall serve listening" addr=(\S+)`)

// serve starts "recall serve --addr 127.0.0.1:0 args..." over e's store
// and waits for its start line. The process is killed when the test ends,
// if it still runs.
func (e *env) serve(args ...string) *served {
	e.t.Helper()
	cmd := exec.Command(e.bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = e.dir
	cmd.Env = e.serveEnviron()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	s := &served{t: e.t, cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.logb.WriteString(line + "\n")
			s.mu.Unlock()
			if m := startLine.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		err := cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			s.code = 0
		case errors.As(err, &ee):
			s.code = ee.ExitCode()
		default:
			s.code = -1
		}
		close(s.done)
	}()
	e.t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = cmd.Process.Kill()
			<-s.done
		}
		if strings.Contains(s.log(), "DATA RACE") {
			e.t.Errorf("recall serve found a data race:\n%s", s.log())
		} else if e.t.Failed() {
			e.t.Logf("recall serve log:\n%s", s.log())
		}
	})
	select {
	case a := <-addr:
		s.URL = "http://" + a
	case <-s.done:
		e.t.Fatalf("recall serve exited %d before it listened:\n%s", s.code, s.log())
	case <-time.After(60 * time.Second):
		e.t.Fatalf("recall serve printed no start line in 60s:\n%s", s.log())
	}
	return s
}

// log returns what the server wrote to stderr so far.
func (s *served) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logb.String()
}

// exited reports whether the process has ended.
func (s *served) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// wait waits for the process to end and returns its exit code.
func (s *served) wait() int {
	s.t.Helper()
	select {
	case <-s.done:
		return s.code
	case <-time.After(60 * time.Second):
		s.t.Fatalf("recall serve still runs 60s after it was stopped:\n%s", s.log())
		return -1
	}
}

// inFlight returns how many requests the server is serving now, from the
// recall_http_requests_in_flight gauge of its /metrics (which counts the
// request that reads it).
func (s *served) inFlight() int {
	s.t.Helper()
	code, body := s.do("GET", "/metrics", "", nil)
	if code != http.StatusOK {
		s.t.Fatalf("GET /metrics: %d %s", code, body)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "recall_http_requests_in_flight "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				s.t.Fatalf("/metrics: %q: %v", line, err)
			}
			return int(n)
		}
	}
	s.t.Fatalf("/metrics has no recall_http_requests_in_flight:\n%s", body)
	return 0
}

// waitInFlight waits until the server serves n requests besides the one
// that asks: it read their heads and runs their handlers.
func (s *served) waitInFlight(n int) {
	s.t.Helper()
	testkit.Eventually(s.t, 30*time.Second, fmt.Sprintf("%d requests in flight", n), func() bool { return s.inFlight() >= n+1 })
}

// client is an openai-go client of the server's /v1, with token as its
// API key. It never retries, so every error shows.
func (s *served) client(token string) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(s.URL+"/v1/"),
		option.WithAPIKey(token),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(60*time.Second),
	)
}

// do sends a plain HTTP request with token (none when "") and returns the
// status and the body.
func (s *served) do(method, path, token string, body any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// message is a user message item with text as its content.
func message(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

// itemText is the string content of a message item as the server sent it
// (raw JSON, so nothing in the client's decoding hides a difference).
func itemText(t *testing.T, raw string) string {
	t.Helper()
	var v struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("item %s: %v", raw, err)
	}
	var s string
	if err := json.Unmarshal(v.Content, &s); err != nil {
		t.Fatalf("item %s: content is not a string: %v", raw, err)
	}
	return s
}

// createToken runs recall token create and checks that stdout holds the
// token and nothing else.
func (e *env) createToken(user string, extra ...string) string {
	e.t.Helper()
	r := e.ok("", append([]string{"token", "create", "--user", user}, extra...)...)
	token := strings.TrimSuffix(r.stdout, "\n")
	if !strings.HasPrefix(token, server.TokenPrefix) || strings.ContainsAny(token, " \n\t") {
		e.t.Fatalf("token create: stdout %q is not one token", r.stdout)
	}
	if strings.Contains(r.stderr, token) {
		e.t.Fatalf("token create: the token shows on stderr too: %q", r.stderr)
	}
	return token
}

// statusOf is the HTTP status of an openai-go error, or 0.
func statusOf(err error) int {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	return 0
}

// TestServeTokens runs the service as a team would: tokens made by the
// CLI, the OpenAI SDK for conversations, plain HTTP for /api/v1, no or a
// revoked token refused, and one user's conversation invisible to another.
func TestServeTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	alice := e.createToken("alice")
	bob := e.createToken("bob")
	admin := e.createToken("ops", "--admin")

	var tokens []server.TokenInfo
	if err := json.Unmarshal([]byte(e.ok("", "token", "ls", "--json").stdout), &tokens); err != nil {
		t.Fatal(err)
	}
	if len(tokens) != 3 || tokens[0].User != "alice" || tokens[1].User != "bob" || tokens[2].User != "ops" || !tokens[2].Admin || tokens[0].Admin {
		t.Fatalf("token ls --json: %+v", tokens)
	}
	ls := e.ok("", "token", "ls").stdout
	for _, tok := range tokens {
		contains(t, "token ls", ls, tok.ID)
	}
	for _, secret := range []string{alice, bob, admin} {
		if strings.Contains(ls, secret) {
			t.Fatalf("token ls shows a token: %s", ls)
		}
	}

	const tokenCache = time.Second
	s := e.serve("--token-cache", tokenCache.String())
	ctx := context.Background()
	ca, cb, cnone := s.client(alice), s.client(bob), s.client("")
	conv, err := ca.Conversations.New(ctx, conversations.ConversationNewParams{
		Items:    []responses.ResponseInputItemUnionParam{message("one"), message("two")},
		Metadata: map[string]string{"topic": "e2e"},
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	var raw struct {
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(conv.RawJSON()), &raw); err != nil || !strings.HasPrefix(conv.ID, "conv_") || raw.Metadata["topic"] != "e2e" {
		t.Fatalf("create: %s", conv.RawJSON())
	}
	added, err := ca.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{
		Items: []responses.ResponseInputItemUnionParam{message("three"), message("four"), message("five")},
	})
	if err != nil {
		t.Fatalf("add items: %v", err)
	}
	if len(added.Data) != 3 {
		t.Fatalf("add items: %d back", len(added.Data))
	}
	var texts []string
	iter := ca.Conversations.Items.ListAutoPaging(ctx, conv.ID, conversations.ItemListParams{
		Order: conversations.ItemListParamsOrderAsc, Limit: openai.Int(2),
	})
	for iter.Next() {
		texts = append(texts, itemText(t, iter.Current().RawJSON()))
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("list: %v", err)
	}
	if got := strings.Join(texts, " "); got != "one two three four five" {
		t.Fatalf("list asc: %q", got)
	}

	// Another user cannot see the conversation: 404, not 403.
	if _, err := cb.Conversations.Get(ctx, conv.ID); statusOf(err) != http.StatusNotFound {
		t.Errorf("bob reads alice's conversation: %v, want 404", err)
	}
	// No token, a wrong one: 401 in OpenAI's error shape.
	for _, tok := range []string{"", "rk_nottherightone", server.TokenPrefix + strings.Repeat("A", 43)} {
		code, body := s.do("GET", "/v1/conversations/"+conv.ID, tok, nil)
		var shape struct {
			Error *struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if code != http.StatusUnauthorized || json.Unmarshal(body, &shape) != nil || shape.Error == nil || shape.Error.Message == "" {
			t.Errorf("token %q: %d %s, want 401 with an error object", tok, code, body)
		}
	}
	if _, err := cnone.Conversations.Get(ctx, conv.ID); statusOf(err) != http.StatusUnauthorized {
		t.Errorf("openai-go without a token: %v, want 401", err)
	}

	// recall's own API over plain HTTP: alice lists her one session, bob
	// none; the admin lists every user's with all=true, and bob may not.
	listed := func(token, query string) []string {
		t.Helper()
		code, body := s.do("GET", "/api/v1/sessions"+query, token, nil)
		if code != http.StatusOK {
			t.Fatalf("GET /api/v1/sessions%s: %d %s", query, code, body)
		}
		var page struct {
			Data []struct {
				ID   string `json:"id"`
				User string `json:"user"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("GET /api/v1/sessions%s: %v\n%s", query, err, body)
		}
		var ids []string
		for _, d := range page.Data {
			ids = append(ids, d.User+"/"+d.ID)
		}
		return ids
	}
	if ids := listed(alice, ""); len(ids) != 1 || ids[0] != "alice/"+conv.ID {
		t.Errorf("alice's sessions: %v, want [alice/%s]", ids, conv.ID)
	}
	if ids := listed(bob, ""); len(ids) != 0 {
		t.Errorf("bob's sessions: %v, want none", ids)
	}
	if ids := listed(admin, "?all=true"); len(ids) != 1 || ids[0] != "alice/"+conv.ID {
		t.Errorf("the admin's listing of all: %v, want [alice/%s]", ids, conv.ID)
	}
	if code, body := s.do("GET", "/api/v1/sessions?all=true", bob, nil); code != http.StatusForbidden {
		t.Errorf("bob lists all: %d %s, want 403", code, body)
	}

	// A token revoked by the CLI, another process than the server, is
	// refused within --token-cache (the server verified alice's token on
	// the requests above and keeps it that long), and from then on.
	e.ok("", "token", "revoke", tokens[0].ID)
	revoked := time.Now()
	for {
		_, err := ca.Conversations.Get(ctx, conv.ID)
		if statusOf(err) == http.StatusUnauthorized {
			break
		}
		if err != nil {
			t.Fatalf("revoked token, within --token-cache: %v, want the conversation or a 401", err)
		}
		if time.Since(revoked) > tokenCache+2*time.Second { // the slack: a loaded machine
			t.Fatalf("revoked token still accepted %v after the revocation, over --token-cache %v", time.Since(revoked), tokenCache)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := ca.Conversations.Get(ctx, conv.ID); statusOf(err) != http.StatusUnauthorized {
		t.Errorf("revoked token, again: %v, want 401", err)
	}
	if _, err := cb.Conversations.Get(ctx, "conv_x"); statusOf(err) != http.StatusNotFound {
		t.Errorf("bob after alice's revocation: %v, want 404", err)
	}
	e.fails(exitFailed, "no such token", "token", "revoke", tokens[0].ID)

	// The log never holds a token.
	for _, secret := range []string{alice, bob, admin} {
		if strings.Contains(s.log(), secret) {
			t.Fatalf("the server log holds a token:\n%s", s.log())
		}
	}
	if code := stop(t, s, syscall.SIGTERM); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

// TestServeUsage covers the command lines recall serve and recall token
// refuse: --auth none off loopback, bad flags, a bad user name.
func TestServeUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0"} {
		e.fails(exitUsage, "--auth none is refused", "serve", "--auth", "none", "--addr", addr)
	}
	e.fails(exitUsage, "--auth \"basic\"", "serve", "--auth", "basic")
	e.fails(exitUsage, "--addr", "serve", "--addr", "8080")
	e.fails(exitUsage, "--log-format", "serve", "--log-format", "xml", "--addr", "127.0.0.1:0")
	e.fails(exitUsage, "--allowed-host applies to --auth none only", "serve", "--allowed-host", "recall.test", "--addr", "127.0.0.1:0")
	e.fails(exitUsage, "--user is required", "token", "create")
	e.fails(exitUsage, "--user \"../alice\"", "token", "create", "--user", "../alice")
	e.fails(exitFailed, "no such token", "token", "revoke", "0123456789ab")
	if r := e.ok("", "token", "ls", "--json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("token ls --json of no tokens: %q", r.stdout)
	}
	// Nothing of the refused commands reached the store.
	if _, err := os.Stat(e.home); err == nil {
		ms := e.ls("--all")
		for _, m := range ms {
			if m.Key.Project != server.TokenProject {
				t.Errorf("a refused command left a session: %+v", m)
			}
		}
	}
	// --auth none on loopback starts, as localhost and ::1 too.
	for _, addr := range []string{"localhost:0", "[::1]:0"} {
		if addr == "[::1]:0" && !ipv6Loopback() {
			continue
		}
		cmd := exec.Command(e.bin, "serve", "--auth", "none", "--addr", addr)
		cmd.Env = e.serveEnviron()
		var out testkit.SyncBuffer
		cmd.Stderr = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(out.String(), "recall serve listening") && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		if err != nil || !strings.Contains(out.String(), "recall serve listening") {
			t.Errorf("serve --auth none --addr %s: %v\n%s", addr, err, out.String())
		}
	}
}

func ipv6Loopback() bool {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// TestServeStartLine checks the one start line: the address really bound
// and the store, its password redacted.
func TestServeStartLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.store = "file://" + filepath.Join(t.TempDir(), "store")
	s := e.serve("--auth", "none", "--allowed-host", "recall.test")
	lines := strings.Split(strings.TrimSpace(s.log()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "store="+e.store) || strings.Contains(lines[0], ":0 ") {
		t.Fatalf("start: %q", lines)
	}
	if code, body := s.do("GET", "/healthz", "", nil); code != http.StatusOK {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	// Without authentication it answers to this machine's names and the
	// allowed one only.
	for host, want := range map[string]int{"recall.test": 200, "localhost": 200, "evil.example": 403} {
		req, err := http.NewRequest("GET", s.URL+"/api/v1/sessions", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, res.StatusCode, want)
		}
	}
	if code := stop(t, s, syscall.SIGINT); code != 0 {
		t.Fatalf("SIGINT: exit %d", code)
	}
}

// stop sends sig to the server and returns its exit code.
func stop(t *testing.T, s *served, sig os.Signal) int {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal: %v", err)
	}
	return s.wait()
}

// TestServeGracefulShutdown stops the server with SIGTERM and with SIGINT
// while a request is in flight (its body still arriving): the server takes
// no new connection, the request completes and is stored whole, and the
// process exits 0.
func TestServeGracefulShutdown(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := e.serve("--auth", "none")
			body := `{"items":[{"type":"message","role":"user","content":"sent slowly"}],"metadata":{"signal":"` + sig.String() + `"}}`
			host := strings.TrimPrefix(s.URL, "http://")
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := fmt.Sprintf("POST /v1/conversations HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", host, len(body))
			half := len(body) / 2
			if _, err := io.WriteString(conn, head+body[:half]); err != nil {
				t.Fatal(err)
			}
			// The server read the head, and its handler waits for the rest.
			s.waitInFlight(1)
			if err := s.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			// Shutting down: the listener closes, the process waits. (The
			// response below proves it waited: it comes from the process.)
			testkit.Eventually(t, 30*time.Second, "the log line of the shutdown", func() bool {
				return strings.Contains(s.log(), "shutting down")
			})
			testkit.Eventually(t, 30*time.Second, "the server to stop accepting connections while shutting down", func() bool {
				c, err := net.DialTimeout("tcp", host, time.Second)
				if err == nil {
					c.Close()
				}
				return err != nil
			})
			if s.exited() {
				t.Fatalf("the server exited with a request in flight:\n%s", s.log())
			}
			if _, err := io.WriteString(conn, body[half:]); err != nil {
				t.Fatalf("rest of the body: %v", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("response: %v", err)
			}
			rb, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var conv struct {
				ID     string `json:"id"`
				Object string `json:"object"`
			}
			if resp.StatusCode != http.StatusOK || json.Unmarshal(rb, &conv) != nil || !strings.HasPrefix(conv.ID, "conv_") {
				t.Fatalf("in-flight request: %d %s", resp.StatusCode, rb)
			}
			if code := s.wait(); code != 0 {
				t.Fatalf("exit %d after %s:\n%s", code, sig, s.log())
			}
			// The conversation is in the store, whole.
			st, err := filestore.Open(filestore.Options{Dir: e.home})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			page, err := st.List(context.Background(), server.User{Name: server.DefaultUser}.Project(), recall.ListOptions{})
			if err != nil || len(page.Sessions) != 1 {
				t.Fatalf("sessions after shutdown: %+v, %v", page.Sessions, err)
			}
			items, _, err := st.Items(context.Background(), page.Sessions[0].Key, 0)
			if err != nil || len(items) != 1 || !strings.Contains(string(items[0].Item), "sent slowly") {
				t.Fatalf("items after shutdown: %v, %v", items, err)
			}
			if page.Sessions[0].Metadata["signal"] != sig.String() {
				t.Errorf("metadata after shutdown: %v", page.Sessions[0].Metadata)
			}
		})
	}
}

// TestServeShutdownCutsOff stops the server while a request's body is
// still arriving, with a grace period shorter than the request: the
// request is cut off after the grace, the process exits 1 saying so, and
// the request wrote nothing.
func TestServeShutdownCutsOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.serve("--auth", "none", "--shutdown-timeout", "300ms")
	host := strings.TrimPrefix(s.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"items":[{"type":"message","role":"user","content":"never finished"}]}`
	head := fmt.Sprintf("POST /v1/conversations HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", host, len(body))
	if _, err := io.WriteString(conn, head+body[:10]); err != nil {
		t.Fatal(err)
	}
	s.waitInFlight(1) // the server read the head and waits for the rest
	if code := stop(t, s, syscall.SIGTERM); code != exitFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, exitFailed, s.log())
	}
	lines := strings.Split(strings.TrimSpace(s.log()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "recall: serve: requests still running after 300ms were cut off") {
		t.Errorf("last line: %q", last)
	}
	// The connection was closed without an answer.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("the cut-off request was answered (%d bytes, %v)", n, err)
	}
	st, err := filestore.Open(filestore.Options{Dir: e.home})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	page, err := st.List(context.Background(), "", recall.ListOptions{IncludeArchived: true})
	if err != nil || len(page.Sessions) != 0 {
		t.Fatalf("the cut-off request left sessions: %+v, %v", page.Sessions, err)
	}
}

// TestServeCompaction: recall serve compacts through /api/v1 with the
// model configured as for recall chat, and without one says so.
func TestServeCompaction(t *testing.T) {
	t.Parallel()
	items := `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"type":"message","role":"user","content":"hello"},`, 6), ",") + `]}`
	create := func(t *testing.T, s *served) string {
		t.Helper()
		code, body := s.do("POST", "/v1/conversations", "", json.RawMessage(items))
		var conv struct {
			ID string `json:"id"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &conv) != nil {
			t.Fatalf("create: %d %s", code, body)
		}
		return conv.ID
	}

	t.Run("no model", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		s := e.serve("--auth", "none")
		contains(t, "start line", s.log(), `model="none`)
		id := create(t, s)
		code, body := s.do("POST", "/api/v1/sessions/"+id+"/compact", "", map[string]int{"keep": 2})
		if code != http.StatusBadRequest || !strings.Contains(string(body), "no_model") {
			t.Fatalf("compact without a model: %d %s", code, body)
		}
	})

	t.Run("model", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		srv := memoryServer(t, e, "chat")
		s := e.serve("--auth", "none")
		contains(t, "start line", s.log(), "chat-model at 127.0.0.1")
		id := create(t, s)
		code, body := s.do("POST", "/api/v1/sessions/"+id+"/compact", "", map[string]int{"keep": 2})
		var res agent.CompactionResult
		if code != http.StatusOK || json.Unmarshal(body, &res) != nil || !res.Compacted || res.Before != 6 || res.Kept != 2 {
			t.Fatalf("compact: %d %s", code, body)
		}
		summaries := 0
		for _, r := range srv.Requests() {
			if isSummaryRequest(r) {
				summaries++
			}
		}
		if summaries != 1 {
			t.Errorf("%d summary requests reached the model, want 1", summaries)
		}
		code, body = s.do("GET", "/v1/conversations/"+id+"/items?order=asc", "", nil)
		if code != http.StatusOK || !strings.Contains(string(body), "the user said hello several times") {
			t.Errorf("items after compaction: %d %s", code, body)
		}
	})
}
