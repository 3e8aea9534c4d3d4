package fakellm

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// newEntry starts a log entry for r.
func newEntry(r *http.Request, d *dialect, kind string) *Entry {
	return &Entry{
		Time: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Dialect: d.name, Kind: kind, Headers: headersOf(r), Outcome: OutcomePending,
	}
}

// reject logs r and answers an error in d's shape.
func (s *Server) reject(w http.ResponseWriter, r *http.Request, d *dialect, kind string, status int, outcome, msg string) {
	e := newEntry(r, d, kind)
	e.Status, e.Outcome, e.Error = status, outcome, msg
	s.log.add(e, false)
	s.logf("fakellm: #%d %s %s %s -> %d %s", e.Seq, d.name, r.Method, r.URL.Path, status, msg)
	d.writeError(w, status, msg)
}

// readBody reads the request body (gzip-decoded if so encoded).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	var rd io.Reader = http.MaxBytesReader(w, r.Body, s.opts.MaxBody)
	switch enc := strings.ToLower(r.Header.Get("Content-Encoding")); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)
		}
		defer zr.Close()
		rd = io.LimitReader(zr, s.opts.MaxBody+1)
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("unsupported Content-Encoding %q", enc)
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes: %w", s.opts.MaxBody, err)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("read body: %w", err)
	}
	if int64(len(b)) > s.opts.MaxBody {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes", s.opts.MaxBody)
	}
	return b, 0, nil
}

// parseRequest reads and parses a model request; on failure it has logged
// and answered already and returns nil.
func (s *Server) parseRequest(w http.ResponseWriter, r *http.Request, d *dialect, kind string) (*conversation, []byte) {
	body, status, err := s.readBody(w, r)
	if err == nil {
		var c *conversation
		if c, err = d.parse(r, body); err == nil {
			c.dialect = d.name
			c.inputChars = len(body)
			if c.model == "" {
				c.model = DefaultModel
			}
			return c, body
		}
		status = http.StatusBadRequest
	}
	s.reject(w, r, d, kind, status, OutcomeBadRequest, "fakellm: malformed request: "+err.Error())
	return nil, nil
}

// generate answers one model turn.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, d *dialect) {
	c, body := s.parseRequest(w, r, d, KindGenerate)
	if c == nil {
		return
	}
	e := newEntry(r, d, KindGenerate)
	e.Model, e.Stream, e.Tools, e.Messages = c.model, c.stream, c.toolNames(), len(c.messages)
	e.LastUser, e.ToolResult = c.lastUserText(), c.lastIsToolResult()
	if e.ToolResult {
		e.ToolResultText = c.lastToolResults()
	}
	e.Body = json.RawMessage(append([]byte(nil), body...))
	if !json.Valid(e.Body) {
		e.Body = nil
	}
	e = s.log.add(e, true)

	a := s.Script().decide(c, e.N)
	s.log.update(e, func(e *Entry) {
		e.Rule, e.Note, e.ReplyText = a.rule, a.note, a.text
		for _, tc := range a.calls {
			e.ReplyCalls = append(e.ReplyCalls, tool{name: tc.name, namespace: tc.namespace}.fullName()+" "+string(tc.args))
		}
	})
	finish := func(status int, outcome string, err error) {
		s.log.update(e, func(e *Entry) {
			e.Status, e.Outcome = status, outcome
			if err != nil {
				e.Error = err.Error()
			}
		})
		s.logf("fakellm: #%d n=%d %s %s stream=%v tools=%d tool_result=%v rule=%s -> %d %s",
			e.Seq, e.N, d.name, r.URL.Path, c.stream, len(c.tools), e.ToolResult, a.rule, status, outcome)
	}

	if a.delay > 0 {
		if err := s.sleep(r.Context(), a.delay); err != nil {
			finish(0, OutcomeCanceled, err)
			return
		}
	}
	if a.err != nil {
		d.writeError(w, a.err.Status, a.err.Message)
		finish(a.err.Status, OutcomeError, nil)
		return
	}
	res := &response{answer: a, id: s.ids.Add(1), created: time.Now().Unix(),
		inputTokens: max(1, c.inputChars/4), outputTokens: outputTokens(a)}
	if s.opts.Engine && d == chatDialect {
		eng, err := newEngineReply(body, a, s.opts.EngineTokensAsText)
		if err != nil {
			d.writeError(w, http.StatusBadRequest, "fakellm: "+err.Error())
			finish(http.StatusBadRequest, OutcomeBadRequest, err)
			return
		}
		res.engine, res.inputTokens, res.outputTokens = eng, len(eng.prompt), len(eng.completion)
	}
	if err := d.write(w, c, res); err != nil {
		finish(http.StatusOK, OutcomeCanceled, err)
		return
	}
	finish(http.StatusOK, OutcomeOK, nil)
}

// sleep waits d, or until the client goes away or the server closes.
func (s *Server) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("delay interrupted: %w", context.Cause(ctx))
	case <-s.done:
		return fmt.Errorf("delay interrupted: %w", ErrClosed)
	}
}

// countTokens answers count_tokens / countTokens with an estimate.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request, d *dialect) {
	c, _ := s.parseRequest(w, r, d, KindCountTokens)
	if c == nil {
		return
	}
	e := newEntry(r, d, KindCountTokens)
	e.Model, e.Tools, e.Messages, e.Status, e.Outcome = c.model, c.toolNames(), len(c.messages), http.StatusOK, OutcomeOK
	s.log.add(e, false)
	n := max(1, c.inputChars/4)
	if d.name == Gemini {
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": n})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": n})
}

// probe answers a connectivity check on the root.
func (s *Server) probe(w http.ResponseWriter, r *http.Request) {
	e := newEntry(r, guessDialect(r), KindProbe)
	e.Dialect = ""
	e.Status, e.Outcome = http.StatusOK, OutcomeOK
	s.log.add(e, false)
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "server": "fakellm"})
}

// models answers a model listing: Gemini style under /v1beta/, else an
// OpenAI-style list whose items also carry Anthropic's fields.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	gemini := strings.Contains(r.URL.Path, "/v1beta/")
	d := chatDialect
	if gemini {
		d = geminiDialect
	}
	e := newEntry(r, d, KindModels)
	e.Status, e.Outcome = http.StatusOK, OutcomeOK
	s.log.add(e, false)
	if gemini {
		var ms []map[string]any
		for _, m := range s.opts.Models {
			ms = append(ms, map[string]any{
				"name": "models/" + m, "displayName": m, "inputTokenLimit": 1000000, "outputTokenLimit": 65536,
				"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"},
			})
		}
		writeJSON(w, http.StatusOK, map[string]any{"models": ms})
		return
	}
	var ms []map[string]any
	for _, m := range s.opts.Models {
		ms = append(ms, map[string]any{
			"id": m, "object": "model", "created": 0, "owned_by": "fakellm",
			"type": "model", "display_name": m, "created_at": "2025-01-01T00:00:00Z",
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list", "data": ms, "has_more": false,
		"first_id": s.opts.Models[0], "last_id": s.opts.Models[len(s.opts.Models)-1],
	})
}
