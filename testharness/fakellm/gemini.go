package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// geminiDialect speaks Gemini: POST .../models/{model}:generateContent,
// :streamGenerateContent (SSE with alt=sse, else a JSON array) and
// :countTokens.
var geminiDialect = &dialect{
	name:       Gemini,
	parse:      parseGemini,
	write:      writeGemini,
	writeError: geminiError,
}

// geminiPath splits .../models/{model}:{method}.
func geminiPath(p string) (model, method string, ok bool) {
	i := strings.LastIndex(p, "/models/")
	if i < 0 {
		return "", "", false
	}
	rest := p[i+len("/models/"):]
	j := strings.LastIndex(rest, ":")
	if j <= 0 || strings.Contains(rest, "/") {
		return "", "", false
	}
	model, err := url.PathUnescape(rest[:j])
	if err != nil {
		model = rest[:j]
	}
	return model, rest[j+1:], true
}

type geminiPart struct {
	Text         *string `json:"text"`
	Thought      bool    `json:"thought"`
	FunctionCall *struct {
		Name string `json:"name"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiTools struct {
	FunctionDeclarations      []struct{ Name string } `json:"functionDeclarations"`
	FunctionDeclarationsSnake []struct{ Name string } `json:"function_declarations"`
}

type geminiRequest struct {
	Contents               []geminiContent `json:"contents"`
	SystemInstruction      json.RawMessage `json:"systemInstruction"`
	SystemInstructionSnake json.RawMessage `json:"system_instruction"`
	Tools                  []geminiTools   `json:"tools"`
}

func parseGemini(r *http.Request, body []byte) (*conversation, error) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("gemini request: %w", err)
	}
	model, method, _ := geminiPath(r.URL.Path)
	c := &conversation{model: model, stream: method == "streamGenerateContent",
		geminiSSE: r.URL.Query().Get("alt") == "sse"}
	sys := req.SystemInstruction
	if len(sys) == 0 {
		sys = req.SystemInstructionSnake
	}
	if c.system = geminiText(sys); c.system != "" {
		c.messages = append(c.messages, message{role: roleSystem, text: c.system})
	}
	for _, t := range req.Tools {
		for _, f := range append(t.FunctionDeclarations, t.FunctionDeclarationsSnake...) {
			if f.Name != "" {
				c.tools = append(c.tools, tool{name: f.Name})
			}
		}
	}
	for _, ct := range req.Contents {
		msg := message{role: roleUser}
		if ct.Role == "model" {
			msg.role = roleAssistant
		}
		var texts []string
		for _, p := range ct.Parts {
			switch {
			case p.FunctionResponse != nil:
				msg.toolResults = append(msg.toolResults, cleanToolResult(flexText(p.FunctionResponse.Response)))
			case p.FunctionCall != nil:
				msg.toolCalls = append(msg.toolCalls, p.FunctionCall.Name)
			case p.Text != nil && !p.Thought:
				texts = append(texts, *p.Text)
			}
		}
		if msg.role == roleUser {
			msg.text = userText(texts)
		} else {
			msg.text = joinNonEmpty(texts)
		}
		c.messages = append(c.messages, msg)
	}
	return c, nil
}

// geminiText reads a systemInstruction: a Content ({parts:[{text}]}) or a
// plain string.
func geminiText(raw json.RawMessage) string {
	var ct geminiContent
	if json.Unmarshal(raw, &ct) == nil {
		var texts []string
		for _, p := range ct.Parts {
			if p.Text != nil {
				texts = append(texts, *p.Text)
			}
		}
		return joinNonEmpty(texts)
	}
	return flexText(raw)
}

func writeGemini(w http.ResponseWriter, c *conversation, res *response) error {
	respID := fmt.Sprintf("fakeresp%06d", res.id)
	usage := map[string]any{"promptTokenCount": res.inputTokens, "candidatesTokenCount": res.outputTokens,
		"totalTokenCount": res.inputTokens + res.outputTokens}
	chunk := func(parts []any, final bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		out := map[string]any{"candidates": []any{cand}, "modelVersion": c.model, "responseId": respID}
		if final {
			cand["finishReason"] = "STOP"
			out["usageMetadata"] = usage
		}
		return out
	}
	callParts := func() []any {
		var parts []any
		for _, tc := range res.calls {
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": tc.name, "args": tc.args}})
		}
		return parts
	}
	withText := res.text != "" || len(res.calls) == 0

	if !c.stream {
		var parts []any
		if withText {
			parts = append(parts, map[string]any{"text": res.text})
		}
		return writeJSON(w, http.StatusOK, chunk(append(parts, callParts()...), true))
	}

	// Text streams in pieces; the calls (whole, as Gemini sends them) and
	// the finish reason with usage come in the last chunk.
	var pieces []string
	if withText {
		if pieces = chunks(res.text, deltaSize); len(pieces) == 0 {
			pieces = []string{""}
		}
	}
	var stream []map[string]any
	for i, piece := range pieces {
		parts := []any{map[string]any{"text": piece}}
		if i < len(pieces)-1 {
			stream = append(stream, chunk(parts, false))
			continue
		}
		stream = append(stream, chunk(append(parts, callParts()...), true))
	}
	if len(pieces) == 0 {
		stream = append(stream, chunk(callParts(), true))
	}

	if !c.geminiSSE {
		return writeJSON(w, http.StatusOK, stream)
	}
	s := startSSE(w)
	for _, ch := range stream {
		s.event("", ch)
	}
	return s.err
}

func geminiError(w http.ResponseWriter, status int, msg string) {
	st := "INVALID_ARGUMENT"
	switch {
	case status == http.StatusUnauthorized:
		st = "UNAUTHENTICATED"
	case status == http.StatusForbidden:
		st = "PERMISSION_DENIED"
	case status == http.StatusNotFound:
		st = "NOT_FOUND"
	case status == http.StatusMethodNotAllowed:
		st = "UNIMPLEMENTED"
	case status == http.StatusTooManyRequests:
		st = "RESOURCE_EXHAUSTED"
	case status == http.StatusServiceUnavailable:
		st = "UNAVAILABLE"
	case status == http.StatusGatewayTimeout:
		st = "DEADLINE_EXCEEDED"
	case status >= 500:
		st = "INTERNAL"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}})
}
