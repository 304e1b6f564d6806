package fakeopenai

import (
	"encoding/json"
	"net/http"
	"testing"
)

func TestCompactEndpoint(t *testing.T) {
	s := New()
	defer s.Close()
	s.Enqueue(Reply{Text: "opaque", Usage: Usage{Input: 7, Output: 3}})
	resp := post(t, s, "/responses/compact", `{"model":"m","input":[
		{"role":"user","content":"first"},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"reply"}]},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"x"},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"second"}]}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var body struct {
		Object string `json:"object"`
		Output []struct {
			Type      string `json:"type"`
			Role      string `json:"role"`
			Encrypted string `json:"encrypted_content"`
			Content   []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			Total int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Object != "response.compaction" || len(body.Output) != 3 || body.Usage.Total != 10 {
		t.Fatalf("compact answer %+v", body)
	}
	if o := body.Output; o[0].Content[0].Text != "first" || o[1].Content[0].Text != "second" || o[2].Type != "compaction" || o[2].Encrypted != "opaque" {
		t.Errorf("output %+v: want the user messages, then the compaction item", o)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].API != "compact" || len(reqs[0].Input()) != 5 {
		t.Errorf("recorded %+v", reqs)
	}
}

func TestNoCompact(t *testing.T) {
	s := New()
	defer s.Close()
	s.SetNoCompact(true)
	if resp := post(t, s, "/responses/compact", `{"model":"m","input":[]}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404", resp.StatusCode)
	}
	if resp := post(t, s, "/responses", `{"model":"m","input":[]}`); resp.StatusCode != http.StatusOK {
		t.Errorf("responses status %d", resp.StatusCode)
	}
}
