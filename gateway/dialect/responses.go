package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/harnessd/harnessd/internal/jsonlist"
	"github.com/harnessd/harnessd/internal/jsonscan"
)

// responsesTranslator is OpenAI Responses (Codex), translated to the
// middle format and back. Function tools are translated, and so are the
// function tools inside a namespace tool (Codex offers MCP tools so),
// flattened to one name (namespaceToolName) and answered with their
// namespace again; built-in tools (web search, local shell, custom
// freeform tools) have no chat equivalent and are left out; reasoning
// items sent back are dropped (the engine's template decides what earlier
// reasoning it keeps).
type responsesTranslator struct {
	model  string
	stream bool
	// namespaced maps the flat names of tools offered inside a namespace
	// tool to their namespace and own name, for the answer's calls.
	namespaced map[string]namespacedTool
}

func (*responsesTranslator) Name() Name { return Responses }

func (*responsesTranslator) WriteError(w http.ResponseWriter, f Failure) { writeOpenAIError(w, f) }

type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`

	index int // its place in the input
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
// list of input_text / output_text parts), and returns its image parts.
func responsesText(raw json.RawMessage) (string, []Part, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, nil, err
	}
	var texts []string
	var images []Part
	var p responsesPart
	if !jsonscan.Elements(raw, func(e []byte) bool {
		if string(e) == "null" || jsonlist.NoField(e, "type", "text", "image_url") {
			return true // the zero part, of no type read
		}
		p = responsesPart{}
		if json.Unmarshal(e, &p) != nil {
			return false
		}
		switch p.Type {
		case "input_text", "output_text", "text":
			texts = append(texts, p.Text)
		case "input_image":
			var url string
			if json.Unmarshal(p.ImageURL, &url) == nil && url != "" {
				images = append(images, Part{Type: "image_url", ImageURL: url})
			}
		}
		return true
	}) {
		return "", nil, errors.New("content must be a string or a list of parts")
	}
	return strings.Join(texts, ""), images, nil
}

// responsesPart is what is read of a content part. The parts are read one
// at a time: decoded whole into a slice first, 6,000 empty parts ({},, 18
// KB) cost 1.5 MiB (85× the body).
type responsesPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
}

// responsesItems reads the input's items, all of them decoded before any
// is translated (so that a list that does not decode is refused first, as
// a decode of the whole list was), but one at a time, and an item none of
// whose keys names a field (the zero item, which translates to nothing)
// neither decoded nor kept: decoded whole, 6,000 empty items ({},, 18 KB)
// cost 3.3 MiB (189× the body) to be refused for having no message. ok is
// false for anything but a non-empty list of items.
func responsesItems(raw json.RawMessage) (items []responsesItem, ok bool) {
	n := 0
	ok = jsonscan.Elements(raw, func(e []byte) bool {
		i := n
		n++
		if string(e) == "null" || jsonlist.NoField(e, "type", "role", "content", "call_id", "name", "namespace", "arguments", "output") {
			return true
		}
		var it responsesItem
		if json.Unmarshal(e, &it) != nil {
			return false
		}
		it.index = i
		items = append(items, it)
		return true
	})
	return items, ok && n > 0
}

// responsesParams maps the Responses fields passed on to their Chat
// Completions names.
var responsesParams = map[string]string{"max_output_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p"}

// responsesFormat translates text.format, Responses' structured output
// (guided decoding), to Chat Completions' response_format; nil for plain
// text or none.
func responsesFormat(text json.RawMessage) json.RawMessage {
	var t struct {
		Format struct {
			Type   string          `json:"type"`
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"format"`
	}
	if json.Unmarshal(text, &t) != nil {
		return nil
	}
	var out any
	switch f := t.Format; f.Type {
	case "json_object":
		out = map[string]any{"type": "json_object"}
	case "json_schema":
		js := map[string]any{"name": f.Name, "schema": f.Schema}
		if f.Strict != nil {
			js["strict"] = *f.Strict
		}
		out = map[string]any{"type": "json_schema", "json_schema": js}
	default:
		return nil
	}
	b, _ := json.Marshal(out)
	return b
}

func (t *responsesTranslator) Decode(_ *http.Request, body []byte) (*Request, error) {
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
	default:
		var ok bool
		if items, ok = responsesItems(in.Input); !ok {
			return nil, errors.New("responses request: input must be a string or a non-empty list of items")
		}
	}
	var out []Message
	if in.Instructions != "" {
		out = append(out, Message{Role: "system", Content: Text(in.Instructions)})
	}
	for _, it := range items {
		var err error
		if out, err = responsesItemMessages(out, it.index, it); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, errors.New("responses request: no messages")
	}
	chat := ChatRequest{Model: in.Model, Messages: out, Params: map[string]json.RawMessage{}}
	t.namespaced = map[string]namespacedTool{}
	tools, err := responsesTools(fields["tools"], t.namespaced)
	if err != nil {
		return nil, err
	}
	if len(tools) > 0 {
		chat.Tools = tools
		chat.ToolChoice = responsesToolChoice(fields["tool_choice"])
		chat.ParallelToolCalls = fields["parallel_tool_calls"]
	}
	for from, to := range responsesParams {
		if v, ok := fields[from]; ok && string(v) != "null" {
			chat.Params[to] = v
		}
	}
	if rf := responsesFormat(fields["text"]); rf != nil {
		chat.Params["response_format"] = rf
	}
	t.model, t.stream = in.Model, in.Stream
	sampling := PickSampling(fields)
	if rf := chat.Params["response_format"]; rf != nil {
		sampling = withField(sampling, "text", fields["text"])
	}
	return &Request{Chat: chat, Model: in.Model, Stream: in.Stream, Messages: in.Input, Tools: fields["tools"],
		Sampling: sampling}, nil
}

// responsesItemMessages appends input item i's translation to out: a
// message, a function call (joined to the assistant message before it) or
// a function call's output.
func responsesItemMessages(out []Message, i int, it responsesItem) ([]Message, error) {
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
		msg := Message{Role: role, Content: Text(text)}
		if len(images) > 0 {
			msg.Parts = append([]Part{{Type: "text", Text: text}}, images...)
		}
		return append(out, msg), nil
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
		tc := ToolCall{ID: it.CallID, Name: it.Name, Arguments: args}
		if n := len(out); n > 0 && out[n-1].Role == "assistant" {
			last := &out[n-1]
			last.ToolCalls = append(last.ToolCalls, tc)
			if last.Parts == nil && last.Content != nil && *last.Content == "" {
				last.Content = nil
			}
			return out, nil
		}
		return append(out, Message{Role: "assistant", ToolCalls: []ToolCall{tc}}), nil
	case "function_call_output":
		text := ""
		if o := bytes.TrimSpace(it.Output); len(o) > 0 {
			var err error
			if text, _, err = responsesText(o); err != nil {
				return nil, fmt.Errorf("responses request: item %d: output: %w", i, err)
			}
		}
		return append(out, Message{Role: "tool", ToolCallID: it.CallID, Content: Text(text)}), nil
	}
	return out, nil
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
func responsesTools(raw json.RawMessage, namespaced map[string]namespacedTool) ([]Tool, error) {
	if !set(raw) {
		return nil, nil
	}
	var out []Tool
	var t responsesTool
	if !jsonscan.Elements(raw, func(e []byte) bool {
		if string(e) == "null" || jsonlist.NoField(e, "type", "name", "description", "parameters", "tools") {
			return true // the zero tool, not a function
		}
		t = responsesTool{}
		if json.Unmarshal(e, &t) != nil {
			return false
		}
		if t.Type != "namespace" || t.Name == "" {
			out = appendFunction(out, t)
			return true
		}
		for _, inner := range t.Tools {
			if inner.Type != "function" || inner.Name == "" {
				continue
			}
			name := namespaceToolName(t.Name, inner.Name)
			namespaced[name] = namespacedTool{namespace: t.Name, name: inner.Name}
			inner.Name = name
			out = appendFunction(out, inner)
		}
		return true
	}) {
		return nil, errors.New("responses request: tools must be a list of tools")
	}
	return out, nil
}

// appendFunction appends t to out when it is a named function tool. The
// tools are read one at a time: decoded whole into a slice of responsesTool
// and then copied, 6,000 empty tools ({},, 18 KB) cost 4.6 MiB (268× the
// body).
func appendFunction(out []Tool, t responsesTool) []Tool {
	if t.Type != "function" || t.Name == "" {
		return out
	}
	tool := Tool{Name: t.Name, Description: t.Description}
	if set(t.Parameters) {
		tool.Parameters = t.Parameters
	}
	return append(out, tool)
}

func responsesToolChoice(raw json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			b, _ := json.Marshal(s)
			return b
		}
		return nil
	}
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &c) == nil && c.Type == "function" && c.Name != "" {
		return functionChoice(c.Name)
	}
	return nil
}

// output is the output items of an answer; a call of a tool offered
// inside a namespace carries its namespace and its own name.
func (t *responsesTranslator) output(id string, c *Completion) []map[string]any {
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
		if nt, ok := t.namespaced[tc.Name]; ok {
			item["name"], item["namespace"] = nt.name, nt.namespace
		}
		out = append(out, item)
	}
	return out
}

func (t *responsesTranslator) Encode(w http.ResponseWriter, c *Completion) error {
	id := strings.TrimPrefix(c.ID, "chatcmpl-")
	if id == "" {
		id = "harnessd"
	}
	created := c.Created
	if created == 0 {
		created = time.Now().Unix()
	}
	output := t.output(id, c)
	resp := func(status string, output []map[string]any) map[string]any {
		r := map[string]any{"id": "resp_" + id, "object": "response", "created_at": created, "status": status,
			"model": model(t.model, c), "output": output, "error": nil, "incomplete_details": nil,
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
	if !t.stream {
		return WriteJSON(w, http.StatusOK, resp(final, output))
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
