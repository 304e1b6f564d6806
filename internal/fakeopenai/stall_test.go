package fakeopenai

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestStallStream: a stalled stream sends its first delta, then nothing,
// and its handler ends when the client goes away; in both APIs.
func TestStallStream(t *testing.T) {
	for _, path := range []string{"/responses", "/chat/completions"} {
		t.Run(path, func(t *testing.T) {
			s := New()
			defer s.Close()
			s.Enqueue(Reply{Text: "first second third", StallStream: true})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			body := `{"model":"m","stream":true,"input":"hi","messages":[{"role":"user","content":"hi"}]}`
			req, _ := http.NewRequestWithContext(ctx, "POST", s.URL()+path, strings.NewReader(body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			lines := make(chan string)
			go func() {
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			sawFirst := false
			for !sawFirst {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatal("the stream ended before its first delta")
					}
					sawFirst = strings.Contains(l, `"first `)
					if strings.Contains(l, "second") {
						t.Fatalf("more than the first delta: %s", l)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("no first delta")
				}
			}
			select {
			case l, ok := <-lines:
				if ok && strings.Contains(l, "second") {
					t.Fatalf("a stalled stream went on: %s", l)
				}
			case <-time.After(200 * time.Millisecond):
			}
			cancel()
			// Close waits for the handlers: it returns only if the stalled
			// handler saw the client go away.
			done := make(chan struct{})
			go func() { s.Close(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the stalled handler did not end")
			}
		})
	}
}

// TestSetRecord: with recording off, requests are served and counted but
// not kept.
func TestSetRecord(t *testing.T) {
	s := New()
	defer s.Close()
	s.SetRecord(false)
	post(t, s, "/responses", `{"model":"m","input":"one"}`)
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d requests kept with recording off", n)
	}
	s.SetRecord(true)
	post(t, s, "/responses", `{"model":"m","input":"two"}`)
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].N != 2 || reqs[0].LastUserText() != "two" {
		t.Fatalf("requests %+v", reqs)
	}
}
