package main

import (
	"fmt"
	"net/url"

	"github.com/spf13/pflag"

	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/provider/offline"
	"github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/title"
)

// modelFlags are the model settings of recall chat. Each overrides its
// environment variable (openai.ConfigFromEnv); the API key is read from
// OPENAI_API_KEY only, so it never shows in a process list.
type modelFlags struct {
	model   string
	baseURL string
	api     string
}

func (m *modelFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&m.model, "model", "", "model name (default $RECALL_MODEL, else "+openai.DefaultModel+")")
	fl.StringVar(&m.baseURL, "base-url", "", "OpenAI-compatible server, e.g. http://localhost:11434/v1 (default $OPENAI_BASE_URL, else OpenAI)")
	fl.StringVar(&m.api, "api", "", "wire API: responses or chat (default $RECALL_API, else responses for OpenAI and chat for other servers)")
}

// builtModel is the model chat talks to, the titler of its sessions, and a
// label for status lines.
type builtModel struct {
	model  agent.Model
	titler agent.Titler
	label  string
	// cheap is the model of side tasks (memory notes): the title model.
	cheap agent.Model
}

// build makes the model. Without OPENAI_API_KEY it is the offline model,
// and sessions get the fallback title ("Session 2006-01-02 15:04"), since
// the offline model cannot summarise. Otherwise it is the OpenAI-compatible
// server the configuration names, with RECALL_TITLE_MODEL (default: the
// chat model) for titles.
func (m *modelFlags) build() (builtModel, error) {
	cfg := openai.ConfigFromEnv()
	if m.model != "" {
		cfg.Model = m.model
	}
	if m.baseURL != "" {
		cfg.BaseURL = m.baseURL
	}
	if m.api != "" {
		cfg.API = openai.API(m.api)
	}
	// A wrong wire API is a usage error whether or not a key is set.
	if cfg.API != openai.APIAuto && cfg.API != openai.APIResponses && cfg.API != openai.APIChat {
		return builtModel{}, usageError("--api and RECALL_API take responses or chat", "unknown wire API %q", cfg.API)
	}
	if cfg.APIKey == "" {
		return builtModel{model: offline.Model{}, titler: &title.Generator{}, label: "offline, set OPENAI_API_KEY for a real model", cheap: offline.Model{}}, nil
	}
	model, err := openai.New(cfg)
	if err != nil {
		return builtModel{}, usageError("check --base-url/OPENAI_BASE_URL and --api/RECALL_API", "model: %v", err)
	}
	titleModel, err := openai.NewTitleModel(cfg)
	if err != nil {
		return builtModel{}, usageError("check RECALL_TITLE_MODEL", "title model: %v", err)
	}
	host := "api.openai.com"
	if u, err := url.Parse(cfg.BaseURL); err == nil && u.Host != "" {
		host = u.Host
	}
	return builtModel{
		model:  model,
		titler: &title.Generator{Model: titleModel},
		label:  fmt.Sprintf("%s at %s, %s API", model.Name(), host, model.API()),
		cheap:  titleModel,
	}, nil
}

// instructions is the system prompt of the chat agent. It is sent with
// every call and never stored, so it may change between versions.
func instructions(dir string) string {
	return "You are a helpful assistant working in the project directory " + dir + ". " +
		"You can list, read and write the files of that directory with your tools, and nothing outside it. " +
		"Read files before you talk about them. Be concise."
}
