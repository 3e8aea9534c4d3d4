package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// DialectResponses is OpenAI Responses (Codex).
const DialectResponses Dialect = "openai-responses"

// responsesDialect translates OpenAI Responses to the engine's chat
// completions and back. Function tools are translated, and so are the
// function tools inside a namespace tool (Codex offers MCP tools so),
// flattened to one name (namespaceToolName) and answered with their
// namespace again; built-in tools (web search, local shell, custom
// freeform tools) have no chat equivalent and are left out; reasoning items
// sent back are dropped (the engine's template decides what earlier
// reasoning it keeps).
var responsesDialect = &dialect{
	name:       DialectResponses,
	decode:     decodeResponses,
	encode:     encodeResponses,
	writeError: openAIError,
}

type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// namespacedTool is a function tool offered inside a namespace tool.
type namespacedTool struct{ namespace, name string }

// namespaceToolName is the one name the engine sees for tool name of
// namespace ns: ns+name when ns ends in "_" (Codex's "mcp__env__"), else
// ns+"__"+name.
func namespaceToolName(ns, name string) string {
	if strings.HasSuffix(ns, "_") {
		return ns + name
	}
	return ns + "__" + name
}

// responsesText joins the text parts of Responses content (a string or a
// list of input_text / output_text parts), and returns image parts as chat
// image_url parts.
func responsesText(raw json.RawMessage) (string, []any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, nil, err
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		ImageURL json.RawMessage `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, errors.New("content must be a string or a list of parts")
	}
	var texts []string
	var images []any
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			texts = append(texts, p.Text)
		case "input_image":
			var url string
			if json.Unmarshal(p.ImageURL, &url) == nil && url != "" {
				images = append(images, map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}})
			}
		}
	}
	return strings.Join(texts, ""), images, nil
}

func decodeResponses(_ *http.Request, body []byte) (*agentRequest, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, errors.New("responses request: not a JSON object")
	}
	var in struct {
		Model        string          `json:"model"`
		Instructions string          `json:"instructions"`
		Input        json.RawMessage `json:"input"`
		Stream       bool            `json:"stream"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("responses request: %w", err)
	}
	var items []responsesItem
	in.Input = bytes.TrimSpace(in.Input)
	switch {
	case len(in.Input) > 0 && in.Input[0] == '"':
		items = []responsesItem{{Type: "message", Role: "user", Content: in.Input}}
	case json.Unmarshal(in.Input, &items) != nil || len(items) == 0:
		return nil, errors.New("responses request: input must be a string or a non-empty list of items")
	}
	var out []map[string]any
	if in.Instructions != "" {
		out = append(out, map[string]any{"role": "system", "content": in.Instructions})
	}
	for i, it := range items {
		if it.Type == "" && it.Role != "" {
			it.Type = "message"
		}
		switch it.Type {
		case "message":
			text, images, err := responsesText(it.Content)
			if err != nil {
				return nil, fmt.Errorf("responses request: item %d: %w", i, err)
			}
			role := it.Role
			switch role {
			case "developer":
				role = "system"
			case "user", "system", "assistant":
			default:
				return nil, fmt.Errorf("responses request: item %d has role %q", i, it.Role)
			}
			var content any = text
			if len(images) > 0 {
				content = append([]any{map[string]any{"type": "text", "text": text}}, images...)
			}
			out = append(out, map[string]any{"role": role, "content": content})
		case "function_call":
			if it.Name == "" {
				return nil, fmt.Errorf("responses request: item %d: function_call without a name", i)
			}
			if it.Namespace != "" {
				it.Name = namespaceToolName(it.Namespace, it.Name)
			}
			args := it.Arguments
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			tc := map[string]any{"id": it.CallID, "type": "function", "function": map[string]any{"name": it.Name, "arguments": args}}
			if n := len(out); n > 0 && out[n-1]["role"] == "assistant" {
				calls, _ := out[n-1]["tool_calls"].([]any)
				out[n-1]["tool_calls"] = append(calls, tc)
				if out[n-1]["content"] == "" {
					out[n-1]["content"] = nil
				}
			} else {
				out = append(out, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{tc}})
			}
		case "function_call_output":
			text := ""
			if o := bytes.TrimSpace(it.Output); len(o) > 0 {
				var err error
				if text, _, err = responsesText(o); err != nil {
					return nil, fmt.Errorf("responses request: item %d: output: %w", i, err)
				}
			}
			out = append(out, map[string]any{"role": "tool", "tool_call_id": it.CallID, "content": text})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("responses request: no messages")
	}
	chat := map[string]json.RawMessage{}
	put := func(k string, v any) {
		if b, err := json.Marshal(v); err == nil {
			chat[k] = b
		}
	}
	put("model", in.Model)
	put("messages", out)
	namespaced := map[string]namespacedTool{}
	tools, err := responsesTools(fields["tools"], namespaced)
	if err != nil {
		return nil, err
	}
	if len(tools) > 0 {
		put("tools", tools)
		if tc := responsesToolChoice(fields["tool_choice"]); tc != nil {
			put("tool_choice", tc)
		}
		if v, ok := fields["parallel_tool_calls"]; ok {
			chat["parallel_tool_calls"] = v
		}
	}
	for from, to := range map[string]string{"max_output_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p"} {
		if v, ok := fields[from]; ok && string(v) != "null" {
			chat[to] = v
		}
	}
	return &agentRequest{model: in.Model, stream: in.Stream, messages: in.Input, tools: fields["tools"],
		sampling: pickSampling(fields), chat: chat, namespaced: namespaced}, nil
}

// responsesTool is an offered tool: a function, or a namespace of them.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Tools       []responsesTool `json:"tools"`
}

// responsesTools translates the offered function tools, those inside
// namespace tools flattened (recorded in namespaced by their flat name).
func responsesTools(raw json.RawMessage, namespaced map[string]namespacedTool) ([]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var tools []responsesTool
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, errors.New("responses request: tools must be a list of tools")
	}
	var flat []responsesTool
	for _, t := range tools {
		if t.Type != "namespace" || t.Name == "" {
			flat = append(flat, t)
			continue
		}
		for _, inner := range t.Tools {
			if inner.Type != "function" || inner.Name == "" {
				continue
			}
			name := namespaceToolName(t.Name, inner.Name)
			namespaced[name] = namespacedTool{namespace: t.Name, name: inner.Name}
			inner.Name = name
			flat = append(flat, inner)
		}
	}
	var out []any
	for _, t := range flat {
		if t.Type != "function" || t.Name == "" {
			continue
		}
		fn := map[string]any{"name": t.Name}
		if t.Description != "" {
			fn["description"] = t.Description
		}
		if len(t.Parameters) > 0 && string(t.Parameters) != "null" {
			fn["parameters"] = t.Parameters
		}
		out = append(out, map[string]any{"type": "function", "function": fn})
	}
	return out, nil
}

func responsesToolChoice(raw json.RawMessage) any {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return s
		}
		return nil
	}
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &c) == nil && c.Type == "function" && c.Name != "" {
		return map[string]any{"type": "function", "function": map[string]any{"name": c.Name}}
	}
	return nil
}

// responsesOutput is the output items of an answer; a call of a tool
// offered inside a namespace carries its namespace and its own name.
func responsesOutput(id string, req *agentRequest, c *completion) []map[string]any {
	var out []map[string]any
	if c.Reasoning != "" {
		out = append(out, map[string]any{"type": "reasoning", "id": "rs_" + id, "status": "completed",
			"summary": []any{map[string]any{"type": "summary_text", "text": c.Reasoning}}})
	}
	if c.Text != "" || len(c.ToolCalls) == 0 {
		out = append(out, map[string]any{"type": "message", "id": "msg_" + id, "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": c.Text, "annotations": []any{}}}})
	}
	for i, tc := range c.ToolCalls {
		item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", id, i), "status": "completed",
			"call_id": tc.ID, "name": tc.Name, "arguments": tc.Arguments}
		if nt, ok := req.namespaced[tc.Name]; ok {
			item["name"], item["namespace"] = nt.name, nt.namespace
		}
		out = append(out, item)
	}
	return out
}

func encodeResponses(w http.ResponseWriter, req *agentRequest, c *completion) error {
	id := strings.TrimPrefix(c.ID, "chatcmpl-")
	if id == "" {
		id = "harnessd"
	}
	created := c.Created
	if created == 0 {
		created = time.Now().Unix()
	}
	output := responsesOutput(id, req, c)
	resp := func(status string, output []map[string]any) map[string]any {
		r := map[string]any{"id": "resp_" + id, "object": "response", "created_at": created, "status": status,
			"model": chatModel(req, c), "output": output, "error": nil, "incomplete_details": nil,
			"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}}
		if status != "in_progress" {
			r["usage"] = map[string]any{"input_tokens": c.Usage.PromptTokens, "output_tokens": c.Usage.CompletionTokens,
				"total_tokens": c.Usage.TotalTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens_details": map[string]any{"reasoning_tokens": 0}}
		}
		if status == "incomplete" {
			r["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
		}
		return r
	}
	final := "completed"
	if c.FinishReason == "length" {
		final = "incomplete"
	}
	if !req.stream {
		return writeJSON(w, http.StatusOK, resp(final, output))
	}
	s := startSSE(w)
	seq := 0
	send := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		s.event(typ, fields)
	}
	send("response.created", map[string]any{"response": resp("in_progress", []map[string]any{})})
	send("response.in_progress", map[string]any{"response": resp("in_progress", []map[string]any{})})
	for i, item := range output {
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["status"] = "in_progress"
		itemID := item["id"]
		switch item["type"] {
		case "message":
			added["content"] = []any{}
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			send("response.content_part.added", map[string]any{"item_id": itemID, "output_index": i, "content_index": 0, "part": part})
			for _, p := range pieces(c.Text) {
				send("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": i, "content_index": 0, "delta": p})
			}
			send("response.output_text.done", map[string]any{"item_id": itemID, "output_index": i, "content_index": 0, "text": c.Text})
			send("response.content_part.done", map[string]any{"item_id": itemID, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": c.Text, "annotations": []any{}}})
		case "function_call":
			args, _ := item["arguments"].(string)
			added["arguments"] = ""
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			for _, p := range pieces(args) {
				send("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": i, "delta": p})
			}
			send("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": i, "arguments": args})
		case "reasoning":
			added["summary"] = []any{}
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			part := map[string]any{"type": "summary_text", "text": ""}
			send("response.reasoning_summary_part.added", map[string]any{"item_id": itemID, "output_index": i, "summary_index": 0, "part": part})
			for _, p := range pieces(c.Reasoning) {
				send("response.reasoning_summary_text.delta", map[string]any{"item_id": itemID, "output_index": i, "summary_index": 0, "delta": p})
			}
			send("response.reasoning_summary_text.done", map[string]any{"item_id": itemID, "output_index": i, "summary_index": 0, "text": c.Reasoning})
			send("response.reasoning_summary_part.done", map[string]any{"item_id": itemID, "output_index": i, "summary_index": 0,
				"part": map[string]any{"type": "summary_text", "text": c.Reasoning}})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	send("response."+final, map[string]any{"response": resp(final, output)})
	return s.err
}
