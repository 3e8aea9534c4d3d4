package config

import (
	"fmt"
	"net/url"
	"os"
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

// ModelEndpoint is a model upstream's address, parsed once (ParseModelEndpoint).
// The zero value is no endpoint.
type ModelEndpoint struct {
	// Root is the server root: scheme, host and any path prefix, without a
	// trailing slash, "/v1" or "/v1beta". An engine's chat completions are
	// at Root/v1/chat/completions; a passthrough appends the agent's path.
	Root string
}

// IsZero reports no endpoint.
func (e ModelEndpoint) IsZero() bool { return e.Root == "" }

// OpenAIBase is the OpenAI-compatible base of the endpoint: Root + "/v1".
func (e ModelEndpoint) OpenAIBase() string { return e.Root + "/v1" }

// ParseModelEndpoint parses a model URL (harness.model.url): an absolute
// http(s) URL with a host, no query, fragment or user information; a
// trailing slash, "/v1" or "/v1beta" is dropped. "" is the zero endpoint.
// It is the one parser of model URLs.
func ParseModelEndpoint(raw string) (ModelEndpoint, error) {
	if raw == "" {
		return ModelEndpoint{}, nil
	}
	if !strings.Contains(raw, "://") {
		// "127.0.0.1:8001" does not parse as a URL and "localhost:8001"
		// parses with the scheme "localhost": say what is missing.
		return ModelEndpoint{}, fmt.Errorf("model url %q: want http:// or https:// before the host (http://%s)", raw, raw)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return ModelEndpoint{}, fmt.Errorf("model url %q: %w", raw, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return ModelEndpoint{}, fmt.Errorf("model url %q: want http:// or https://", raw)
	case u.Host == "" || u.Hostname() == "":
		return ModelEndpoint{}, fmt.Errorf("model url %q: no host", raw)
	case u.User != nil:
		return ModelEndpoint{}, fmt.Errorf("model url %q: user information in the URL (give the key with api_key_env)", raw)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return ModelEndpoint{}, fmt.Errorf("model url %q: a query or fragment has no place in a server root", raw)
	}
	root := strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/")
	for _, suffix := range []string{"/v1beta", "/v1"} {
		root = strings.TrimSuffix(root, suffix)
	}
	return ModelEndpoint{Root: strings.TrimRight(root, "/")}, nil
}

// Endpoint returns the parsed URL: Normalize parses it once (a URL that
// does not parse is the zero endpoint, and Normalize reports it). Before
// Normalize it parses URL itself.
func (m *ModelConfig) Endpoint() ModelEndpoint {
	if m.endpoint.IsZero() && m.URL != "" {
		m.endpoint, _ = ParseModelEndpoint(m.URL)
	}
	return m.endpoint
}

// UsePresetDialect gives a passthrough upstream without a dialect the
// preset's (the agent's own API); "" changes nothing.
func (m *ModelConfig) UsePresetDialect(dialect string) {
	if m.Dialect == "" && m.URL != "" && m.UpstreamKind() == ModelUpstreamPassthrough {
		m.Dialect = dialect
	}
}

// CheckKey reports an api_key_env that names harnessd's own API token, or
// that is not set (or empty) in the daemon's environment as lookup reads it
// (nil: os.LookupEnv). The key is read again when each episode's gateway
// starts; this check lets serve refuse at once.
func (m *ModelConfig) CheckKey(lookup func(string) (string, bool)) error {
	k := m.APIKeyEnv
	switch {
	case k == "":
		return nil
	case k == OrchestrationTokenEnv:
		return fmt.Errorf("harness.model.api_key_env: %s is harnessd's own API token and never a model key", k)
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if v, ok := lookup(k); !ok || v == "" {
		return fmt.Errorf("harness.model.api_key_env: %s is not set in harnessd's environment", k)
	}
	return nil
}

// validateModel checks harness.model and the episode's model budgets.
func (c *Config) validateModel() []error {
	m := &c.Harness.Model
	e := &c.Episode
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	var err error
	if m.endpoint, err = ParseModelEndpoint(m.URL); err != nil {
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
	if m.Sampling != nil {
		if err := m.Sampling.Validate(); err != nil {
			bad("harness.model.sampling: %w", err)
		}
		if m.UpstreamKind() != ModelUpstreamEngine {
			bad("harness.model.sampling applies to an engine upstream only (a passthrough request is forwarded as it is)")
		}
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
		if m.MaxTokens > 0 {
			bad("harness.model.max_tokens needs harness.model.url")
		}
		if m.Timeout > 0 {
			bad("harness.model.timeout needs harness.model.url")
		}
	}
	return errs
}
