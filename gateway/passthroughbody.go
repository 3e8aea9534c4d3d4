package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/harnessd/harnessd/gateway/dialect"
	"github.com/harnessd/harnessd/wire"
)

// passthroughRequest is what a passthrough sends upstream for the agent's
// body and route: the configured model (Upstream.Model) in place of the
// one the agent named, in the body or, for Gemini, the path; and, unless
// the episode lets the harness reach the network (ProviderNetwork), the
// body without the provider's own tools that would reach it for the
// agent (left out: agents offer them in every request, Codex its
// web_search, Claude Code its web_search_20250305). left names what was
// left out. A body it cannot read as an object is a failure.
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
// duplicates included.
func members(body []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key, v})
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
// another letter case a provider might read, too) and model's first.
func withModel(ms []member, model string) []member {
	name, _ := json.Marshal(model)
	ms = slices.DeleteFunc(ms, func(m member) bool { return strings.EqualFold(m.key, "model") })
	return append([]member{{"model", name}}, ms...)
}

// Provider features that reach the network on the agent's behalf, by
// dialect: Anthropic's tool types (prefixes) and Responses' (exact, and
// web_search_* variants), Gemini's tool keys (lower case).
var (
	anthropicNetworkTools = []string{"web_search_", "web_fetch_"}
	responsesNetworkTools = []string{"web_search", "mcp"}
	geminiNetworkTools    = []string{"googlesearch", "google_search", "googlesearchretrieval", "google_search_retrieval", "urlcontext", "url_context"}
)

// withoutProviderNetwork is ms without what asks the provider to reach
// the network for the agent: Anthropic's mcp_servers and web search or
// fetch tools, a Responses web search or remote MCP tool, Chat
// Completions' web_search_options, Gemini's Google Search or URL context
// tools; left names each left out. Keys match in any letter case, and
// every occurrence of a duplicated one is looked at (a provider may read
// another than Go's decoder would).
func withoutProviderNetwork(d dialect.Name, ms []member) (out []member, left []string) {
	for _, m := range ms {
		switch k := strings.ToLower(m.key); {
		case k == "mcp_servers" && d == DialectAnthropic, k == "web_search_options" && d == DialectChat:
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
	return "", false
}

// networkTool says whether a tool of type typ is one the provider runs
// over the network for the agent.
func networkTool(d dialect.Name, typ string) bool {
	lt := strings.ToLower(typ)
	switch d {
	case DialectAnthropic:
		return slices.ContainsFunc(anthropicNetworkTools, func(p string) bool { return strings.HasPrefix(lt, p) })
	case DialectResponses:
		return slices.Contains(responsesNetworkTools, lt) || strings.HasPrefix(lt, "web_search")
	}
	return false
}
