package acp

import (
	"encoding/json"
	"strings"

	"github.com/harnessd/harnessd/internal/clip"
	"github.com/harnessd/harnessd/wire"
)

// Permission option kinds, in order of preference for each decision. The
// adapter prefers the "once" kinds: the policy is asked again for every
// call, and a later call matching deny_patterns is not let through by an
// earlier "always".
var (
	allowKinds  = []string{"allow_once", "allow_always"}
	rejectKinds = []string{"reject_once", "reject_always"}
)

// serve answers a request of the agent. It runs on the goroutine reading
// the agent's output, so it must decide at once and never block.
func (a *Adapter) serve(method string, params json.RawMessage) (any, *RPCError) {
	if method == "session/request_permission" {
		return a.permission(params)
	}
	// fs/* and terminal/* are not advertised (clientCapabilities false), and
	// elicitation and the rest are not offered either.
	if strings.HasPrefix(method, "fs/") || strings.HasPrefix(method, "terminal/") {
		a.log.Warn("acp: agent called a client capability that was not advertised", "method", clip.String(method))
	} else {
		a.log.Debug("acp: agent called an unsupported method", "method", clip.String(method))
	}
	return nil, &RPCError{Code: CodeMethodNotFound, Message: "method not found: " + clip.String(method)}
}

type permissionParams struct {
	SessionID string `json:"sessionId"`
	ToolCall  struct {
		ToolCallID string  `json:"toolCallId"`
		Title      *string `json:"title"`
		Name       *string `json:"name"`
	} `json:"toolCall"`
	Options []struct {
		OptionID string `json:"optionId"`
		Name     string `json:"name"`
		Kind     string `json:"kind"`
	} `json:"options"`
}

// permission answers session/request_permission by the policy: "cancelled"
// once the turn was interrupted, else an allow option unless the policy or
// a deny pattern rejects the tool, in which case a reject option. Without
// an option of the wanted kind the answer is "cancelled". The decision is
// recorded for the turn's Extra["permissions"].
func (a *Adapter) permission(params json.RawMessage) (any, *RPCError) {
	var p permissionParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "session/request_permission: " + err.Error()}
	}
	// The request may carry only the id of a call announced before.
	var title, name string
	if tc := a.calls[p.ToolCall.ToolCallID]; tc != nil {
		title, name = tc.title, tc.name
	}
	if p.ToolCall.Title != nil {
		title = *p.ToolCall.Title
	}
	if p.ToolCall.Name != nil {
		name = *p.ToolCall.Name
	}
	rec := wire.Permission{CallID: p.ToolCall.ToolCallID, Title: title, ToolName: name}
	cancelled := map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}
	outcome := cancelled
	if a.cancelling.Load() {
		rec.Decision = "cancelled"
	} else {
		decision, kinds := "allowed", allowKinds
		if a.opts.denied(title, name) {
			decision, kinds = "denied", rejectKinds
		}
		if id := pickOption(&p, kinds); id != "" {
			rec.Decision, rec.OptionID = decision, id
			outcome = map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": id}}
		} else {
			a.log.Warn("acp: permission request without a suitable option; answering cancelled",
				"title", clip.String(title), "wanted", kinds)
			rec.Decision = "cancelled"
		}
	}
	a.log.Debug("acp: permission", "title", clip.String(title), "decision", rec.Decision)
	if a.cur != nil {
		a.cur.permissions = append(a.cur.permissions, rec)
	}
	return outcome, nil
}

// pickOption returns the id of the first option of the most preferred kind.
func pickOption(p *permissionParams, kinds []string) string {
	for _, k := range kinds {
		for _, o := range p.Options {
			if o.Kind == k && o.OptionID != "" {
				return o.OptionID
			}
		}
	}
	return ""
}
