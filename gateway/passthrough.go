package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/harnessd/harnessd/gateway/dialect"
	"github.com/harnessd/harnessd/wire"
)

// ErrEvaluationTraffic is Export's error for an episode whose upstream is a
// passthrough provider: its calls carry no token ids and never make
// training data.
var ErrEvaluationTraffic = errors.New("gateway: evaluation traffic (passthrough upstream) has no training export")

// forwardedHeaders are the agent's request headers a passthrough forwards;
// credentials are never among them.
var forwardedHeaders = []string{"Content-Type", "Accept", "Anthropic-Version", "Anthropic-Beta", "Openai-Beta", "User-Agent"}

// passthrough forwards a request of the provider's own dialect to the
// provider's root + the route's path, with the real key swapped in, streams the answer back as it comes, and records
// the call as evaluation traffic.
func (g *Gateway) passthrough(w http.ResponseWriter, r *http.Request, d dialect.Translator, rt dialect.Route, req *dialect.Request, body []byte, rp *requestPrint) *call {
	if d.Name() != g.opts.Upstream.Dialect {
		d.WriteError(w, failure{Status: http.StatusBadRequest, Kind: failInvalid, Message: fmt.Sprintf("gateway: this episode's model speaks %s, not %s", g.opts.Upstream.Dialect, d.Name())})
		return nil
	}
	adm := g.admit()
	g.emitRequest(adm.turn, &wire.LLMRequest{Model: req.Model, Messages: req.Messages, CallIndex: adm.index, Dialect: string(d.Name()),
		Stream: req.Stream, Tools: req.Tools, Sampling: req.Sampling, EffectiveSampling: req.Sampling})
	rec := &call{index: adm.index, turn: adm.turn, dialect: d.Name(), traffic: TrafficEvaluation, offersTools: req.OffersTools(),
		print: rp, refused: adm.refused != nil}
	fail := func(f failure) {
		rec.status, rec.err = f.Status, f.Message
		g.record(rec)
		g.emit(adm.turn, &wire.LLMResponse{CallIndex: adm.index, Dialect: string(d.Name()), Traffic: TrafficEvaluation,
			Status: f.Status, Error: f.Message})
		d.WriteError(w, f)
	}
	if adm.refused != nil {
		fail(failure{Status: http.StatusTooManyRequests, Kind: failBudget, Message: "gateway: " + adm.refused.Error()})
		if g.opts.OnBudget != nil {
			g.opts.OnBudget(adm.refused)
		}
		return rec
	}
	path, body, left, refused := g.passthroughRequest(d.Name(), rt, body)
	if refused != nil {
		fail(*refused)
		return rec
	}
	if len(left) > 0 {
		g.log.Debug("left the provider's network tools out of the agent's request: the harness has no network (network.egress host, or isolation process, gives it them)",
			"call_index", adm.index, "left_out", left)
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.opts.Upstream.Timeout)
	defer cancel()
	// Only the route's own path and the query parameters its dialect uses
	// go upstream: never the agent's other parameters, nor its key.
	url := strings.TrimRight(g.opts.Upstream.URL, "/") + path
	if enc := rt.Query.Encode(); enc != "" {
		url += "?" + enc
	}
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		fail(failure{Status: http.StatusBadGateway, Kind: failUpstream, Message: "gateway: upstream request: " + err.Error()})
		return rec
	}
	for _, h := range forwardedHeaders {
		if v := r.Header.Get(h); v != "" {
			up.Header.Set(h, v)
		}
	}
	up.Header.Set("Accept-Encoding", "identity")
	if k := g.opts.Upstream.APIKey; k != "" {
		switch d.Name() {
		case DialectAnthropic:
			up.Header.Set("X-Api-Key", k)
		case DialectGemini:
			up.Header.Set("X-Goog-Api-Key", k)
		default:
			up.Header.Set("Authorization", "Bearer "+k)
		}
	}
	start := time.Now()
	resp, err := g.client.Do(up)
	if err != nil {
		fail(*transportFailure(ctx, err))
		return rec
	}
	defer resp.Body.Close()
	for _, h := range []string{"Content-Type", "Retry-After", "Request-Id", "X-Request-Id"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	// Copy as it comes (flushing for streams), keeping a bounded copy.
	var kept bytes.Buffer
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	over := false
	var copyErr error
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if int64(kept.Len()+n) > g.opts.MaxResponseBody {
				over = true
				copyErr = fmt.Errorf("upstream answer over %d bytes", g.opts.MaxResponseBody)
				break
			}
			kept.Write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				copyErr = fmt.Errorf("agent went away: %w", werr)
				break
			}
			rc.Flush()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				copyErr = fmt.Errorf("upstream answer cut: %w", err)
			}
			break
		}
	}
	rec.latencyMS = float64(time.Since(start).Microseconds()) / 1000
	latency := rec.latencyMS
	ev := &wire.LLMResponse{CallIndex: adm.index, Dialect: string(d.Name()), Traffic: TrafficEvaluation, LatencyMS: &latency}
	if resp.StatusCode != http.StatusOK {
		ev.Status, ev.Error = resp.StatusCode, "upstream answered "+resp.Status+": "+upstreamMessage(kept.Bytes())
		rec.status, rec.err = ev.Status, ev.Error
	} else if copyErr != nil {
		ev.Error, rec.err = "gateway: "+copyErr.Error(), "gateway: "+copyErr.Error()
	}
	if !over {
		ev.Content = passthroughContent(kept.Bytes())
	}
	u := passthroughUsage(kept.Bytes())
	rec.usage, ev.Usage, rec.spent = u, &u, u.CompletionTokens
	g.record(rec)
	g.spend(adm.turn, u.CompletionTokens)
	g.emit(adm.turn, ev)
	return rec
}

// passthroughContent is a provider's answer as recorded: the JSON body, or
// the data of each SSE event as a list.
func passthroughContent(b []byte) any {
	t := bytes.TrimSpace(b)
	if json.Valid(t) {
		return json.RawMessage(bytes.Clone(t))
	}
	var events []json.RawMessage
	forSSEData(b, func(data []byte) {
		if json.Valid(data) {
			events = append(events, json.RawMessage(bytes.Clone(data)))
		}
	})
	if events == nil {
		return string(b)
	}
	return events
}

// passthroughUsage finds the token usage a provider reported, in any
// dialect's field names, in a JSON body or the last SSE event carrying one:
// the one place that knows the providers' spellings (llm_response carries
// it as wire.TokenUsage, in the OpenAI spelling).
func passthroughUsage(b []byte) wire.TokenUsage {
	var u wire.TokenUsage
	read := func(data []byte) {
		var v struct {
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				InputTokens      int `json:"input_tokens"`
				OutputTokens     int `json:"output_tokens"`
			} `json:"usage"`
			Response *struct {
				Usage *struct {
					InputTokens  int `json:"input_tokens"`
					OutputTokens int `json:"output_tokens"`
				} `json:"usage"`
			} `json:"response"`
			UsageMetadata *struct {
				PromptTokenCount     int `json:"promptTokenCount"`
				CandidatesTokenCount int `json:"candidatesTokenCount"`
			} `json:"usageMetadata"`
		}
		if json.Unmarshal(data, &v) != nil {
			return
		}
		switch {
		case v.Usage != nil:
			u.PromptTokens = max(u.PromptTokens, v.Usage.PromptTokens+v.Usage.InputTokens)
			u.CompletionTokens = max(u.CompletionTokens, v.Usage.CompletionTokens+v.Usage.OutputTokens)
		case v.Response != nil && v.Response.Usage != nil:
			u.PromptTokens, u.CompletionTokens = v.Response.Usage.InputTokens, v.Response.Usage.OutputTokens
		case v.UsageMetadata != nil:
			u.PromptTokens, u.CompletionTokens = v.UsageMetadata.PromptTokenCount, v.UsageMetadata.CandidatesTokenCount
		}
	}
	if t := bytes.TrimSpace(b); json.Valid(t) {
		read(t)
	} else {
		forSSEData(b, read)
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// forSSEData calls f with the data of each "data:" line of an SSE body.
func forSSEData(b []byte, f func(data []byte)) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			f(bytes.TrimSpace(data))
		}
	}
}
