package fakellm

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Engine mode (Options.Engine) makes Chat Completions answer like a vLLM
// engine started with --return-tokens-as-token-ids: a request carrying
// return_token_ids gets a top-level prompt_token_ids and per choice
// token_ids; one carrying logprobs gets choices[].logprobs.content[] with
// token "token_id:N", its logprob, bytes and top_logprobs. Only
// non-streaming answers carry them (the model gateway calls engines
// non-streaming).
//
// The "tokenizer" is deterministic and public, so tests recompute what the
// engine produced: the conversation is rendered through a ChatML-like
// template (EngineRenderPrompt), the answer likewise
// (EngineRenderCompletion), and text becomes ids by EngineTokenize. Because
// rendering is byte-exact, a call's prompt plus completion ids are a prefix
// of the next call's prompt ids whenever the agent sends the answer back
// unchanged — the property the gateway's chains rely on.

// Special token ids of the engine's template; byte b of other text is
// EngineByteBase+b.
const (
	EngineIMStart  = 1
	EngineIMEnd    = 2
	EngineByteBase = 3
)

const (
	imStart = "<|im_start|>"
	imEnd   = "<|im_end|>"
)

// EngineTokenize returns the engine's token ids of s: the template markers
// <|im_start|> and <|im_end|> as one token each, every other byte as
// EngineByteBase plus its value.
func EngineTokenize(s string) []int {
	out := make([]int, 0, len(s))
	for len(s) > 0 {
		switch {
		case strings.HasPrefix(s, imStart):
			out = append(out, EngineIMStart)
			s = s[len(imStart):]
		case strings.HasPrefix(s, imEnd):
			out = append(out, EngineIMEnd)
			s = s[len(imEnd):]
		default:
			out = append(out, EngineByteBase+int(s[0]))
			s = s[1:]
		}
	}
	return out
}

// engineTokenText returns the text of token id (what an engine without
// --return-tokens-as-token-ids reports as "token").
func engineTokenText(id int) string {
	switch id {
	case EngineIMStart:
		return imStart
	case EngineIMEnd:
		return imEnd
	}
	return string(rune(id - EngineByteBase))
}

// EngineLogprob is the logprob the engine reports for sampling token id at
// 0-based position pos of a completion. Values are multiples of 1/64, so
// they survive a JSON round trip exactly.
func EngineLogprob(id, pos int) float64 {
	return -float64((id*7+pos*3)%64+1) / 64
}

// EngineMessage is one chat message as the engine's template reads it.
type EngineMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// EngineRenderPrompt renders a chat request's tools and messages the way
// the engine's template does, ending with the assistant's generation
// prompt: an optional "tools" block holding the tools' compact JSON, then
// per message <|im_start|>ROLE\nCONTENT<|im_end|>\n, then
// <|im_start|>assistant\n.
func EngineRenderPrompt(tools json.RawMessage, messages []EngineMessage) string {
	var b strings.Builder
	if t := strings.TrimSpace(string(tools)); t != "" && t != "null" && t != "[]" {
		compact, err := jsonBytes(json.RawMessage(t))
		if err != nil {
			compact = []byte(t)
		}
		b.WriteString(imStart + "tools\n" + string(compact) + imEnd + "\n")
	}
	for _, m := range messages {
		b.WriteString(imStart + m.Role + "\n")
		b.WriteString(strings.Join(textParts(m.Content), ""))
		for _, tc := range m.ToolCalls {
			b.WriteString(renderToolCall(tc.Function.Name, tc.Function.Arguments))
		}
		b.WriteString(imEnd + "\n")
	}
	b.WriteString(imStart + "assistant\n")
	return b.String()
}

// EngineRenderCompletion renders an answer (text, then each tool call's
// name and arguments string) as the engine samples it, ending in
// <|im_end|>.
func EngineRenderCompletion(text string, calls [][2]string) string {
	var b strings.Builder
	b.WriteString(text)
	for _, c := range calls {
		b.WriteString(renderToolCall(c[0], c[1]))
	}
	b.WriteString(imEnd)
	return b.String()
}

func renderToolCall(name, args string) string {
	n, _ := json.Marshal(name)
	return "<tool_call>{\"name\":" + string(n) + ",\"arguments\":" + args + "}</tool_call>"
}

// engineRequest is what engine mode reads of a chat request.
type engineRequest struct {
	Messages       []EngineMessage `json:"messages"`
	Tools          json.RawMessage `json:"tools"`
	ReturnTokenIDs bool            `json:"return_token_ids"`
	Logprobs       bool            `json:"logprobs"`
	TopLogprobs    int             `json:"top_logprobs"`
}

// engineReply is the token-level part of an engine answer.
type engineReply struct {
	req        engineRequest
	tokensText bool // token strings as text: --return-tokens-as-token-ids missing
	prompt     []int
	completion []int
}

// newEngineReply renders the request and the answer into ids.
func newEngineReply(body []byte, a answer, tokensText bool) (*engineReply, error) {
	var req engineRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("engine request: %w", err)
	}
	calls := make([][2]string, len(a.calls))
	for i, c := range a.calls {
		calls[i] = [2]string{c.name, string(c.args)}
	}
	return &engineReply{
		req: req, tokensText: tokensText,
		prompt:     EngineTokenize(EngineRenderPrompt(req.Tools, req.Messages)),
		completion: EngineTokenize(EngineRenderCompletion(a.text, calls)),
	}, nil
}

// logprobs returns choices[].logprobs in vLLM's shape.
func (e *engineReply) logprobs() map[string]any {
	content := make([]any, len(e.completion))
	for i, id := range e.completion {
		tok := "token_id:" + strconv.Itoa(id)
		if e.tokensText {
			tok = engineTokenText(id)
		}
		lp := EngineLogprob(id, i)
		top := []any{}
		if e.req.TopLogprobs > 0 {
			top = append(top, map[string]any{"token": tok, "logprob": lp, "bytes": byteList(engineTokenText(id))})
		}
		content[i] = map[string]any{"token": tok, "logprob": lp, "bytes": byteList(engineTokenText(id)), "top_logprobs": top}
	}
	return map[string]any{"content": content}
}

func byteList(s string) []int {
	out := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int(s[i])
	}
	return out
}

// EngineTokenIDs recomputes, from a logged chat completions request and
// its answer, the prompt and completion ids engine mode returned for it:
// what a test compares a capture with. ok is false for an entry that is not
// an answered chat completions generation with a body.
func (e Entry) EngineTokenIDs() (prompt, completion []int, ok bool) {
	if e.Kind != KindGenerate || e.Dialect != OpenAIChat || len(e.Body) == 0 || e.Outcome != OutcomeOK {
		return nil, nil, false
	}
	var req engineRequest
	if err := json.Unmarshal(e.Body, &req); err != nil {
		return nil, nil, false
	}
	calls := make([][2]string, len(e.ReplyCalls))
	for i, c := range e.ReplyCalls {
		name, args, _ := strings.Cut(c, " ")
		calls[i] = [2]string{name, args}
	}
	return EngineTokenize(EngineRenderPrompt(req.Tools, req.Messages)), EngineTokenize(EngineRenderCompletion(e.ReplyText, calls)), true
}
