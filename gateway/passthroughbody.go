package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/harnessd/harnessd/gateway/dialect"
)

// passthroughRequest is what a passthrough sends upstream for the agent's
// body and route: the configured model (Upstream.Model) in place of the
// one the agent named, in the body or, for Gemini, the path; and a
// failure instead when the body asks the provider to reach the network on
// the agent's behalf and the episode does not let it (ProviderNetwork).
func (g *Gateway) passthroughRequest(d dialect.Name, rt dialect.Route, body []byte) (path string, out []byte, f *failure) {
	if !g.opts.ProviderNetwork {
		if asked := providerNetworkUse(d, body); len(asked) > 0 {
			return "", nil, &failure{Status: http.StatusBadRequest, Kind: failInvalid, Message: fmt.Sprintf(
				"gateway: the request asks the provider to reach the network for the agent (%s), past its sandbox's network boundary; "+
					"this episode does not allow it (network.egress host, or isolation process, does)", strings.Join(asked, ", "))}
		}
	}
	m := g.opts.Upstream.Model
	if m == "" {
		return rt.Path, body, nil
	}
	if d == DialectGemini {
		return geminiPathWithModel(rt.Path, m), body, nil
	}
	out, err := withModel(body, m)
	if err != nil {
		return "", nil, &failure{Status: http.StatusBadRequest, Kind: failInvalid, Message: "gateway: the request body: " + err.Error()}
	}
	return rt.Path, out, nil
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

// withModel is the JSON object body with every top-level "model" member
// removed (an agent's duplicate too, which a provider might read instead)
// and model's set first.
func withModel(body []byte, model string) ([]byte, error) {
	rest := body
	for {
		_, r, ok, err := cutMember(rest, "model")
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		rest = r
	}
	name, _ := json.Marshal(model)
	i := bytes.IndexByte(rest, '{') + 1
	out := make([]byte, 0, len(rest)+len(name)+10)
	out = append(out, rest[:i]...)
	out = append(out, `"model":`...)
	out = append(out, name...)
	if j := skipSpace(rest, i); j < len(rest) && rest[j] != '}' {
		out = append(out, ',')
	}
	return append(out, rest[i:]...), nil
}

// Provider features that reach the network on the agent's behalf, by
// dialect: a top-level member asking for them, and the types of tools (or
// Gemini's tool keys) that are them.
var (
	anthropicNetworkTools = []string{"web_search_", "web_fetch_"} // type prefixes
	responsesNetworkTools = []string{"web_search", "mcp"}         // types, and web_search_* variants
	geminiNetworkTools    = []string{"googlesearch", "google_search", "googlesearchretrieval", "google_search_retrieval", "urlcontext", "url_context"}
)

// providerNetworkUse lists what of body asks the provider to reach the
// network for the agent: Anthropic's mcp_servers and web search or fetch
// tools, a Responses web search or remote MCP tool, Chat Completions'
// web_search_options, Gemini's Google Search or URL context tools. Every
// top-level member is looked at, duplicates and any letter case too (a
// provider may read another occurrence than Go's decoder would).
func providerNetworkUse(d dialect.Name, body []byte) []string {
	var out []string
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			continue
		}
		switch k := strings.ToLower(key); {
		case k == "mcp_servers" && d == DialectAnthropic, k == "web_search_options" && d == DialectChat:
			out = append(out, key)
		case k == "tools":
			out = append(out, networkTools(d, v)...)
		}
	}
	return out
}

// networkTools lists the tools of list that reach the network.
func networkTools(d dialect.Name, list json.RawMessage) []string {
	var tools []map[string]json.RawMessage
	if json.Unmarshal(list, &tools) != nil {
		return nil
	}
	var out []string
	for _, t := range tools {
		if d == DialectGemini {
			for k := range t {
				if slices.Contains(geminiNetworkTools, strings.ToLower(k)) {
					out = append(out, k)
				}
			}
			continue
		}
		var typ string
		for k, v := range t {
			if strings.EqualFold(k, "type") {
				json.Unmarshal(v, &typ)
			}
		}
		switch lt := strings.ToLower(typ); {
		case d == DialectAnthropic && slices.ContainsFunc(anthropicNetworkTools, func(p string) bool { return strings.HasPrefix(lt, p) }):
			out = append(out, typ)
		case d == DialectResponses && (slices.Contains(responsesNetworkTools, lt) || strings.HasPrefix(lt, "web_search")):
			out = append(out, typ)
		}
	}
	return out
}
