// Package openai adapts OpenAI-compatible servers to agent.Model, over
// github.com/openai/openai-go/v3. It speaks two wire APIs:
//
//   - the Responses API (/v1/responses), whose items are recall's items:
//     stored items are sent as input verbatim and output items are kept
//     verbatim;
//   - Chat Completions (/v1/chat/completions), for servers such as Ollama,
//     vLLM, llama.cpp and LM Studio: items are converted to chat messages
//     on the way out and the reply is converted back to Responses items.
//
// Both stream text when the request has an OnDelta callback, and both
// retry 408, 409, 429 and 5xx answers and connection errors with
// exponential backoff (honouring Retry-After), through openai-go.
package openai

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// API selects a wire API.
type API string

// The wire APIs.
const (
	// APIAuto uses the Responses API for OpenAI's own endpoint (an empty
	// BaseURL or host api.openai.com) and Chat Completions for any other
	// server, since most compatible servers speak only that.
	APIAuto      API = ""
	APIResponses API = "responses"
	APIChat      API = "chat"
)

// DefaultBaseURL is OpenAI's API endpoint.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultModel is the model used when Config.Model is empty.
const DefaultModel = "gpt-4o-mini"

// DefaultMaxRetries is the number of retries when Config.MaxRetries is 0.
const DefaultMaxRetries = 2

// Config configures a Model. The zero value talks to OpenAI with
// DefaultModel and no API key.
type Config struct {
	// BaseURL is the API root, ending in /v1 for most servers
	// (http://localhost:11434/v1 for Ollama). Default: DefaultBaseURL.
	BaseURL string
	// APIKey is sent as a bearer token. Default: none; local servers
	// usually accept any value.
	APIKey string
	// Model names the chat model. Default: DefaultModel.
	Model string
	// TitleModel names the cheap model used for titles (see NewTitleModel).
	// Default: Model.
	TitleModel string
	// API selects the wire API. Default: APIAuto.
	API API
	// MaxRetries is how many times a failed request is retried (429, 5xx,
	// connection errors). Default (0): DefaultMaxRetries. Negative: none.
	MaxRetries int
	// MaxRetryDelay caps the wait between retries, both the exponential
	// backoff and a server's Retry-After. Default (0): openai-go's
	// (backoff capped at 8s, Retry-After honoured up to 2 minutes).
	MaxRetryDelay time.Duration
	// Timeout bounds each attempt of a request. Default (0): only the
	// context bounds it.
	Timeout time.Duration
	// HTTPClient sends the requests. Default: openai-go's client.
	HTTPClient *http.Client
}

// ConfigFromEnv returns the configuration in the environment:
//
//	OPENAI_BASE_URL     BaseURL
//	OPENAI_API_KEY      APIKey
//	RECALL_MODEL        Model
//	RECALL_TITLE_MODEL  TitleModel
//	RECALL_API          API: "responses" or "chat" (default: auto)
//
// Unset variables leave the defaults. Nothing is validated here; New does.
func ConfigFromEnv() Config {
	return Config{
		BaseURL:    os.Getenv("OPENAI_BASE_URL"),
		APIKey:     os.Getenv("OPENAI_API_KEY"),
		Model:      os.Getenv("RECALL_MODEL"),
		TitleModel: os.Getenv("RECALL_TITLE_MODEL"),
		API:        API(strings.ToLower(strings.TrimSpace(os.Getenv("RECALL_API")))),
	}
}

// resolved returns c with defaults filled in, or an error for a value
// that cannot work.
func (c Config) resolved() (Config, error) {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("openai: base URL %q: want an http(s) URL such as http://localhost:11434/v1", c.BaseURL)
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.TitleModel == "" {
		c.TitleModel = c.Model
	}
	switch c.API {
	case APIAuto:
		c.API = APIChat
		if u.Host == "api.openai.com" {
			c.API = APIResponses
		}
	case APIResponses, APIChat:
	default:
		return c, fmt.Errorf("openai: API %q: want %q or %q", c.API, APIResponses, APIChat)
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	} else if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	return c, nil
}
