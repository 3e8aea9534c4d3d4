package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// responsesDialect speaks OpenAI Responses: POST .../responses, including
// Codex's namespace tools (a function_call for a tool offered inside a
// namespace tool carries "namespace") and freeform custom tools.
var responsesDialect = &dialect{
	name:       OpenAIResponses,
	parse:      parseResponses,
	write:      writeResponses,
	writeError: openAIError,
}

type responsesTool struct {
	Type     string          `json:"type"`
	Name     string          `json:"name"`
	Tools    []responsesTool `json:"tools"`
	Function *struct {
		Name string `json:"name"`
	} `json:"function"`
}

type responsesRequest struct {
	Model        string          `json:"model"`
	Instructions json.RawMessage `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Tools        []responsesTool `json:"tools"`
	Stream       bool            `json:"stream"`
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
	Output  json.RawMessage `json:"output"`
}

// addResponsesTools flattens offered tools; namespace tools contribute
// their members with the namespace recorded.
func addResponsesTools(c *conversation, tools []responsesTool, namespace string) {
	for _, t := range tools {
		switch {
		case t.Type == "namespace":
			addResponsesTools(c, t.Tools, t.Name)
		case t.Name != "":
			c.tools = append(c.tools, tool{name: t.Name, namespace: namespace, custom: t.Type == "custom"})
		case t.Function != nil && t.Function.Name != "":
			c.tools = append(c.tools, tool{name: t.Function.Name, namespace: namespace})
		}
	}
}

func parseResponses(_ *http.Request, body []byte) (*conversation, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("responses request: %w", err)
	}
	c := &conversation{model: req.Model, stream: req.Stream}
	addResponsesTools(c, req.Tools, "")
	var system []string
	if t := flexText(req.Instructions); t != "" {
		system = append(system, t)
		c.messages = append(c.messages, message{role: roleSystem, text: t})
	}
	var items []responsesItem
	if err := json.Unmarshal(req.Input, &items); err != nil {
		var s string
		if len(req.Input) > 0 && json.Unmarshal(req.Input, &s) != nil {
			return nil, fmt.Errorf("responses input: want a string or an array of items: %w", err)
		}
		if s != "" {
			items = []responsesItem{{Type: "message", Role: "user", Content: req.Input}}
		}
	}
	for _, it := range items {
		switch {
		case it.Type == "message" || (it.Type == "" && it.Role != ""):
			texts := textParts(it.Content)
			switch it.Role {
			case "system", "developer":
				t := joinNonEmpty(texts)
				system = append(system, t)
				c.messages = append(c.messages, message{role: roleSystem, text: t})
			case "assistant":
				c.messages = append(c.messages, message{role: roleAssistant, text: joinNonEmpty(texts)})
			default:
				c.messages = append(c.messages, message{role: roleUser, text: userText(texts)})
			}
		case strings.HasSuffix(it.Type, "_output"): // function_call_output, custom_tool_call_output, ...
			c.messages = append(c.messages, message{role: roleTool, toolResults: []string{cleanToolResult(flexText(it.Output))}})
		case strings.HasSuffix(it.Type, "_call"): // function_call, custom_tool_call, ...
			c.messages = append(c.messages, message{role: roleAssistant, toolCalls: []string{it.Name}})
		}
	}
	c.system = joinNonEmpty(system)
	return c, nil
}

func writeResponses(w http.ResponseWriter, c *conversation, res *response) error {
	respID := fmt.Sprintf("resp_fake%06d", res.id)
	msgID := fmt.Sprintf("msg_fake%06d", res.id)
	withText := res.text != "" || len(res.calls) == 0
	usage := map[string]any{
		"input_tokens": res.inputTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": res.outputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": res.inputTokens + res.outputTokens,
	}
	textPart := func(text string) map[string]any {
		return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
	}
	msgItem := func(status string, content []any) map[string]any {
		return map[string]any{"id": msgID, "type": "message", "status": status, "role": "assistant", "content": content}
	}
	callItem := func(i int, tc toolCall, status, args string) map[string]any {
		item := map[string]any{"status": status, "call_id": fmt.Sprintf("call_fake%06d_%d", res.id, i), "name": tc.name}
		if tc.custom {
			item["id"], item["type"], item["input"] = fmt.Sprintf("ctc_fake%06d_%d", res.id, i), "custom_tool_call", args
		} else {
			item["id"], item["type"], item["arguments"] = fmt.Sprintf("fc_fake%06d_%d", res.id, i), "function_call", args
		}
		if tc.namespace != "" {
			item["namespace"] = tc.namespace
		}
		return item
	}
	var output []any
	if withText {
		output = append(output, msgItem("completed", []any{textPart(res.text)}))
	}
	for i, tc := range res.calls {
		output = append(output, callItem(i, tc, "completed", callPayload(tc)))
	}
	object := func(status string, output []any, usage any) map[string]any {
		return map[string]any{
			"id": respID, "object": "response", "created_at": res.created, "status": status, "model": c.model,
			"output": output, "usage": usage, "error": nil, "incomplete_details": nil,
			"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "store": false,
		}
	}

	if !c.stream {
		return writeJSON(w, http.StatusOK, object("completed", output, usage))
	}

	s := startSSE(w)
	seq := 0
	emit := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		s.event(typ, fields)
	}
	emit("response.created", map[string]any{"response": object("in_progress", []any{}, nil)})
	emit("response.in_progress", map[string]any{"response": object("in_progress", []any{}, nil)})
	index := 0
	if withText {
		emit("response.output_item.added", map[string]any{"output_index": index, "item": msgItem("in_progress", []any{})})
		emit("response.content_part.added", map[string]any{"item_id": msgID, "output_index": index, "content_index": 0,
			"part": textPart("")})
		for _, piece := range chunks(res.text, deltaSize) {
			emit("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": index, "content_index": 0,
				"delta": piece, "logprobs": []any{}})
		}
		emit("response.output_text.done", map[string]any{"item_id": msgID, "output_index": index, "content_index": 0,
			"text": res.text, "logprobs": []any{}})
		emit("response.content_part.done", map[string]any{"item_id": msgID, "output_index": index, "content_index": 0,
			"part": textPart(res.text)})
		emit("response.output_item.done", map[string]any{"output_index": index, "item": output[index]})
		index++
	}
	for i, tc := range res.calls {
		added := callItem(i, tc, "in_progress", "")
		itemID := added["id"]
		emit("response.output_item.added", map[string]any{"output_index": index, "item": added})
		payload := callPayload(tc)
		if tc.custom {
			for _, piece := range chunks(payload, deltaSize) {
				emit("response.custom_tool_call_input.delta", map[string]any{"item_id": itemID, "output_index": index, "delta": piece})
			}
			emit("response.custom_tool_call_input.done", map[string]any{"item_id": itemID, "output_index": index, "input": payload})
		} else {
			for _, piece := range chunks(payload, deltaSize) {
				emit("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": index, "delta": piece})
			}
			emit("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": index, "arguments": payload})
		}
		emit("response.output_item.done", map[string]any{"output_index": index, "item": output[index]})
		index++
	}
	emit("response.completed", map[string]any{"response": object("completed", output, usage)})
	return s.err
}

// callPayload is a call's arguments as sent: the JSON text for function
// calls; for custom (freeform) tools the string value of an "input"
// argument if that is the only one, else the JSON text.
func callPayload(tc toolCall) string {
	if tc.custom {
		var obj map[string]json.RawMessage
		if json.Unmarshal(tc.args, &obj) == nil && len(obj) == 1 {
			var s string
			if json.Unmarshal(obj["input"], &s) == nil {
				return s
			}
		}
	}
	return string(tc.args)
}
