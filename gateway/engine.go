package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/gateway/dialect"
	"github.com/harnessd/harnessd/wire"
)

// completion is the engine's answer: the middle format every dialect
// encodes from, and the token fields the gateway captures.
type completion struct {
	dialect.Completion

	PromptIDs     []int
	CompletionIDs []int
	Logprobs      []float64 // aligned with CompletionIDs; nil when absent
	issues        []Issue   // problems found while reading the token fields
}

// tokenUsage is the token usage an engine reports.
type tokenUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// engineAnswer is what the gateway reads of a vLLM / SGLang chat answer.
type engineAnswer struct {
	ID             string   `json:"id"`
	Model          string   `json:"model"`
	Created        int64    `json:"created"`
	PromptTokenIDs tokenIDs `json:"prompt_token_ids"`
	Choices        []struct {
		Message struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			Reasoning        *string `json:"reasoning"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		TokenIDs tokenIDs `json:"token_ids"`
		Logprobs *struct {
			Content []struct {
				Token   string          `json:"token"`
				Logprob json.RawMessage `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *tokenUsage `json:"usage"`
}

// callEngine posts body to the engine and reads its answer. Errors carry
// the failure the agent gets.
func (g *Gateway) callEngine(ctx context.Context, body upstreamBody) (*completion, *failure) {
	ctx, cancel := context.WithTimeout(ctx, g.opts.Upstream.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.upstream, nil)
	if err != nil {
		return nil, &failure{Status: http.StatusBadGateway, Kind: failUpstream, Message: "gateway: upstream request: " + err.Error()}
	}
	// As NewRequest sets them for a body in one piece: the length, and a
	// new reader of the body for a retry on a connection that went stale.
	req.ContentLength = int64(body.size())
	req.Body = io.NopCloser(body.reader())
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(body.reader()), nil }
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if k := g.opts.Upstream.APIKey; k != "" {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, transportFailure(ctx, err)
	}
	defer resp.Body.Close()
	raw, err := readInto(g.promptIDs.buffer(), io.LimitReader(resp.Body, g.opts.MaxResponseBody+1), resp.ContentLength)
	kept := false
	defer func() {
		if !kept {
			g.promptIDs.release(raw)
		}
	}()
	if err != nil {
		return nil, transportFailure(ctx, err)
	}
	if int64(len(raw)) > g.opts.MaxResponseBody {
		return nil, &failure{Status: http.StatusBadGateway, Kind: failUpstream, Message: fmt.Sprintf("gateway: upstream answer over %d bytes", g.opts.MaxResponseBody)}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, upstreamStatusFailure(resp.StatusCode, raw)
	}
	c, kept, err := parseEngineAnswerIn(raw, &g.promptIDs)
	if err != nil {
		return nil, &failure{Status: http.StatusBadGateway, Kind: failUpstream, Message: "gateway: upstream answered garbage: " + err.Error()}
	}
	return c, nil
}

// readAllSized reads r to its end into a new buffer (readInto).
func readAllSized(r io.Reader, n int64) ([]byte, error) { return readInto(nil, r, n) }

// readInto reads r to its end into buf's room (its bytes are overwritten),
// growing it when full towards n bytes (the declared Content-Length; n <=
// 0: unknown), so that a large body is not regrown from a small buffer
// many times. The declared size is the sender's word: a buffer it grows is
// never more than firstRead ahead of twice the bytes that have arrived, so
// a request that declares 4 MiB and sends nothing costs firstRead, not 4
// MiB (TestReadAllSizedDoesNotTrustTheLength).
func readInto(buf []byte, r io.Reader, n int64) ([]byte, error) {
	// One byte more than declared, to see the end without growing.
	want := int(min(max(n, 0), maxPrealloc)) + 1
	buf = buf[:0]
	if cap(buf) == 0 {
		buf = make([]byte, 0, min(max(want, 512), firstRead))
	}
	for {
		if len(buf) == cap(buf) {
			next := 2 * cap(buf) // at most twice what has arrived
			if cap(buf) < want {
				next = min(next, want) // towards the declared size, not past it
			}
			buf = append(make([]byte, 0, next), buf...)
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// firstRead is what readAllSized allocates before any byte has arrived,
// and maxPrealloc bounds the size it grows towards.
const (
	firstRead   = 64 << 10
	maxPrealloc = 4 << 20
)

// transportFailure classifies a failed round trip: too slow (504) or
// unreachable (503); both are worth a retry.
func transportFailure(ctx context.Context, err error) *failure {
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &failure{Status: http.StatusGatewayTimeout, Kind: failTimeout, Message: "gateway: upstream timed out"}
	}
	if ctx.Err() != nil {
		return &failure{Status: http.StatusServiceUnavailable, Kind: failUnavailable, Message: "gateway: call cancelled: " + context.Cause(ctx).Error()}
	}
	return &failure{Status: http.StatusServiceUnavailable, Kind: failUnavailable, Message: "gateway: upstream unreachable: " + err.Error()}
}

// upstreamStatusFailure passes an upstream's error on: its 4xx as the
// agent's (the request was at fault), 429 as a rate limit, anything else
// as 502.
func upstreamStatusFailure(status int, raw []byte) *failure {
	msg := upstreamMessage(raw)
	switch {
	case status == http.StatusTooManyRequests:
		return &failure{Status: status, Kind: failRateLimit, Message: "gateway: upstream rate limit: " + msg}
	case status >= 400 && status < 500 && status != http.StatusUnauthorized && status != http.StatusForbidden:
		return &failure{Status: status, Kind: failInvalid, Message: "gateway: upstream refused the request: " + msg}
	}
	return &failure{Status: http.StatusBadGateway, Kind: failUpstream, Message: fmt.Sprintf("gateway: upstream answered %d: %s", status, msg)}
}

// upstreamMessage extracts an error message from an upstream body (OpenAI
// shape, or vLLM's {"message": ...}), bounded.
func upstreamMessage(raw []byte) string {
	var e struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	msg := ""
	if json.Unmarshal(raw, &e) == nil {
		if e.Error != nil {
			msg = e.Error.Message
		} else {
			msg = e.Message
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
	}
	if len(msg) > 512 {
		msg = msg[:512] + "…"
	}
	return strings.ToValidUTF8(msg, "?")
}

// parseEngineAnswer reads an engine's chat answer, keeping the token
// fields and noting what is wrong with them.
func parseEngineAnswer(raw []byte) (*completion, error) {
	c, _, err := parseEngineAnswerIn(raw, nil)
	return c, err
}

// parseEngineAnswerIn is parseEngineAnswer reading the prompt ids with m
// (nil: none): by what is new since the answer before. kept says m holds
// raw from then on (idsMemo.parse).
func parseEngineAnswerIn(raw []byte, m *idsMemo) (c *completion, kept bool, err error) {
	var a engineAnswer
	ids, rest, found, err := cutMember(raw, "prompt_token_ids")
	if err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(rest, &a); err != nil {
		return nil, false, err
	}
	if found {
		if a.PromptTokenIDs, kept, err = m.parse(ids, raw); err != nil {
			return nil, false, fmt.Errorf("prompt_token_ids: %w", err)
		}
	}
	c, err = a.completion()
	return c, kept, err
}

// completion is the middle format's completion of answer a.
func (a *engineAnswer) completion() (*completion, error) {
	if len(a.Choices) == 0 {
		return nil, errors.New("no choices")
	}
	ch := a.Choices[0]
	c := &completion{Completion: dialect.Completion{ID: a.ID, Model: a.Model, Created: a.Created, FinishReason: ch.FinishReason},
		PromptIDs: a.PromptTokenIDs, CompletionIDs: ch.TokenIDs}
	if m := ch.Message.Content; m != nil {
		c.Text = *m
	}
	switch {
	case ch.Message.ReasoningContent != nil:
		c.Reasoning = *ch.Message.ReasoningContent
	case ch.Message.Reasoning != nil:
		c.Reasoning = *ch.Message.Reasoning
	}
	for i, tc := range ch.Message.ToolCalls {
		if tc.Function.Name == "" {
			return nil, fmt.Errorf("tool call %d has no name", i)
		}
		args := tc.Function.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%s_%d", a.ID, i)
		}
		c.ToolCalls = append(c.ToolCalls, dialect.ToolCall{ID: id, Name: tc.Function.Name, Arguments: args})
	}
	if c.FinishReason == "" {
		c.FinishReason = "stop"
		if len(c.ToolCalls) > 0 {
			c.FinishReason = "tool_calls"
		}
	}
	if ch.Logprobs != nil {
		c.readLogprobs(ch.Logprobs.Content)
	}
	if a.Usage != nil {
		c.Usage = wire.TokenUsage{PromptTokens: a.Usage.PromptTokens, CompletionTokens: a.Usage.CompletionTokens, TotalTokens: a.Usage.TotalTokens}
	} else { // fill what the engine left out, from the ids it did return
		c.Usage = wire.TokenUsage{PromptTokens: len(c.PromptIDs), CompletionTokens: len(c.CompletionIDs)}
	}
	if c.Usage.TotalTokens == 0 {
		c.Usage.TotalTokens = c.Usage.PromptTokens + c.Usage.CompletionTokens
	}
	return c, nil
}

// readLogprobs takes the numbers of logprobs.content[], noting logprobs
// that are not numbers (fatal), token strings that are text rather than
// token_id:N (the engine lacks --return-tokens-as-token-ids) and token ids
// that disagree with token_ids.
func (c *completion) readLogprobs(content []struct {
	Token   string          `json:"token"`
	Logprob json.RawMessage `json:"logprob"`
}) {
	lps := make([]float64, 0, len(content))
	textTokens, mismatch := 0, -1
	for i, e := range content {
		var f float64
		if err := json.Unmarshal(e.Logprob, &f); err != nil {
			c.issues = append(c.issues, Issue{Severity: SeverityFatal, Code: IssueLogprobNotNumber,
				Message: fmt.Sprintf("logprob %d is %s, not a number", i, truncate(string(e.Logprob), 40))})
			c.Logprobs = nil
			return
		}
		lps = append(lps, f)
		idText, isID := strings.CutPrefix(e.Token, "token_id:")
		if !isID {
			textTokens++
			continue
		}
		if id, err := strconv.Atoi(idText); err == nil && mismatch < 0 && i < len(c.CompletionIDs) && id != c.CompletionIDs[i] {
			mismatch = i
		}
	}
	c.Logprobs = lps
	if textTokens > 0 {
		c.issues = append(c.issues, Issue{Severity: SeverityWarn, Code: IssueTokensAsText,
			Message: fmt.Sprintf("%d logprob tokens are text, not token_id:N: start the engine with --return-tokens-as-token-ids", textTokens)})
	}
	if mismatch >= 0 {
		c.issues = append(c.issues, Issue{Severity: SeverityFatal, Code: IssueTokenMismatch,
			Message: fmt.Sprintf("logprob token %d disagrees with token_ids", mismatch)})
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
