package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/provider/openai"
)

func TestCompactItems(t *testing.T) {
	srv := fakeopenai.New()
	defer srv.Close()
	m, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "k", Model: "fake", API: openai.APIResponses, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	odd := recall.Item(`{"type":"message","role":"user","content":"hi","x_unknown":[1,2]}`)
	in := []recall.Item{odd, recall.Message("assistant", "hello")}
	srv.Enqueue(fakeopenai.Reply{Text: "ENC", Usage: fakeopenai.Usage{Input: 9, Output: 2}})
	out, u, err := m.CompactItems(context.Background(), "keep names", in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Role() != "user" || out[0].Text() != "hi" || out[1].Type() != "compaction" {
		t.Fatalf("CompactItems = %s", out)
	}
	if u != (recall.Usage{InputTokens: 9, OutputTokens: 2, TotalTokens: 11}) {
		t.Errorf("usage %+v", u)
	}
	req := srv.Requests()[0]
	if req.Path != "/v1/responses/compact" || req.Model != "fake" || req.Instructions() != "keep names" {
		t.Errorf("request %s model %q instructions %q", req.Path, req.Model, req.Instructions())
	}
	if got := req.Input(); len(got) != 2 || string(got[0]) != string(odd) {
		t.Errorf("input sent %s, want the items verbatim", got)
	}
	var enc struct {
		Encrypted string `json:"encrypted_content"`
	}
	if json.Unmarshal(out[1], &enc); enc.Encrypted != "ENC" {
		t.Errorf("compaction item %s", out[1])
	}
}

func TestCompactItemsUnsupported(t *testing.T) {
	srv := fakeopenai.New()
	defer srv.Close()
	srv.SetNoCompact(true)
	for _, api := range []openai.API{openai.APIResponses, openai.APIChat} {
		m, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "k", Model: "fake", API: api, MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := m.CompactItems(context.Background(), "", []recall.Item{recall.Message("user", "x")}); !errors.Is(err, recall.ErrUnsupported) {
			t.Errorf("%s: CompactItems = %v, want ErrUnsupported", api, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests recorded; a 404 compact is not recorded and chat sends none", n)
	}
}
