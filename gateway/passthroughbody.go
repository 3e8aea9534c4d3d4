package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/harnessd/harnessd/gateway/dialect"
	"github.com/harnessd/harnessd/internal/jsonscan"
	"github.com/harnessd/harnessd/wire"
)

// passthroughRequest is what a passthrough sends upstream for the agent's
// body and route: the configured model (Upstream.Model) in place of the
// one the agent named, in the body or, for Gemini, the path; and, unless
// the episode lets the harness reach the network (ProviderNetwork), the
// body without the provider's own tools that would reach it for the
// agent (left out: agents offer them in every request, Codex its
// web_search, Claude Code its web_search_20250305), and a failure for
// content the provider would fetch by URL (urlFetched: an agent sends
// its content inline, so such a request is the harness's own doing).
// left names what was left out. A body it cannot read as an object is a
// failure.
func (g *Gateway) passthroughRequest(d dialect.Name, rt dialect.Route, body []byte) (path string, out []byte, left []string, f *failure) {
	path, m := rt.Path, g.opts.Upstream.Model
	if m != "" && d == DialectGemini {
		path, m = geminiPathWithModel(rt.Path, m), ""
	}
	if m == "" && g.opts.ProviderNetwork {
		return path, body, nil, nil // as the agent sent it
	}
	ms, err := members(body)
	if err != nil {
		return "", nil, nil, &failure{Status: http.StatusBadRequest, Kind: failInvalid, Message: "gateway: the request body: " + err.Error()}
	}
	changed := false
	if !g.opts.ProviderNetwork {
		ms, left = withoutProviderNetwork(d, ms)
		if u := urlFetched(ms); u != nil {
			return "", nil, nil, refuseFetch(u)
		}
		changed = len(left) > 0
	}
	if m != "" {
		ms = withModel(ms, m)
		changed = true
	}
	if !changed {
		return path, body, nil, nil
	}
	return path, object(ms), left, nil
}

// geminiPathWithModel is Gemini's /VERSION/models/MODEL:METHOD with model.
func geminiPathWithModel(path, model string) string {
	i := strings.Index(path, "/models/")
	j := strings.LastIndexByte(path, ':')
	if i < 0 || j < i {
		return path
	}
	return path[:i] + "/models/" + model + path[j:]
}

// member is one top-level member of a JSON object, its value as written.
type member struct {
	key   string
	value json.RawMessage
}

// members reads the top-level members of the JSON object body, in order,
// duplicates included: json.Valid, then a scan of the top level
// (jsonscan), each value a slice of body (3× faster than a decoder's
// tokens, BenchmarkPassthroughGuard).
func members(body []byte) ([]member, error) {
	if !json.Valid(body) {
		return nil, errors.New("not valid JSON")
	}
	i := jsonscan.Space(body, 0)
	if body[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	for i = jsonscan.Space(body, i+1); body[i] != '}'; {
		kend := jsonscan.String(body, i)
		key, _ := jsonscan.StringValue(body[i:kend])
		i = jsonscan.Space(body, jsonscan.Space(body, kend)+1) // past ':'
		end := jsonscan.Value(body, i, 0)
		out = append(out, member{key, json.RawMessage(body[i:end])})
		if i = jsonscan.Space(body, end); body[i] == ',' {
			i = jsonscan.Space(body, i+1)
		}
	}
	return out, nil
}

// object writes ms back as a JSON object, each value as it was written.
func object(ms []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// withModel is ms without any "model" member (an agent's duplicate, or
// another letter case a provider might read, too) nor otherModels, and
// model's first.
func withModel(ms []member, model string) []member {
	name, _ := json.Marshal(model)
	ms = slices.DeleteFunc(ms, func(m member) bool {
		return strings.EqualFold(m.key, "model") || slices.Contains(otherModels, strings.ToLower(m.key))
	})
	return append([]member{{"model", name}}, ms...)
}

// Provider features that reach the network on the agent's behalf, by
// dialect: Anthropic's tool types (prefixes) and Responses' (exact, and
// web_search_* variants), Gemini's tool keys (lower case).
var (
	anthropicNetworkTools = []string{"web_search_", "web_fetch_"}
	responsesNetworkTools = []string{"web_search", "mcp", "x_search", "web_extractor"}
	geminiNetworkTools    = []string{"googlesearch", "google_search", "googlesearchretrieval", "google_search_retrieval", "urlcontext", "url_context",
		"googlemaps", "google_maps", "enterprisewebsearch", "enterprise_web_search", "retrieval"}
	// Chat Completions defines these tool types; any other is a
	// provider's own (an aggregator's web search) and is left out.
	chatClientTools = []string{"function", "custom"}
	// Top-level members of no provider's API but aggregators' and
	// compatible servers' that switch on a search or fetch for the agent
	// (OpenRouter's plugins, xAI's search_parameters), in any dialect.
	// DashScope's enable_search and search_options likewise.
	aggregatorNetwork = []string{"plugins", "search_parameters", "enable_search", "search_options"}
	// Members that pick other models than "model": OpenRouter's models
	// (tried in turn) and fallbacks, which its ":online" models make a web
	// search too; left out with the configured model.
	otherModels = []string{"models", "fallbacks"}
)

// withoutProviderNetwork is ms without what asks the provider to reach
// the network for the agent: Anthropic's mcp_servers and web search or
// fetch tools, a Responses web search or remote MCP tool, Chat
// Completions' web_search_options and tools of a type it does not define,
// Gemini's Google Search or URL context tools, aggregators' plugins and
// search_parameters; left names each left out. Keys match in any letter case, and
// every occurrence of a duplicated one is looked at (a provider may read
// another than Go's decoder would).
func withoutProviderNetwork(d dialect.Name, ms []member) (out []member, left []string) {
	for _, m := range ms {
		switch k := strings.ToLower(m.key); {
		case k == "mcp_servers" && d == DialectAnthropic, k == "web_search_options" && d == DialectChat,
			slices.Contains(aggregatorNetwork, k):
			if !bytes.Equal(bytes.TrimSpace(m.value), []byte("null")) {
				left = append(left, m.key)
			}
			continue
		case k == "tools":
			v, l := withoutNetworkTools(d, m.value)
			m.value, left = v, append(left, l...)
		}
		out = append(out, m)
	}
	return out, left
}

// withoutNetworkTools is the tool list without the provider's network
// tools (a Gemini tool object without its network keys, and without the
// object when nothing else is left of it), and what it left out. A list
// it cannot read is kept as it is: the provider refuses it.
func withoutNetworkTools(d dialect.Name, list json.RawMessage) (json.RawMessage, []string) {
	var tools []map[string]json.RawMessage
	if json.Unmarshal(list, &tools) != nil {
		return list, nil
	}
	var raw []json.RawMessage
	if json.Unmarshal(list, &raw) != nil || len(raw) != len(tools) {
		return list, nil
	}
	var left []string
	kept := make([]json.RawMessage, 0, len(raw))
	for i, t := range tools {
		if d == DialectGemini {
			n := len(t)
			for k := range t {
				if slices.Contains(geminiNetworkTools, strings.ToLower(k)) {
					left = append(left, k)
					delete(t, k)
				}
			}
			switch {
			case len(t) == n:
				kept = append(kept, raw[i])
			case len(t) > 0:
				b, _ := wire.MarshalNoEscape(t)
				kept = append(kept, b)
			}
			continue
		}
		if typ, ok := networkToolType(d, t); ok {
			left = append(left, typ)
			continue
		}
		kept = append(kept, raw[i])
	}
	if len(left) == 0 {
		return list, nil
	}
	b, _ := wire.MarshalNoEscape(kept)
	return b, left
}

// networkToolType is the type of tool t when one of its "type" keys (any
// letter case: a provider reads one of them) names a network tool.
func networkToolType(d dialect.Name, t map[string]json.RawMessage) (string, bool) {
	for k, v := range t {
		var typ string
		if strings.EqualFold(k, "type") && json.Unmarshal(v, &typ) == nil && networkTool(d, typ) {
			return typ, true
		}
	}
	if d == DialectResponses && hostedShell(t) {
		return "shell (hosted environment)", true
	}
	return "", false
}

// hostedShell says whether t is a Responses shell tool whose commands run
// in the provider's container (an "environment" other than local), which
// may have the network, rather than on the agent's side.
func hostedShell(t map[string]json.RawMessage) bool {
	shell, hosted := false, false
	for k, v := range t {
		var s string
		switch {
		case strings.EqualFold(k, "type"):
			shell = shell || json.Unmarshal(v, &s) == nil && strings.EqualFold(s, "shell")
		case strings.EqualFold(k, "environment"):
			hosted = hosted || !localEnvironment(v)
		}
	}
	return shell && hosted
}

// localEnvironment says whether a shell tool's environment v is null or
// an object every "type" key of which (any letter case) says "local".
func localEnvironment(v json.RawMessage) bool {
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return true
	}
	var env map[string]json.RawMessage
	if json.Unmarshal(v, &env) != nil {
		return false
	}
	typed := false
	for k, tv := range env {
		var s string
		if strings.EqualFold(k, "type") {
			if json.Unmarshal(tv, &s) != nil || !strings.EqualFold(s, "local") {
				return false
			}
			typed = true
		}
	}
	return typed
}

// networkTool says whether a tool of type typ is one the provider runs
// over the network for the agent: a dialect's own, or an aggregator's
// namespaced server tool ("openrouter:web_fetch") in any dialect.
func networkTool(d dialect.Name, typ string) bool {
	lt := strings.ToLower(typ)
	if strings.Contains(lt, ":") {
		return true
	}
	switch d {
	case DialectAnthropic:
		return slices.ContainsFunc(anthropicNetworkTools, func(p string) bool { return strings.HasPrefix(lt, p) })
	case DialectResponses:
		return slices.Contains(responsesNetworkTools, lt) || strings.HasPrefix(lt, "web_search")
	case DialectChat:
		return !slices.Contains(chatClientTools, lt)
	}
	return false
}
