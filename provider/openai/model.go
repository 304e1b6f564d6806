package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/recallkit/recall/agent"
)

// Model is an OpenAI-compatible model. It is safe for concurrent use.
type Model struct {
	cfg    Config // resolved
	name   string
	client oai.Client
}

var _ agent.Model = (*Model)(nil)

// New returns the chat model cfg describes (cfg.Model).
func New(cfg Config) (*Model, error) {
	return newModel(cfg, false)
}

// NewTitleModel returns the title model cfg describes: cfg.TitleModel,
// which defaults to cfg.Model, on the same server.
func NewTitleModel(cfg Config) (*Model, error) {
	return newModel(cfg, true)
}

func newModel(cfg Config, title bool) (*Model, error) {
	cfg, err := cfg.resolved()
	if err != nil {
		return nil, err
	}
	// Every setting is passed explicitly, so OPENAI_BASE_URL and
	// OPENAI_API_KEY in the environment cannot override the Config.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(cfg.MaxRetries),
	}
	if cfg.MaxRetryDelay > 0 {
		opts = append(opts, option.WithMaxRetryDelay(cfg.MaxRetryDelay))
	}
	if cfg.Timeout > 0 {
		opts = append(opts, option.WithRequestTimeout(cfg.Timeout))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	name := cfg.Model
	if title {
		name = cfg.TitleModel
	}
	return &Model{cfg: cfg, name: name, client: oai.NewClient(opts...)}, nil
}

// Name returns the model's name as sent to the server.
func (m *Model) Name() string { return m.name }

// API returns the wire API the model speaks (never APIAuto).
func (m *Model) API() API { return m.cfg.API }

// Respond implements agent.Model. It streams when req.OnDelta is set.
//
// Some models (reasoning models) refuse a temperature; when the server
// rejects the request's temperature with a 400, Respond sends it again
// without one.
func (m *Model) Respond(ctx context.Context, req *agent.Request) (*agent.Response, error) {
	resp, err := m.respond(ctx, req)
	if err != nil && req.Temperature != nil && rejectsTemperature(err) {
		r2 := *req
		r2.Temperature = nil
		resp, err = m.respond(ctx, &r2)
	}
	if err != nil {
		// openai-go's error text is only the status; the server's message
		// says what is wrong ("model not found"), so it is added.
		var apiErr *oai.Error
		if errors.As(err, &apiErr) && apiErr.Message != "" {
			return nil, fmt.Errorf("openai: %s %s: %w: %.300s", m.cfg.API, m.name, err, apiErr.Message)
		}
		return nil, fmt.Errorf("openai: %s %s: %w", m.cfg.API, m.name, err)
	}
	return resp, nil
}

func (m *Model) respond(ctx context.Context, req *agent.Request) (*agent.Response, error) {
	if m.cfg.API == APIChat {
		return m.chat(ctx, req)
	}
	return m.responses(ctx, req)
}

// rejectsTemperature reports whether err is a 400 about the temperature.
func rejectsTemperature(err error) bool {
	var apiErr *oai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		return false
	}
	return apiErr.Param == "temperature" || strings.Contains(strings.ToLower(apiErr.Message), "temperature")
}

// toolSchema returns a tool's parameters, or an empty object schema when
// the tool gives none or gives invalid JSON, which servers would reject.
func toolSchema(t agent.Tool) json.RawMessage {
	p := t.Parameters()
	if len(p) == 0 || !json.Valid(p) {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return p
}
