package harness

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/harnessd/harnessd/gateway"
)

// Model upstream kinds (harness.model.upstream).
const (
	// ModelUpstreamEngine is a token-returning vLLM or SGLang chat
	// completions server: every agent dialect is translated to it and the
	// calls are training traffic with token ids.
	ModelUpstreamEngine = string(gateway.UpstreamEngine)
	// ModelUpstreamPassthrough is a hosted provider of one dialect: calls
	// are forwarded as they are (but for the key) and recorded as
	// evaluation traffic.
	ModelUpstreamPassthrough = string(gateway.UpstreamPassthrough)
	// DefaultModelUpstream is the kind when only harness.model.url is set:
	// a passthrough of the agent's own dialect, which is what pointing the
	// agent straight at the URL did before the gateway stood in between
	// (an engine upstream would silently require a vLLM/SGLang server
	// there). Training needs upstream: engine, said explicitly.
	DefaultModelUpstream = ModelUpstreamPassthrough
	// DefaultModelDialect is a passthrough's dialect without a preset to
	// name one.
	DefaultModelDialect = string(gateway.DialectChat)
)

// OrchestrationTokenEnv is the daemon variable holding harnessd's own API
// token; it is never a model key.
const OrchestrationTokenEnv = "HARNESSD_API_TOKEN"

var modelDialects = []string{string(gateway.DialectChat), string(gateway.DialectResponses),
	string(gateway.DialectAnthropic), string(gateway.DialectGemini)}

// Enabled reports whether episodes get a model gateway (URL is set).
func (m *ModelConfig) Enabled() bool { return m.URL != "" }

// UpstreamKind returns the effective upstream kind.
func (m *ModelConfig) UpstreamKind() string {
	if m.Upstream == "" {
		return DefaultModelUpstream
	}
	return m.Upstream
}

// ModelRoot returns a model URL's server root: without a trailing slash,
// "/v1" or "/v1beta". It fails for anything but an absolute http(s) URL
// with a host.
func ModelRoot(u string) (string, error) {
	if u == "" {
		return "", nil
	}
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return "", fmt.Errorf("model url %q: want http:// or https://", u)
	}
	u = strings.TrimRight(u, "/")
	for _, suffix := range []string{"/v1beta", "/v1"} {
		u = strings.TrimSuffix(u, suffix)
	}
	if p, err := url.Parse(u); err != nil || p.Host == "" {
		return "", fmt.Errorf("model url %q: no host", u)
	}
	return u, nil
}

// validateModel checks harness.model and the episode's model budgets.
func (c *Config) validateModel() []error {
	m := &c.Harness.Model
	e := &c.Episode
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if _, err := ModelRoot(m.URL); err != nil {
		bad("harness.model.url: %w", err)
	}
	switch m.Upstream {
	case "", ModelUpstreamEngine, ModelUpstreamPassthrough:
	default:
		bad("harness.model.upstream %q: want %q or %q", m.Upstream, ModelUpstreamEngine, ModelUpstreamPassthrough)
	}
	if m.Dialect != "" {
		known := false
		for _, d := range modelDialects {
			known = known || m.Dialect == d
		}
		switch {
		case !known:
			bad("harness.model.dialect %q: want one of %s", m.Dialect, strings.Join(modelDialects, ", "))
		case m.UpstreamKind() == ModelUpstreamEngine:
			bad("harness.model.dialect applies to a passthrough upstream only (an engine speaks chat completions; every agent dialect is translated to it)")
		}
	}
	if m.MaxTokens < 0 {
		bad("harness.model.max_tokens must not be negative")
	} else if m.MaxTokens > 0 && m.UpstreamKind() != ModelUpstreamEngine {
		bad("harness.model.max_tokens applies to an engine upstream only (a passthrough request is forwarded as it is)")
	}
	if m.Timeout < 0 {
		bad("harness.model.timeout must not be negative")
	}
	if m.APIKeyEnv == OrchestrationTokenEnv {
		bad("harness.model.api_key_env: %s is harnessd's own API token and never a model key", m.APIKeyEnv)
	}
	budgets := []struct {
		name string
		v    int
	}{
		{gateway.BudgetModelCalls, e.MaxModelCalls}, {gateway.BudgetTurnModelCalls, e.MaxTurnModelCalls},
		{gateway.BudgetOutputTokens, e.MaxOutputTokens}, {gateway.BudgetTurnOutputTokens, e.MaxTurnOutputTokens},
	}
	for _, b := range budgets {
		switch {
		case b.v < 0:
			bad("episode.%s must not be negative", b.name)
		case b.v > 0 && !m.Enabled():
			bad("episode.%s needs harness.model.url: budgets are enforced by the model gateway", b.name)
		}
	}
	if !m.Enabled() {
		for _, k := range []struct{ name, v string }{
			{"api_key_env", m.APIKeyEnv}, {"upstream", m.Upstream}, {"dialect", m.Dialect},
		} {
			if k.v != "" {
				bad("harness.model.%s needs harness.model.url: the key and the upstream belong to the model gateway, which the agent is pointed at instead of the model", k.name)
			}
		}
		if m.MaxTokens > 0 || m.Timeout > 0 {
			bad("harness.model.max_tokens and timeout need harness.model.url")
		}
	}
	return errs
}
