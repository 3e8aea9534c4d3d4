package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/harnessd/harnessd/gateway/dialect"
)

var (
	jsonTrue  = json.RawMessage("true")
	jsonFalse = json.RawMessage("false")
)

// engineBody applies the gateway's request hygiene to an engine request
// and returns its body and effective sampling parameters: non-streaming
// (stream_options dropped), empty tools dropped with tool_choice and
// parallel_tool_calls, one choice, the sampling pin applied (pin, nil for
// none: what it stripped and where the result differs from it are in the
// returned sampled), max_tokens (the pin's, else the agent's) capped at
// maxTokens (0: no cap), the upstream's model, and return_token_ids and
// logprobs injected.
func (g *Gateway) engineBody(chat map[string]json.RawMessage, maxTokens int, pin *Sampling) ([]byte, sampled, error) {
	return g.engineBodyOf(chat, nil, maxTokens, pin)
}

// engineBodyOf is engineBody for a request whose "messages" value is known
// compacted (compactMessages, nil: not known): the body carries it as is,
// without compacting the whole conversation again.
func (g *Gateway) engineBodyOf(chat map[string]json.RawMessage, compactMessages json.RawMessage, maxTokens int, pin *Sampling) ([]byte, sampled, error) {
	var sm sampled
	up := make(map[string]json.RawMessage, len(chat)+4)
	for k, v := range chat {
		up[k] = v
	}
	delete(up, "stream_options")
	up["stream"] = jsonFalse
	if !nonEmptyList(up["tools"]) {
		delete(up, "tools")
		delete(up, "tool_choice")
		delete(up, "parallel_tool_calls")
	}
	delete(up, "n")
	asked := 0
	for _, k := range []string{"max_completion_tokens", "max_tokens"} {
		if v, ok := up[k]; ok {
			if n, err := strconv.Atoi(string(v)); err == nil && n > 0 && asked == 0 {
				asked = n
			}
			delete(up, k)
		}
	}
	agentAsked := asked > 0
	if pin != nil && pin.MaxTokens != nil {
		asked = *pin.MaxTokens
	}
	if maxTokens > 0 && (asked == 0 || asked > maxTokens) {
		asked = maxTokens
	}
	if asked > 0 {
		up["max_tokens"] = json.RawMessage(strconv.Itoa(asked))
	}
	if m := g.opts.Upstream.Model; m != "" {
		b, _ := json.Marshal(m)
		up["model"] = b
	}
	if pin != nil {
		sm.stripped, sm.overridden = pin.pin(up)
		if agentAsked && pin.MaxTokens != nil {
			sm.overridden = append(sm.overridden, "max_tokens")
			sort.Strings(sm.overridden)
		}
		sm.differs, sm.pinned = pin.differs(up), true
	}
	up["return_token_ids"] = jsonTrue
	up["logprobs"] = jsonTrue
	body, err := marshalFields(up, compactMessages)
	if err != nil {
		return nil, sm, err
	}
	sm.effective = dialect.PickSampling(up)
	return body, sm, nil
}

// sampled is what the gateway did to one call's sampling.
type sampled struct {
	effective  json.RawMessage // the sampling fields sent upstream
	stripped   []string        // the agent's fields the pin stripped
	overridden []string        // the agent's fields the pin replaced
	differs    []string        // the fields sent otherwise than pinned
	pinned     bool            // a pin applied
}

// nonEmptyList reports whether raw is a JSON list with at least one item.
func nonEmptyList(raw json.RawMessage) bool {
	var items []json.RawMessage
	return json.Unmarshal(raw, &items) == nil && len(items) > 0
}

// marshalFields writes an object's fields as json.Marshal writes the map
// (keys sorted, values compacted and HTML-escaped), the "messages" value
// as compactMessages when not nil: the same bytes, without compacting the
// conversation again.
func marshalFields(up map[string]json.RawMessage, compactMessages json.RawMessage) ([]byte, error) {
	keys := slices.Sorted(maps.Keys(up))
	size := 2 + len(compactMessages)
	for _, k := range keys {
		size += len(k) + len(up[k]) + 4
	}
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		out = append(append(out, kb...), ':')
		v := up[k]
		switch {
		case k == "messages" && compactMessages != nil:
			out = append(out, compactMessages...)
		case v == nil:
			out = append(out, "null"...)
		default:
			vb, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", k, err)
			}
			out = append(out, vb...)
		}
	}
	return append(out, '}'), nil
}
