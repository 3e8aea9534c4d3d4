package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// DialectGemini is Google's generateContent (Gemini CLI).
const DialectGemini Dialect = "gemini"

// geminiDialect translates generateContent / streamGenerateContent to the
// engine's chat completions and back.
var geminiDialect = &dialect{
	name:       DialectGemini,
	decode:     decodeGemini,
	encode:     encodeGemini,
	writeError: geminiError,
}

// geminiMethod returns the model and method of a Gemini path
// (.../models/MODEL:METHOD), matching the method case-insensitively.
func geminiMethod(path string) (model, method string, ok bool) {
	i := strings.LastIndex(path, "/models/")
	if i < 0 {
		return "", "", false
	}
	rest := path[i+len("/models/"):]
	model, method, ok = strings.Cut(rest, ":")
	if !ok || model == "" {
		return "", "", false
	}
	switch strings.ToLower(method) {
	case "generatecontent":
		return model, "generateContent", true
	case "streamgeneratecontent":
		return model, "streamGenerateContent", true
	case "counttokens":
		return model, "countTokens", true
	}
	return "", "", false
}

type geminiPart struct {
	Text         *string `json:"text"`
	Thought      bool    `json:"thought"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
	InlineData *struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

// functionOutput is a function response as tool message text: its
// "output" (or "content", "result") string when it has one, else its JSON.
func functionOutput(raw json.RawMessage) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		for _, k := range []string{"output", "content", "result"} {
			var s string
			if v, ok := obj[k]; ok && len(obj) == 1 && json.Unmarshal(v, &s) == nil {
				return s
			}
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func decodeGemini(r *http.Request, body []byte) (*agentRequest, error) {
	model, method, _ := geminiMethod(r.URL.Path)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, errors.New("generateContent request: not a JSON object")
	}
	var in struct {
		Contents          []geminiContent `json:"contents"`
		SystemInstruction *geminiContent  `json:"systemInstruction"`
		Tools             []struct {
			FunctionDeclarations []struct {
				Name                 string          `json:"name"`
				Description          string          `json:"description"`
				Parameters           json.RawMessage `json:"parameters"`
				ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		ToolConfig *struct {
			FunctionCallingConfig struct {
				Mode string `json:"mode"`
			} `json:"functionCallingConfig"`
		} `json:"toolConfig"`
		GenerationConfig map[string]json.RawMessage `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("generateContent request: %w", err)
	}
	if len(in.Contents) == 0 {
		return nil, errors.New("generateContent request: contents must be a non-empty list")
	}
	var out []map[string]any
	if si := in.SystemInstruction; si != nil {
		var texts []string
		for _, p := range si.Parts {
			if p.Text != nil {
				texts = append(texts, *p.Text)
			}
		}
		if len(texts) > 0 {
			out = append(out, map[string]any{"role": "system", "content": strings.Join(texts, "\n")})
		}
	}
	pending := map[string][]string{} // function name -> ids of calls not yet answered
	for i, c := range in.Contents {
		switch c.Role {
		case "model":
			var text strings.Builder
			var calls []any
			for j, p := range c.Parts {
				switch {
				case p.FunctionCall != nil:
					args, err := compactObject(p.FunctionCall.Args)
					if err != nil {
						return nil, fmt.Errorf("generateContent request: content %d: functionCall args: %w", i, err)
					}
					id := p.FunctionCall.ID
					if id == "" {
						id = fmt.Sprintf("call_%d_%d", i, j)
					}
					pending[p.FunctionCall.Name] = append(pending[p.FunctionCall.Name], id)
					calls = append(calls, map[string]any{"id": id, "type": "function",
						"function": map[string]any{"name": p.FunctionCall.Name, "arguments": args}})
				case p.Text != nil && !p.Thought:
					text.WriteString(*p.Text)
				}
			}
			msg := map[string]any{"role": "assistant", "content": text.String()}
			if len(calls) > 0 {
				msg["tool_calls"] = calls
				if text.Len() == 0 {
					msg["content"] = nil
				}
			}
			out = append(out, msg)
		case "user", "":
			var texts []string
			for _, p := range c.Parts {
				switch {
				case p.FunctionResponse != nil:
					id := p.FunctionResponse.ID
					if ids := pending[p.FunctionResponse.Name]; id == "" && len(ids) > 0 {
						id, pending[p.FunctionResponse.Name] = ids[0], ids[1:]
					}
					out = append(out, map[string]any{"role": "tool", "tool_call_id": id, "content": functionOutput(p.FunctionResponse.Response)})
				case p.Text != nil:
					texts = append(texts, *p.Text)
				}
			}
			if len(texts) > 0 {
				out = append(out, map[string]any{"role": "user", "content": strings.Join(texts, "")})
			}
		default:
			return nil, fmt.Errorf("generateContent request: content %d has role %q", i, c.Role)
		}
	}
	chat := map[string]json.RawMessage{}
	put := func(k string, v any) {
		if b, err := json.Marshal(v); err == nil {
			chat[k] = b
		}
	}
	put("model", model)
	put("messages", out)
	var tools []any
	for _, t := range in.Tools {
		for _, fd := range t.FunctionDeclarations {
			if fd.Name == "" {
				continue
			}
			fn := map[string]any{"name": fd.Name}
			if fd.Description != "" {
				fn["description"] = fd.Description
			}
			switch {
			case len(fd.ParametersJSONSchema) > 0:
				fn["parameters"] = fd.ParametersJSONSchema
			case len(fd.Parameters) > 0:
				fn["parameters"] = fd.Parameters
			}
			tools = append(tools, map[string]any{"type": "function", "function": fn})
		}
	}
	if len(tools) > 0 {
		put("tools", tools)
		if tc := in.ToolConfig; tc != nil {
			switch strings.ToUpper(tc.FunctionCallingConfig.Mode) {
			case "ANY":
				put("tool_choice", "required")
			case "NONE":
				put("tool_choice", "none")
			case "AUTO":
				put("tool_choice", "auto")
			}
		}
	}
	gc := in.GenerationConfig
	for from, to := range map[string]string{"temperature": "temperature", "topP": "top_p", "topK": "top_k",
		"maxOutputTokens": "max_tokens", "stopSequences": "stop", "seed": "seed"} {
		if v, ok := gc[from]; ok && string(v) != "null" {
			chat[to] = v
		}
	}
	var sampling json.RawMessage
	if len(gc) > 0 {
		sampling, _ = json.Marshal(gc)
	}
	return &agentRequest{model: model, stream: method == "streamGenerateContent", messages: fields["contents"],
		tools: fields["tools"], sampling: sampling, chat: chat,
		geminiSSE: strings.EqualFold(r.URL.Query().Get("alt"), "sse")}, nil
}

func geminiFinish(finish string) string {
	if finish == "length" {
		return "MAX_TOKENS"
	}
	return "STOP"
}

func geminiParts(c *completion) []any {
	var parts []any
	if c.Reasoning != "" {
		parts = append(parts, map[string]any{"text": c.Reasoning, "thought": true})
	}
	if c.Text != "" || len(c.ToolCalls) == 0 {
		parts = append(parts, map[string]any{"text": c.Text})
	}
	for _, tc := range c.ToolCalls {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": tc.Name, "args": toolInput(tc.Arguments)}})
	}
	return parts
}

func encodeGemini(w http.ResponseWriter, req *agentRequest, c *completion) error {
	usage := map[string]any{"promptTokenCount": c.Usage.PromptTokens, "candidatesTokenCount": c.Usage.CompletionTokens,
		"totalTokenCount": c.Usage.TotalTokens}
	chunk := func(parts []any, final bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		out := map[string]any{"candidates": []any{cand}, "modelVersion": chatModel(req, c), "responseId": c.ID}
		if final {
			cand["finishReason"] = geminiFinish(c.FinishReason)
			out["usageMetadata"] = usage
		}
		return out
	}
	if !req.stream {
		return writeJSON(w, http.StatusOK, chunk(geminiParts(c), true))
	}
	// Streamed: text in pieces, function calls whole, the last chunk with
	// the finish reason and usage.
	var chunks []map[string]any
	if c.Reasoning != "" {
		for _, p := range pieces(c.Reasoning) {
			chunks = append(chunks, chunk([]any{map[string]any{"text": p, "thought": true}}, false))
		}
	}
	for _, p := range pieces(c.Text) {
		chunks = append(chunks, chunk([]any{map[string]any{"text": p}}, false))
	}
	var calls []any
	for _, tc := range c.ToolCalls {
		calls = append(calls, map[string]any{"functionCall": map[string]any{"name": tc.Name, "args": toolInput(tc.Arguments)}})
	}
	if calls == nil {
		calls = []any{map[string]any{"text": ""}}
	}
	chunks = append(chunks, chunk(calls, true))
	if !req.geminiSSE { // without alt=sse the stream is one JSON array
		return writeJSON(w, http.StatusOK, chunks)
	}
	s := startSSE(w)
	for _, ch := range chunks {
		s.event("", ch)
	}
	return s.err
}

// geminiError answers in Google's error shape.
func geminiError(w http.ResponseWriter, f failure) {
	status := "INVALID_ARGUMENT"
	switch f.kind {
	case failAuth:
		status = "UNAUTHENTICATED"
	case failNotFound, failMethod:
		status = "NOT_FOUND"
	case failBudget, failRateLimit:
		status = "RESOURCE_EXHAUSTED"
	case failUpstream:
		status = "INTERNAL"
	case failUnavailable:
		status = "UNAVAILABLE"
	case failTimeout:
		status = "DEADLINE_EXCEEDED"
	}
	writeJSON(w, f.status, map[string]any{"error": map[string]any{"code": f.status, "message": f.message, "status": status}})
}
