package fakellm_test

// A small client for every dialect, written the way real clients read the
// wire: SSE framing, deltas accumulated per index, stop reasons, usage.
// Framing mistakes fail the test.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

// startServer runs a fakellm server on 127.0.0.1 for the test, with a
// private HTTP client; both are closed at cleanup.
func startServer(t *testing.T, sc *fakellm.Script) (*fakellm.Server, string, *http.Client) {
	t.Helper()
	s := fakellm.New(fakellm.Options{Script: sc, Logf: t.Logf})
	base, err := s.Start("")
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		tr.CloseIdleConnections()
	})
	return s, base, &http.Client{Transport: tr}
}

func mustScript(t *testing.T, js string) *fakellm.Script {
	t.Helper()
	sc, err := fakellm.ParseScript([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// sseEvent is one Server-Sent Event.
type sseEvent struct{ Event, Data string }

// parseSSE reads a whole event stream per the SSE rules (event:, data:
// lines, comments, blank-line dispatch).
func parseSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	var evs []sseEvent
	var cur sseEvent
	var data []string
	pending := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(data) > 0 {
				cur.Data = strings.Join(data, "\n")
				evs = append(evs, cur)
			}
			cur, data, pending = sseEvent{}, nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			cur.Event = value
		case "data":
			data = append(data, value)
		default:
			t.Errorf("unexpected SSE field %q", line)
		}
		pending = true
	}
	if err := sc.Err(); err != nil {
		t.Errorf("read SSE: %v", err)
	}
	if pending {
		t.Errorf("SSE stream ended inside an event (no blank line after %q)", cur.Event)
	}
	return evs
}

// call is a tool call as a client sees it.
type call struct {
	ID, Name, Namespace, Args string
	Custom                    bool
}

// turn is a model answer as a client sees it.
type turn struct {
	Text          string
	Calls         []call
	Stop          string
	Input, Output int
}

// tspec is an offered tool; Namespace only means something in Responses.
type tspec struct{ Name, Namespace string }

// conv describes a request: offered tools, system prompt, user messages and
// optionally a previous tool call with its result (the second step of a
// tool loop).
type conv struct {
	Model  string
	System string
	Tools  []tspec
	Users  []string // user text messages; the last one is the latest
	Call   *call    // previous assistant tool call, after the last user message
	Result string   // its result
	Stream bool
}

// dialectClient knows one dialect's request shape and how to read replies.
type dialectClient struct {
	name     fakellm.Dialect
	url      func(base string, c conv) string
	body     func(c conv) any
	read     func(t *testing.T, resp *http.Response, c conv) turn
	toolStop string // stop reason for tool calls
	textStop string
}

var clients = []dialectClient{anthropicClient, chatClient, responsesClient, geminiClient}

func clientFor(d fakellm.Dialect) dialectClient {
	for _, c := range clients {
		if c.name == d {
			return c
		}
	}
	panic("no client for " + d)
}

// do sends c and reads the answer; a non-200 status fails the test.
func (dc dialectClient) do(t *testing.T, hc *http.Client, base string, c conv) turn {
	t.Helper()
	resp := dc.post(t, hc, base, c)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: status %d: %s", dc.name, resp.StatusCode, b)
	}
	return dc.read(t, resp, c)
}

func (dc dialectClient) post(t *testing.T, hc *http.Client, base string, c conv) *http.Response {
	t.Helper()
	resp, err := postJSON(t.Context(), hc, dc.url(base, c), dc.body(c))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func postJSON(ctx context.Context, hc *http.Client, url string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer test-key")
	return hc.Do(req)
}

func decode[T any](t *testing.T, data string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	return v
}

func wantSSE(t *testing.T, resp *http.Response) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
}

func wantJSON(t *testing.T, resp *http.Response) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
}

func argsObject(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return map[string]any{}
	}
	return v
}

func schema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
}

// ---- Anthropic Messages ----

var anthropicClient = dialectClient{
	name:     fakellm.Anthropic,
	toolStop: "tool_use", textStop: "end_turn",
	url: func(base string, c conv) string { return base + "/v1/messages?beta=true" },
	body: func(c conv) any {
		var msgs []any
		for _, u := range c.Users {
			msgs = append(msgs, map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "<system-reminder>\nctx\n</system-reminder>"},
				map[string]any{"type": "text", "text": u, "cache_control": map[string]any{"type": "ephemeral"}},
			}})
			if len(msgs) < 2*len(c.Users)-1 {
				msgs = append(msgs, map[string]any{"role": "assistant", "content": "ok"})
			}
		}
		if c.Call != nil {
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": []any{
					map[string]any{"type": "thinking", "thinking": "hmm", "signature": "x"},
					map[string]any{"type": "tool_use", "id": c.Call.ID, "name": c.Call.Name, "input": argsObject(c.Call.Args)}}},
				map[string]any{"role": "user", "content": []any{
					map[string]any{"type": "tool_result", "tool_use_id": c.Call.ID, "content": []any{map[string]any{"type": "text", "text": c.Result}}},
					map[string]any{"type": "text", "text": "<system-reminder>after tool</system-reminder>"}}})
		}
		var tools []any
		for _, tl := range c.Tools {
			tools = append(tools, map[string]any{"name": tl.Name, "description": "d", "input_schema": schema()})
		}
		return map[string]any{
			"model": c.Model, "max_tokens": 32000, "stream": c.Stream, "messages": msgs, "tools": tools,
			"system":             []any{map[string]any{"type": "text", "text": c.System}},
			"thinking":           map[string]any{"type": "enabled", "budget_tokens": 1024},
			"context_management": map[string]any{"edits": []any{}}, "output_config": map[string]any{"effort": "low"},
			"metadata": map[string]any{"user_id": "u"},
		}
	},
	read: func(t *testing.T, resp *http.Response, c conv) turn {
		t.Helper()
		type block struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		type usage struct {
			In  int `json:"input_tokens"`
			Out int `json:"output_tokens"`
		}
		var out turn
		if !c.Stream {
			wantJSON(t, resp)
			m := decode[struct {
				ID         string  `json:"id"`
				Type       string  `json:"type"`
				Role       string  `json:"role"`
				Content    []block `json:"content"`
				StopReason string  `json:"stop_reason"`
				Usage      usage   `json:"usage"`
			}](t, mustRead(t, resp.Body))
			if m.Type != "message" || m.ID == "" {
				t.Errorf("message type %q id %q", m.Type, m.ID)
			}
			for _, b := range m.Content {
				switch b.Type {
				case "text":
					out.Text += b.Text
				case "tool_use":
					out.Calls = append(out.Calls, call{ID: b.ID, Name: b.Name, Args: compact(t, b.Input)})
				}
			}
			out.Stop, out.Input, out.Output = m.StopReason, m.Usage.In, m.Usage.Out
			return out
		}
		wantSSE(t, resp)
		evs := parseSSE(t, resp.Body)
		type acc struct {
			b       block
			partial strings.Builder
			open    bool
		}
		blocks := map[int]*acc{}
		var order []int
		for i, ev := range evs {
			head := decode[struct {
				Type  string `json:"type"`
				Index int    `json:"index"`
			}](t, ev.Data)
			if ev.Event != head.Type {
				t.Errorf("event %d: event: %q but data type %q", i, ev.Event, head.Type)
			}
			switch {
			case i == 0 && head.Type != "message_start":
				t.Fatalf("first event %q, want message_start", head.Type)
			case i == len(evs)-1 && head.Type != "message_stop":
				t.Fatalf("last event %q, want message_stop", head.Type)
			}
			switch head.Type {
			case "message_start":
				m := decode[struct {
					Message struct {
						Usage usage `json:"usage"`
					} `json:"message"`
				}](t, ev.Data)
				out.Input = m.Message.Usage.In
			case "content_block_start":
				cb := decode[struct {
					ContentBlock block `json:"content_block"`
				}](t, ev.Data)
				if _, dup := blocks[head.Index]; dup || head.Index != len(order) {
					t.Errorf("content_block_start index %d out of order", head.Index)
				}
				blocks[head.Index] = &acc{b: cb.ContentBlock, open: true}
				order = append(order, head.Index)
			case "content_block_delta":
				a := blocks[head.Index]
				if a == nil || !a.open {
					t.Fatalf("delta for block %d that is not open", head.Index)
				}
				d := decode[struct {
					Delta struct {
						Type        string `json:"type"`
						Text        string `json:"text"`
						PartialJSON string `json:"partial_json"`
					} `json:"delta"`
				}](t, ev.Data).Delta
				switch {
				case d.Type == "text_delta" && a.b.Type == "text":
					a.b.Text += d.Text
				case d.Type == "input_json_delta" && a.b.Type == "tool_use":
					a.partial.WriteString(d.PartialJSON)
				default:
					t.Errorf("delta %q in a %q block", d.Type, a.b.Type)
				}
			case "content_block_stop":
				a := blocks[head.Index]
				if a == nil || !a.open {
					t.Fatalf("stop for block %d that is not open", head.Index)
				}
				a.open = false
			case "message_delta":
				md := decode[struct {
					Delta struct {
						StopReason string `json:"stop_reason"`
					} `json:"delta"`
					Usage usage `json:"usage"`
				}](t, ev.Data)
				out.Stop, out.Output = md.Delta.StopReason, md.Usage.Out
			case "message_stop", "ping":
			default:
				t.Errorf("unexpected event %q", head.Type)
			}
		}
		for _, i := range order {
			a := blocks[i]
			if a.open {
				t.Errorf("block %d never stopped", i)
			}
			switch a.b.Type {
			case "text":
				out.Text += a.b.Text
			case "tool_use":
				args := a.partial.String()
				if !json.Valid([]byte(args)) {
					t.Errorf("tool_use input %q is not JSON", args)
				}
				out.Calls = append(out.Calls, call{ID: a.b.ID, Name: a.b.Name, Args: compact(t, json.RawMessage(args))})
			}
		}
		return out
	},
}

// ---- OpenAI Chat Completions ----

var chatClient = dialectClient{
	name:     fakellm.OpenAIChat,
	toolStop: "tool_calls", textStop: "stop",
	url: func(base string, c conv) string { return base + "/v1/chat/completions" },
	body: func(c conv) any {
		msgs := []any{map[string]any{"role": "developer", "content": c.System}}
		for i, u := range c.Users {
			msgs = append(msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": u}}})
			if i < len(c.Users)-1 {
				msgs = append(msgs, map[string]any{"role": "assistant", "content": "ok"})
			}
		}
		if c.Call != nil {
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
					"id": c.Call.ID, "type": "function", "function": map[string]any{"name": c.Call.Name, "arguments": c.Call.Args}}}},
				map[string]any{"role": "tool", "tool_call_id": c.Call.ID, "content": c.Result})
		}
		var tools []any
		for _, tl := range c.Tools {
			tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": tl.Name, "description": "d", "parameters": schema()}})
		}
		body := map[string]any{"model": c.Model, "messages": msgs, "tools": tools, "stream": c.Stream,
			"max_completion_tokens": 1000, "store": false, "temperature": 0, "top_p": 1}
		if c.Stream {
			body["stream_options"] = map[string]any{"include_usage": true}
		}
		return body
	},
	read: func(t *testing.T, resp *http.Response, c conv) turn {
		t.Helper()
		type fn struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}
		type tc struct {
			Index    int    `json:"index"`
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function fn     `json:"function"`
		}
		type usage struct {
			In  int `json:"prompt_tokens"`
			Out int `json:"completion_tokens"`
		}
		var out turn
		if !c.Stream {
			wantJSON(t, resp)
			m := decode[struct {
				Object  string `json:"object"`
				Choices []struct {
					Message struct {
						Role      string  `json:"role"`
						Content   *string `json:"content"`
						ToolCalls []tc    `json:"tool_calls"`
					} `json:"message"`
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
				Usage usage `json:"usage"`
			}](t, mustRead(t, resp.Body))
			if m.Object != "chat.completion" || len(m.Choices) != 1 {
				t.Fatalf("object %q with %d choices", m.Object, len(m.Choices))
			}
			ch := m.Choices[0]
			if ch.Message.Content != nil {
				out.Text = *ch.Message.Content
			}
			for _, x := range ch.Message.ToolCalls {
				out.Calls = append(out.Calls, call{ID: x.ID, Name: x.Function.Name, Args: compact(t, json.RawMessage(x.Function.Arguments))})
			}
			out.Stop, out.Input, out.Output = ch.FinishReason, m.Usage.In, m.Usage.Out
			return out
		}
		wantSSE(t, resp)
		evs := parseSSE(t, resp.Body)
		if len(evs) == 0 || evs[len(evs)-1].Data != "[DONE]" {
			t.Fatalf("stream does not end with [DONE]")
		}
		var calls []*tc
		sawUsage := false
		for _, ev := range evs[:len(evs)-1] {
			if ev.Event != "" {
				t.Errorf("chat chunks carry no event: line, got %q", ev.Event)
			}
			ch := decode[struct {
				Object  string `json:"object"`
				Choices []struct {
					Index int `json:"index"`
					Delta struct {
						Content   *string `json:"content"`
						ToolCalls []tc    `json:"tool_calls"`
					} `json:"delta"`
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
				Usage *usage `json:"usage"`
			}](t, ev.Data)
			if ch.Object != "chat.completion.chunk" {
				t.Errorf("chunk object %q", ch.Object)
			}
			if sawUsage {
				t.Errorf("chunk after the usage chunk")
			}
			if ch.Usage != nil {
				sawUsage = true
				out.Input, out.Output = ch.Usage.In, ch.Usage.Out
				if len(ch.Choices) != 0 {
					t.Errorf("usage chunk has choices")
				}
			}
			for _, choice := range ch.Choices {
				if out.Stop != "" {
					t.Errorf("delta after finish_reason")
				}
				if choice.Delta.Content != nil {
					out.Text += *choice.Delta.Content
				}
				for _, d := range choice.Delta.ToolCalls {
					switch {
					case d.Index == len(calls):
						if d.ID == "" || d.Function.Name == "" {
							t.Errorf("first delta of tool call %d lacks id or name", d.Index)
						}
						x := d
						calls = append(calls, &x)
					case d.Index < len(calls):
						calls[d.Index].Function.Arguments += d.Function.Arguments
					default:
						t.Fatalf("tool call index %d skips ahead", d.Index)
					}
				}
				if choice.FinishReason != nil {
					out.Stop = *choice.FinishReason
				}
			}
		}
		if !sawUsage {
			t.Errorf("no usage chunk although stream_options.include_usage")
		}
		for _, x := range calls {
			out.Calls = append(out.Calls, call{ID: x.ID, Name: x.Function.Name, Args: compact(t, json.RawMessage(x.Function.Arguments))})
		}
		return out
	},
}

// ---- OpenAI Responses ----

type respItem struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Role      string `json:"role"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Arguments string `json:"arguments"`
	Input     string `json:"input"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

type respObject struct {
	ID     string     `json:"id"`
	Object string     `json:"object"`
	Status string     `json:"status"`
	Output []respItem `json:"output"`
	Usage  *struct {
		In  int `json:"input_tokens"`
		Out int `json:"output_tokens"`
	} `json:"usage"`
}

func (o respObject) turn(t *testing.T) turn {
	var out turn
	for _, it := range o.Output {
		switch it.Type {
		case "message":
			for _, p := range it.Content {
				out.Text += p.Text
			}
		case "function_call":
			out.Calls = append(out.Calls, call{ID: it.CallID, Name: it.Name, Namespace: it.Namespace, Args: compact(t, json.RawMessage(it.Arguments))})
		case "custom_tool_call":
			out.Calls = append(out.Calls, call{ID: it.CallID, Name: it.Name, Namespace: it.Namespace, Args: it.Input, Custom: true})
		}
	}
	if o.Usage != nil {
		out.Input, out.Output = o.Usage.In, o.Usage.Out
	}
	out.Stop = o.Status
	if len(out.Calls) > 0 {
		out.Stop = "completed+calls"
	}
	return out
}

var responsesClient = dialectClient{
	name:     fakellm.OpenAIResponses,
	toolStop: "completed+calls", textStop: "completed",
	url: func(base string, c conv) string { return base + "/v1/responses" },
	body: func(c conv) any {
		input := []any{map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "dev notes"}}},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "<environment_context>\n<cwd>/w</cwd>\n</environment_context>"}}}}
		for i, u := range c.Users {
			input = append(input, map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": u}}})
			if i < len(c.Users)-1 {
				input = append(input, map[string]any{"role": "assistant", "content": "ok"})
			}
		}
		if c.Call != nil {
			fc := map[string]any{"type": "function_call", "call_id": c.Call.ID, "name": c.Call.Name, "arguments": c.Call.Args}
			if c.Call.Namespace != "" {
				fc["namespace"] = c.Call.Namespace
			}
			input = append(input, map[string]any{"type": "reasoning", "summary": []any{}, "encrypted_content": "x"}, fc,
				map[string]any{"type": "function_call_output", "call_id": c.Call.ID, "output": []any{
					map[string]any{"type": "input_text", "text": "Wall time: 0.0012 seconds\nOutput:"},
					map[string]any{"type": "input_text", "text": c.Result}}})
		}
		var tools []any
		namespaces := map[string][]any{}
		var nsOrder []string
		for _, tl := range c.Tools {
			f := map[string]any{"type": "function", "name": tl.Name, "description": "d", "strict": false, "parameters": schema()}
			if tl.Namespace == "" {
				tools = append(tools, f)
				continue
			}
			if _, ok := namespaces[tl.Namespace]; !ok {
				nsOrder = append(nsOrder, tl.Namespace)
			}
			namespaces[tl.Namespace] = append(namespaces[tl.Namespace], f)
		}
		for _, ns := range nsOrder {
			tools = append(tools, map[string]any{"type": "namespace", "name": ns, "description": "MCP server", "tools": namespaces[ns]})
		}
		tools = append(tools, map[string]any{"type": "web_search"})
		return map[string]any{"model": c.Model, "instructions": c.System, "input": input, "tools": tools,
			"tool_choice": "auto", "parallel_tool_calls": false, "reasoning": map[string]any{"effort": "low"},
			"include": []any{"reasoning.encrypted_content"}, "prompt_cache_key": "k", "stream": c.Stream, "store": false,
			"client_metadata": map[string]any{"x": "y"}}
	},
	read: func(t *testing.T, resp *http.Response, c conv) turn {
		t.Helper()
		if !c.Stream {
			wantJSON(t, resp)
			o := decode[respObject](t, mustRead(t, resp.Body))
			if o.Object != "response" || o.Status != "completed" || o.ID == "" {
				t.Errorf("response object %q status %q id %q", o.Object, o.Status, o.ID)
			}
			return o.turn(t)
		}
		wantSSE(t, resp)
		evs := parseSSE(t, resp.Body)
		var done []respItem
		added := map[int]respItem{}
		text := map[int]string{}
		var completed *respObject
		for i, ev := range evs {
			head := decode[struct {
				Type        string    `json:"type"`
				Seq         *int      `json:"sequence_number"`
				OutputIndex int       `json:"output_index"`
				Delta       string    `json:"delta"`
				Text        string    `json:"text"`
				Item        *respItem `json:"item"`
			}](t, ev.Data)
			if ev.Event != head.Type {
				t.Errorf("event %d: event: %q but data type %q", i, ev.Event, head.Type)
			}
			if head.Seq == nil || *head.Seq != i {
				t.Errorf("event %d (%s): sequence_number %v", i, head.Type, head.Seq)
			}
			if completed != nil {
				t.Errorf("event %q after response.completed", head.Type)
			}
			switch head.Type {
			case "response.created":
				if i != 0 {
					t.Errorf("response.created at %d", i)
				}
			case "response.output_item.added":
				if head.Item == nil || head.OutputIndex != len(added) {
					t.Fatalf("output_item.added index %d", head.OutputIndex)
				}
				added[head.OutputIndex] = *head.Item
			case "response.output_text.delta":
				text[head.OutputIndex] += head.Delta
			case "response.output_text.done":
				if head.Text != text[head.OutputIndex] {
					t.Errorf("output_text.done %q != deltas %q", head.Text, text[head.OutputIndex])
				}
			case "response.output_item.done":
				a, ok := added[head.OutputIndex]
				if !ok || head.Item == nil || head.Item.ID != a.ID || head.OutputIndex != len(done) {
					t.Fatalf("output_item.done %d does not match an added item", head.OutputIndex)
				}
				done = append(done, *head.Item)
			case "response.completed":
				o := decode[struct {
					Response respObject `json:"response"`
				}](t, ev.Data).Response
				completed = &o
			}
		}
		if completed == nil {
			t.Fatalf("no response.completed")
		}
		if len(completed.Output) != len(done) {
			t.Errorf("completed has %d items, stream finished %d", len(completed.Output), len(done))
		}
		// A client like Codex builds the turn from output_item.done items.
		o := respObject{ID: completed.ID, Status: completed.Status, Output: done, Usage: completed.Usage}
		for i, it := range done {
			if it.Type == "message" && len(it.Content) > 0 && it.Content[0].Text != text[i] {
				t.Errorf("message item text %q != deltas %q", it.Content[0].Text, text[i])
			}
		}
		return o.turn(t)
	},
}

// ---- Gemini ----

var geminiClient = dialectClient{
	name:     fakellm.Gemini,
	toolStop: "STOP", textStop: "STOP",
	url: func(base string, c conv) string {
		if c.Stream {
			return base + "/v1beta/models/" + c.Model + ":streamGenerateContent?alt=sse"
		}
		return base + "/v1beta/models/" + c.Model + ":generateContent"
	},
	body: func(c conv) any {
		contents := []any{map[string]any{"role": "user", "parts": []any{
			map[string]any{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}}}}
		for i, u := range c.Users {
			contents = append(contents, map[string]any{"role": "user", "parts": []any{map[string]any{"text": u}}})
			if i < len(c.Users)-1 {
				contents = append(contents, map[string]any{"role": "model", "parts": []any{map[string]any{"text": "ok"}}})
			}
		}
		if c.Call != nil {
			contents = append(contents,
				map[string]any{"role": "model", "parts": []any{
					map[string]any{"text": "thinking", "thought": true},
					map[string]any{"functionCall": map[string]any{"id": c.Call.ID, "name": c.Call.Name, "args": argsObject(c.Call.Args)},
						"thoughtSignature": "skip_thought_signature_validator"}}},
				map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
					"id": c.Call.ID, "name": c.Call.Name, "response": map[string]any{"output": "<untrusted_context>\n" + c.Result + "\n</untrusted_context>"}}}}})
		}
		var decls []any
		for _, tl := range c.Tools {
			decls = append(decls, map[string]any{"name": tl.Name, "description": "d", "parametersJsonSchema": schema()})
		}
		return map[string]any{"contents": contents, "tools": []any{map[string]any{"functionDeclarations": decls}},
			"systemInstruction": map[string]any{"role": "user", "parts": []any{map[string]any{"text": c.System}}},
			"generationConfig":  map[string]any{"temperature": 1, "thinkingConfig": map[string]any{"includeThoughts": true}}}
	},
	read: func(t *testing.T, resp *http.Response, c conv) turn {
		t.Helper()
		var chunks []geminiChunk
		if c.Stream {
			wantSSE(t, resp)
			for _, ev := range parseSSE(t, resp.Body) {
				if ev.Event != "" {
					t.Errorf("gemini SSE carries no event: line, got %q", ev.Event)
				}
				chunks = append(chunks, decode[geminiChunk](t, ev.Data))
			}
		} else {
			wantJSON(t, resp)
			chunks = []geminiChunk{decode[geminiChunk](t, mustRead(t, resp.Body))}
		}
		return geminiTurn(t, chunks)
	},
}

type geminiChunk struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         *string `json:"text"`
				FunctionCall *struct {
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		Prompt     int `json:"promptTokenCount"`
		Candidates int `json:"candidatesTokenCount"`
	} `json:"usageMetadata"`
}

func geminiTurn(t *testing.T, chunks []geminiChunk) turn {
	t.Helper()
	var out turn
	if len(chunks) == 0 {
		t.Fatalf("no chunks")
	}
	for i, ch := range chunks {
		if len(ch.Candidates) != 1 {
			t.Fatalf("chunk %d has %d candidates", i, len(ch.Candidates))
		}
		cand := ch.Candidates[0]
		if cand.Content.Role != "model" {
			t.Errorf("chunk %d role %q", i, cand.Content.Role)
		}
		last := i == len(chunks)-1
		if (cand.FinishReason != "") != last {
			t.Errorf("chunk %d finishReason %q (last=%v)", i, cand.FinishReason, last)
		}
		for _, p := range cand.Content.Parts {
			if p.Text != nil {
				out.Text += *p.Text
			}
			if p.FunctionCall != nil {
				out.Calls = append(out.Calls, call{Name: p.FunctionCall.Name, Args: compact(t, p.FunctionCall.Args)})
			}
		}
		if last {
			out.Stop = cand.FinishReason
			if ch.UsageMetadata == nil {
				t.Fatalf("last chunk has no usageMetadata")
			}
			out.Input, out.Output = ch.UsageMetadata.Prompt, ch.UsageMetadata.Candidates
		}
	}
	return out
}

func mustRead(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Errorf("arguments %q are not JSON: %v", raw, err)
		return string(raw)
	}
	return b.String()
}
