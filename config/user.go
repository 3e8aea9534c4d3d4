package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/harnessd/harnessd/internal/units"
)

// Defaults of the simulated user.
const (
	// DefaultUserTimeout bounds one answer of the simulated user.
	DefaultUserTimeout = 60 * time.Second
	// DefaultUserDoneMarker is what a model user's answer starts with to end
	// the episode.
	DefaultUserDoneMarker = "DONE"
)

// UserConfig is the simulated user (user:): the other side of the
// conversation, asked for the next turn's message whenever a step's message
// is empty. It is either a program (Command: started once per episode in a
// side sandbox of its own, speaking JSON lines; docs/configuration.md) or a
// model (Model: called by the daemon with a prompt, as evaluation traffic
// that never enters the training export).
type UserConfig struct {
	// Command is the user program and its arguments.
	Command []string `yaml:"command" json:"command,omitempty"`
	// Env are extra variables of the user program.
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// Model is a model user.
	Model *UserModelConfig `yaml:"model" json:"model,omitempty"`
	// Timeout bounds one answer (default DefaultUserTimeout).
	Timeout units.Duration `yaml:"timeout" json:"timeout,omitempty"`
}

// UserModelConfig is a model that plays the user: an OpenAI Chat
// Completions endpoint (by default the episodes' model upstream,
// harness.model) given Prompt as its system message, the task's
// instruction, and the conversation with the roles swapped (the harness's
// responses are its user messages).
type UserModelConfig struct {
	// URL is the endpoint's server root (default harness.model.url);
	// requests go to URL/v1/chat/completions.
	URL string `yaml:"url" json:"url,omitempty"`
	// Name is the model name sent (default harness.model.name).
	Name string `yaml:"name" json:"name,omitempty"`
	// APIKeyEnv names the daemon's variable holding the endpoint's key
	// (default harness.model.api_key_env when URL is the harness's).
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env,omitempty"`
	// Prompt is the system prompt; PromptFile reads it from a file.
	Prompt     string `yaml:"prompt" json:"prompt,omitempty"`
	PromptFile string `yaml:"prompt_file" json:"prompt_file,omitempty"`
	// DoneMarker, at the start of an answer, ends the episode; the rest of
	// the answer is the reason (default DefaultUserDoneMarker).
	DoneMarker string `yaml:"done_marker" json:"done_marker,omitempty"`
	// MaxTokens caps each answer (0: the endpoint's default).
	MaxTokens int `yaml:"max_tokens" json:"max_tokens,omitempty"`

	endpoint ModelEndpoint
}

// Endpoint is the model user's parsed URL (set by Normalize).
func (m *UserModelConfig) Endpoint() ModelEndpoint { return m.endpoint }

// normalizeUser applies the user's defaults and validates it.
func (c *Config) normalizeUser() []error {
	u := c.User
	if u == nil {
		return nil
	}
	var errs []error
	if (len(u.Command) == 0) == (u.Model == nil) {
		errs = append(errs, errors.New("user: exactly one of command or model is required"))
	}
	if u.Timeout == 0 {
		u.Timeout = units.Duration(DefaultUserTimeout)
	}
	if u.Timeout < 0 {
		errs = append(errs, errors.New("user.timeout must not be negative"))
	}
	if m := u.Model; m != nil {
		if m.URL == "" {
			m.URL = c.Harness.Model.URL
			if m.APIKeyEnv == "" {
				m.APIKeyEnv = c.Harness.Model.APIKeyEnv
			}
		}
		if m.Name == "" {
			m.Name = c.Harness.Model.Name
		}
		if m.DoneMarker == "" {
			m.DoneMarker = DefaultUserDoneMarker
		}
		if m.URL == "" {
			errs = append(errs, errors.New("user.model.url is required (or harness.model.url, whose upstream it then calls)"))
		} else if ep, err := ParseModelEndpoint(m.URL); err != nil {
			errs = append(errs, fmt.Errorf("user.model.url: %w", err))
		} else {
			m.endpoint = ep
		}
		if m.Prompt != "" && m.PromptFile != "" {
			errs = append(errs, errors.New("user.model: prompt and prompt_file are exclusive"))
		}
		if m.PromptFile != "" {
			b, err := os.ReadFile(m.PromptFile)
			if err != nil {
				errs = append(errs, fmt.Errorf("user.model.prompt_file: %w", err))
			} else {
				m.Prompt, m.PromptFile = strings.TrimSpace(string(b)), ""
			}
		}
		if m.MaxTokens < 0 {
			errs = append(errs, errors.New("user.model.max_tokens must not be negative"))
		}
	}
	return errs
}

// Describe says what plays the user, for harnessd validate.
func (u *UserConfig) Describe() string {
	if u == nil {
		return "none"
	}
	if len(u.Command) > 0 {
		return "program " + strings.Join(u.Command, " ") + " (in a side sandbox)"
	}
	name := u.Model.Name
	if name == "" {
		name = "the endpoint's default model"
	}
	return fmt.Sprintf("model %s at %s (evaluation traffic: never in the training export)", name, u.Model.URL)
}
