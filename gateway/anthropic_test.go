package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/gateway/dialect"
	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

var claudeTools = []any{map[string]any{"name": "add", "description": "adds",
	"input_schema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}}}}}

func (g *testGateway) anthropicHeaders() map[string]string {
	return map[string]string{"X-Api-Key": g.Key(), "Anthropic-Version": "2023-06-01"}
}

// anthropicMessage is an Anthropic answer, as Claude Code reads it.
type anthropicMessage struct {
	Type       string `json:"type"`
	Role       string `json:"role"`
	Model      string `json:"model"`
	StopReason string `json:"stop_reason"`
	Content    []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// readAnthropicStream checks the stream's event lifecycle and assembles the
// message it describes.
func readAnthropicStream(t *testing.T, body []byte) anthropicMessage {
	t.Helper()
	evs := parseSSE(t, body)
	var msg anthropicMessage
	open := -1
	var partial strings.Builder
	var names []string
	for i, ev := range evs {
		var d struct {
			Type         string           `json:"type"`
			Message      anthropicMessage `json:"message"`
			Index        int              `json:"index"`
			ContentBlock struct {
				Type, Text, ID, Name string
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &d); err != nil || d.Type != ev.Event {
			t.Fatalf("event %d: %s %s", i, ev.Event, ev.Data)
		}
		names = append(names, d.Type)
		switch d.Type {
		case "message_start":
			if i != 0 {
				t.Fatalf("message_start at %d", i)
			}
			msg = d.Message
		case "content_block_start":
			if open != -1 || d.Index != len(msg.Content) {
				t.Fatalf("block %d starts inside block %d", d.Index, open)
			}
			open = d.Index
			msg.Content = append(msg.Content, struct {
				Type  string          `json:"type"`
				Text  string          `json:"text"`
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			}{Type: d.ContentBlock.Type, ID: d.ContentBlock.ID, Name: d.ContentBlock.Name})
			partial.Reset()
		case "content_block_delta":
			if d.Index != open {
				t.Fatalf("delta for block %d while %d is open", d.Index, open)
			}
			b := &msg.Content[open]
			switch d.Delta.Type {
			case "text_delta":
				b.Text += d.Delta.Text
			case "input_json_delta":
				partial.WriteString(d.Delta.PartialJSON)
			}
		case "content_block_stop":
			if msg.Content[open].Type == "tool_use" {
				msg.Content[open].Input = json.RawMessage(partial.String())
			}
			open = -1
		case "message_delta":
			msg.StopReason = d.Delta.StopReason
			msg.Usage.OutputTokens = d.Usage.OutputTokens
		}
	}
	if len(names) < 2 || names[len(names)-1] != "message_stop" || names[len(names)-2] != "message_delta" || open != -1 {
		t.Fatalf("stream lifecycle %v", names)
	}
	return msg
}

// TestAnthropicMessages: Claude Code's dialect, streamed and not, is
// translated to the engine and back; the ids are the engine's and the two
// calls of a tool round trip form one chain.
func TestAnthropicMessages(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "sse"}[stream]
		t.Run(name, func(t *testing.T) {
			llm := engine(t, fakellm.Options{})
			gw := startGateway(t, llm.URL(), Options{})
			system := []any{map[string]any{"type": "text", "text": "You are Claude Code.", "cache_control": map[string]any{"type": "ephemeral"}}}
			msgs := []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": `call add {"a":2,"b":3}`}}}}
			send := func() anthropicMessage {
				status, body := gw.post(t, "/v1/messages?beta=true", gw.anthropicHeaders(), map[string]any{
					"model": "claude-sonnet", "system": system, "messages": msgs, "tools": claudeTools,
					"max_tokens": 32000, "stream": stream, "tool_choice": map[string]any{"type": "auto"}})
				if status != 200 {
					t.Fatalf("status %d: %s", status, body)
				}
				if stream {
					return readAnthropicStream(t, body)
				}
				var m anthropicMessage
				if err := json.Unmarshal(body, &m); err != nil {
					t.Fatal(err)
				}
				return m
			}
			m := send()
			if m.StopReason != "tool_use" || m.Model != "claude-sonnet" || len(m.Content) != 1 || m.Content[0].Type != "tool_use" ||
				m.Content[0].Name != "add" || string(m.Content[0].Input) != `{"a":2,"b":3}` {
				t.Fatalf("first answer %+v", m)
			}
			use := m.Content[0]
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": use.ID, "name": use.Name, "input": use.Input}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": use.ID,
					"content": []any{map[string]any{"type": "text", "text": "5"}}}}})
			m = send()
			if m.StopReason != "end_turn" || len(m.Content) != 1 || m.Content[0].Text != "MOCK-DONE: 5" {
				t.Fatalf("second answer %+v", m)
			}
			res := gw.events.responses()
			if m.Usage.OutputTokens != len(res[2].CompletionTokenIDs) {
				t.Errorf("usage %+v, want %d output tokens", m.Usage, len(res[2].CompletionTokenIDs))
			}
			// What the engine was sent, and what it produced from it.
			for i, e := range llm.Requests() {
				var up struct {
					Tools      json.RawMessage         `json:"tools"`
					Messages   []fakellm.EngineMessage `json:"messages"`
					MaxTokens  int                     `json:"max_tokens"`
					ToolChoice string                  `json:"tool_choice"`
				}
				json.Unmarshal(e.Body, &up)
				if up.Messages[0].Role != "system" || up.MaxTokens != 32000 || up.ToolChoice != "auto" {
					t.Errorf("upstream request %s", e.Body)
				}
				prompt := fakellm.EngineTokenize(fakellm.EngineRenderPrompt(up.Tools, up.Messages))
				if !equalInts(res[i+1].PromptTokenIDs, prompt) {
					t.Errorf("call %d: prompt ids differ from the engine's", i+1)
				}
			}
			req := gw.events.list()[0].Data.(*wire.LLMRequest)
			if req.Dialect != "anthropic" || req.Stream != stream || !strings.Contains(string(req.Sampling), `"max_tokens":32000`) {
				t.Errorf("llm_request %+v", req)
			}
			ex, _ := gw.Export()
			if len(ex.Chains) != 1 || len(ex.Chains[0].Calls) != 2 {
				t.Errorf("want one chain of two calls, got %+v", ex.Calls)
			}
		})
	}
}

// TestAnthropicCountTokensAndErrors: count_tokens is answered locally and
// never recorded; errors come in Anthropic's shape.
func TestAnthropicCountTokensAndErrors(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	gw := startGateway(t, llm.URL(), Options{})
	req := map[string]any{"model": "claude", "messages": []any{map[string]any{"role": "user", "content": "hello there"}}}
	status, body := gw.post(t, "/v1/messages/count_tokens?beta=true", gw.anthropicHeaders(), req)
	var n struct {
		InputTokens int `json:"input_tokens"`
	}
	if status != 200 || json.Unmarshal(body, &n) != nil || n.InputTokens < 1 {
		t.Fatalf("count_tokens: %d %s", status, body)
	}
	if len(llm.Requests()) != 0 || len(gw.events.list()) != 0 {
		t.Fatalf("count_tokens was forwarded or recorded")
	}
	for _, c := range []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		typ     string
	}{
		{"no key", map[string]string{"Anthropic-Version": "2023-06-01"}, `{}`, 401, "authentication_error"},
		{"not json", gw.anthropicHeaders(), `{"model":`, 400, "invalid_request_error"},
		{"no messages", gw.anthropicHeaders(), `{"model":"m","messages":[]}`, 400, "invalid_request_error"},
		{"bad role", gw.anthropicHeaders(), `{"messages":[{"role":"robot","content":"x"}]}`, 400, "invalid_request_error"},
		{"bad tool input", gw.anthropicHeaders(), `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"x","input":[1]}]}]}`, 400, "invalid_request_error"},
	} {
		status, body := gw.post(t, "/v1/messages", c.headers, c.body)
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if status != c.status || json.Unmarshal(body, &e) != nil || e.Type != "error" || e.Error.Type != c.typ || e.Error.Message == "" {
			t.Errorf("%s: %d %s", c.name, status, body)
		}
	}
	if status, _ := gw.post(t, "/v1/messages", gw.anthropicHeaders(), `{"messages":[]}`); status != http.StatusBadRequest {
		t.Errorf("empty messages: %d", status)
	}
}

// TestAnthropicContinuedSameEngineBodies: a Claude Code conversation whose
// cache_control marker moves every turn, decoded message by message after
// the request before (dialect.Memo), reaches the engine as the very bytes
// the general path writes for each request decoded alone, and stays one
// chain.
func TestAnthropicContinuedSameEngineBodies(t *testing.T) {
	llm := engine(t, fakellm.Options{})
	g := startGateway(t, llm.URL(), Options{Sampling: testPin})
	shape := growingAnthropic()
	var sent [][]byte
	for i := range 12 {
		body := shape.body(i)
		if status, out := g.post(t, shape.path, g.anthropicHeaders(), body); status != 200 {
			t.Fatalf("call %d: status %d: %s", i, status, out)
		}
		sent = append(sent, body)
	}
	got := llm.Requests()
	if len(got) != len(sent) {
		t.Fatalf("%d engine requests, want %d", len(got), len(sent))
	}
	for i, body := range sent {
		req, err := dialect.New(dialect.Anthropic).Decode(httptest.NewRequest("POST", shape.path, nil), body)
		if err != nil {
			t.Fatal(err)
		}
		fields, err := req.Chat.Fields()
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := g.engineBody(fields, 0, g.sampling)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[i].Body, want) {
			t.Errorf("call %d: the engine got\n%s\nand the general path writes\n%s", i, got[i].Body, want)
		}
	}
	ex, err := g.Export()
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Chains) != 1 || len(ex.Chains[0].Calls) != len(sent) {
		t.Fatalf("%d chains, want one of %d calls", len(ex.Chains), len(sent))
	}
}
