package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// geminiTranslator is Google's generateContent and streamGenerateContent
// (Gemini CLI), translated to the middle format and back.
type geminiTranslator struct {
	model  string // from the path: .../models/MODEL:METHOD
	stream bool   // streamGenerateContent
	// sse: the stream was asked for as SSE (alt=sse), not one JSON array.
	sse bool
}

func (*geminiTranslator) Name() Name { return Gemini }

// GeminiMethod returns the model and method of a Gemini path
// (.../models/MODEL:METHOD), matching the method case-insensitively; the
// method is generateContent, streamGenerateContent or countTokens.
func GeminiMethod(path string) (model, method string, ok bool) {
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

	index int // its place in the content's parts
}

type geminiContent struct {
	Role  string         `json:"role"`
	Parts geminiPartList `json:"parts"`

	index int // its place in the request's contents
}

// geminiDecl is a function declaration.
type geminiDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Parameters           json.RawMessage `json:"parameters"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`

	index int // its place in the tool's declarations
}

type geminiRequest struct {
	Contents          geminiContentList `json:"contents"`
	SystemInstruction *geminiContent    `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations geminiDeclList `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig *struct {
		FunctionCallingConfig struct {
			Mode string `json:"mode"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
	GenerationConfig map[string]json.RawMessage `json:"generationConfig"`
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

// geminiGeneration maps generationConfig's fields to Chat Completions'.
// Its penalties and candidate count go on too, so that a sampling pin
// strips them as it does a Chat Completions agent's (generationConfig's
// responseSchema is Gemini's OpenAPI subset, not an engine's JSON Schema:
// it is left out).
var geminiGeneration = map[string]string{"temperature": "temperature", "topP": "top_p", "topK": "top_k",
	"maxOutputTokens": "max_tokens", "stopSequences": "stop", "seed": "seed",
	"presencePenalty": "presence_penalty", "frequencyPenalty": "frequency_penalty", "candidateCount": "n"}

func (t *geminiTranslator) Decode(r *http.Request, body []byte) (*Request, error) {
	model, method, _ := GeminiMethod(r.URL.Path)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, errors.New("generateContent request: not a JSON object")
	}
	var in geminiRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("generateContent request: %w", err)
	}
	if len(in.Contents) == 0 {
		return nil, errors.New("generateContent request: contents must be a non-empty list")
	}
	var out []Message
	if si := in.SystemInstruction; si != nil {
		var texts []string
		for _, p := range si.Parts {
			if p.Text != nil {
				texts = append(texts, *p.Text)
			}
		}
		if len(texts) > 0 {
			out = append(out, Message{Role: "system", Content: Text(strings.Join(texts, "\n"))})
		}
	}
	pending := map[string][]string{} // function name -> ids of calls not yet answered
	for _, c := range in.Contents {
		i := c.index
		switch c.Role {
		case "model":
			msg, err := geminiModel(i, c.Parts, pending)
			if err != nil {
				return nil, err
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
					out = append(out, Message{Role: "tool", ToolCallID: id, Content: Text(functionOutput(p.FunctionResponse.Response))})
				case p.Text != nil:
					texts = append(texts, *p.Text)
				}
			}
			if len(texts) > 0 {
				out = append(out, Message{Role: "user", Content: Text(strings.Join(texts, ""))})
			}
		default:
			return nil, fmt.Errorf("generateContent request: content %d has role %q", i, c.Role)
		}
	}
	chat := ChatRequest{Model: model, Messages: out, Params: map[string]json.RawMessage{}}
	for _, tl := range in.Tools {
		for _, fd := range tl.FunctionDeclarations {
			if fd.Name == "" {
				continue
			}
			tool := Tool{Name: fd.Name, Description: fd.Description, Parameters: fd.Parameters}
			if len(fd.ParametersJSONSchema) > 0 {
				tool.Parameters = fd.ParametersJSONSchema
			}
			chat.Tools = append(chat.Tools, tool)
		}
	}
	if len(chat.Tools) > 0 && in.ToolConfig != nil {
		switch strings.ToUpper(in.ToolConfig.FunctionCallingConfig.Mode) {
		case "ANY":
			chat.ToolChoice = json.RawMessage(`"required"`)
		case "NONE":
			chat.ToolChoice = json.RawMessage(`"none"`)
		case "AUTO":
			chat.ToolChoice = json.RawMessage(`"auto"`)
		}
	}
	gc := in.GenerationConfig
	for from, to := range geminiGeneration {
		if v, ok := gc[from]; ok && string(v) != "null" {
			chat.Params[to] = v
		}
	}
	var sampling json.RawMessage
	if len(gc) > 0 {
		sampling, _ = json.Marshal(gc)
	}
	t.model, t.stream = model, method == "streamGenerateContent"
	t.sse = strings.EqualFold(r.URL.Query().Get("alt"), "sse")
	return &Request{Chat: chat, Model: model, Stream: t.stream, Messages: fields["contents"],
		Tools: fields["tools"], Sampling: sampling}, nil
}

// geminiModel translates content i of role model: its text and function
// calls (whose ids, made up where Gemini gave none, are kept in pending
// for the responses that follow).
func geminiModel(i int, parts []geminiPart, pending map[string][]string) (Message, error) {
	var text strings.Builder
	msg := Message{Role: "assistant"}
	for _, p := range parts {
		j := p.index
		switch {
		case p.FunctionCall != nil:
			args, err := compactObject(p.FunctionCall.Args)
			if err != nil {
				return msg, fmt.Errorf("generateContent request: content %d: functionCall args: %w", i, err)
			}
			id := p.FunctionCall.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", i, j)
			}
			pending[p.FunctionCall.Name] = append(pending[p.FunctionCall.Name], id)
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: p.FunctionCall.Name, Arguments: args})
		case p.Text != nil && !p.Thought:
			text.WriteString(*p.Text)
		}
	}
	msg.Content = Text(text.String())
	if len(msg.ToolCalls) > 0 && text.Len() == 0 {
		msg.Content = nil
	}
	return msg, nil
}

func geminiFinish(finish string) string {
	if finish == "length" {
		return "MAX_TOKENS"
	}
	return "STOP"
}

func geminiParts(c *Completion) []any {
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

func (t *geminiTranslator) Encode(w http.ResponseWriter, c *Completion) error {
	usage := map[string]any{"promptTokenCount": c.Usage.PromptTokens, "candidatesTokenCount": c.Usage.CompletionTokens,
		"totalTokenCount": c.Usage.TotalTokens}
	chunk := func(parts []any, final bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		out := map[string]any{"candidates": []any{cand}, "modelVersion": model(t.model, c), "responseId": c.ID}
		if final {
			cand["finishReason"] = geminiFinish(c.FinishReason)
			out["usageMetadata"] = usage
		}
		return out
	}
	if !t.stream {
		return WriteJSON(w, http.StatusOK, chunk(geminiParts(c), true))
	}
	// Streamed: text in pieces, function calls whole, the last chunk with
	// the finish reason and usage.
	var chunks []map[string]any
	for _, p := range pieces(c.Reasoning) {
		chunks = append(chunks, chunk([]any{map[string]any{"text": p, "thought": true}}, false))
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
	if !t.sse { // without alt=sse the stream is one JSON array
		return WriteJSON(w, http.StatusOK, chunks)
	}
	s := startSSE(w)
	for _, ch := range chunks {
		s.event("", ch)
	}
	return s.err
}

// WriteError answers in Google's error shape.
func (*geminiTranslator) WriteError(w http.ResponseWriter, f Failure) {
	status := "INVALID_ARGUMENT"
	switch f.Kind {
	case FailAuth:
		status = "UNAUTHENTICATED"
	case FailNotFound, FailMethod:
		status = "NOT_FOUND"
	case FailBudget, FailRateLimit:
		status = "RESOURCE_EXHAUSTED"
	case FailUpstream:
		status = "INTERNAL"
	case FailUnavailable:
		status = "UNAVAILABLE"
	case FailTimeout:
		status = "DEADLINE_EXCEEDED"
	}
	WriteJSON(w, f.Status, map[string]any{"error": map[string]any{"code": f.Status, "message": f.Message, "status": status}})
}
