package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// llmTimeout bounds one model call of the llm directive.
const llmTimeout = 2 * time.Minute

// llmConversation is the chat the llm directive keeps across turns: every
// user text and every answer exactly as received, so that each call's
// prompt extends the previous one.
type llmConversation struct {
	messages []json.RawMessage
}

// llmEndpoint returns the chat completions URL and key the llm directive
// uses: the episode's model gateway (HARNESSD_MODEL_URL,
// HARNESSD_MODEL_API_KEY), else OPENAI_BASE_URL and OPENAI_API_KEY.
func llmEndpoint() (url, key string, err error) {
	if u := os.Getenv("HARNESSD_MODEL_URL"); u != "" {
		return strings.TrimRight(u, "/") + "/v1/chat/completions", os.Getenv("HARNESSD_MODEL_API_KEY"), nil
	}
	if u := os.Getenv("OPENAI_BASE_URL"); u != "" {
		return strings.TrimRight(u, "/") + "/chat/completions", os.Getenv("OPENAI_API_KEY"), nil
	}
	return "", "", fmt.Errorf("no model endpoint: neither HARNESSD_MODEL_URL nor OPENAI_BASE_URL is set")
}

// callLLM makes one non-streaming OpenAI Chat Completions call with text
// as the next user message and returns what to say: "llm: TEXT" (with
// " [tool_calls: N]" when the answer calls tools) or "llm error: ...". The
// answer joins the conversation only when the call succeeded.
func (e *Executor) callLLM(ctx context.Context, sink Sink, text string) string {
	url, key, err := llmEndpoint()
	if err != nil {
		sink.Error("llm: "+err.Error(), true)
		return "llm error: " + err.Error()
	}
	user, _ := json.Marshal(map[string]string{"role": "user", "content": text})
	msgs := append(append([]json.RawMessage(nil), e.llm.messages...), user)
	body, err := json.Marshal(map[string]any{"model": "testharness", "messages": msgs})
	if err != nil {
		return "llm error: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, llmTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "llm error: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "llm error: " + err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "llm error: " + err.Error()
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("llm error: %d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var answer struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &answer); err != nil || len(answer.Choices) == 0 {
		return fmt.Sprintf("llm error: an answer without choices: %.200s", b)
	}
	msg := answer.Choices[0].Message
	var m struct {
		Content   *string           `json:"content"`
		ToolCalls []json.RawMessage `json:"tool_calls"`
	}
	json.Unmarshal(msg, &m)
	e.llm.messages = append(msgs, msg)
	out := "llm: "
	if m.Content != nil {
		out += *m.Content
	}
	if len(m.ToolCalls) > 0 {
		out += fmt.Sprintf(" [tool_calls: %d]", len(m.ToolCalls))
	}
	return out
}
