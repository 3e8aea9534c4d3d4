package fakellm

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by Wait once the server is closed.
var ErrClosed = errors.New("fakellm: server closed")

// DefaultModel is listed by the model endpoints when Options.Models is
// empty and used as the model name when a request names none.
const DefaultModel = "mock-model"

// Options configure a Server. The zero value is usable.
type Options struct {
	// Script answers generation requests; nil means the default behaviour.
	Script *Script
	// Models are listed by GET .../models; default [DefaultModel].
	Models []string
	// Logf, if set, receives one line per request.
	Logf func(format string, args ...any)
	// MaxBody caps request bodies; default 64 MiB.
	MaxBody int64
}

// Server is the fake LLM: an http.Handler (usable with any listener or
// httptest) plus Start/Close helpers that run it on 127.0.0.1.
//
// Routes are matched on the path's suffix, so a base URL may carry any
// prefix (e.g. http://127.0.0.1:P/agent-a/v1 to tell agents apart in the
// log): .../messages and .../messages/count_tokens (Anthropic),
// .../chat/completions (OpenAI chat), .../responses (OpenAI Responses),
// .../models/{model}:generateContent | :streamGenerateContent |
// :countTokens (Gemini), GET .../models (model listing; Gemini style under
// /v1beta/). Control routes live under /_fakellm/.
type Server struct {
	opts Options
	log  *requestLog
	ids  atomic.Int64

	mu     sync.Mutex
	script *Script
	srv    *http.Server
	url    string
	served chan struct{} // closed when the Serve goroutine returns

	done      chan struct{} // closed by Close: ends delays and Wait
	closeOnce sync.Once
}

// New returns a Server with the given options. It does not listen until
// Start (or until it is mounted as a handler elsewhere).
func New(opts Options) *Server {
	if len(opts.Models) == 0 {
		opts.Models = []string{DefaultModel}
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = 64 << 20
	}
	return &Server{opts: opts, log: newRequestLog(), script: opts.Script, done: make(chan struct{})}
}

// Start listens on addr ("" means 127.0.0.1:0) and serves in the
// background until Close. It returns the base URL, e.g.
// http://127.0.0.1:43121.
func (s *Server) Start(addr string) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("fakellm: listen: %w", err)
	}
	return s.Serve(ln)
}

// Serve serves on ln in the background until Close and returns the base
// URL. A Server serves at most one listener.
func (s *Server) Serve(ln net.Listener) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		ln.Close()
		return "", ErrClosed
	default:
	}
	if s.srv != nil {
		ln.Close()
		return "", errors.New("fakellm: already serving")
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	s.url = "http://" + ln.Addr().String()
	s.served = make(chan struct{})
	srv, served := s.srv, s.served
	go func() {
		defer close(served)
		srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s.url, nil
}

// URL returns the base URL once Start or Serve has run, else "".
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Close ends pending delays and waits, stops serving and closes every
// connection. It is idempotent and safe without Start.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	s.mu.Lock()
	srv, served := s.srv, s.served
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	if err != nil {
		err = srv.Close()
	}
	<-served
	if err != nil {
		return fmt.Errorf("fakellm: close: %w", err)
	}
	return nil
}

// SetScript replaces the script (nil means the default behaviour). It
// validates first and keeps the old script on error.
func (s *Server) SetScript(sc *Script) error {
	if err := sc.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	s.script = sc
	s.mu.Unlock()
	return nil
}

// Script returns the current script (nil for the default behaviour).
func (s *Server) Script() *Script {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.script
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if strings.HasPrefix(p, "/_fakellm/") {
		s.control(w, r)
		return
	}
	if d, kind := route(r); d != nil {
		switch {
		case r.Method != http.MethodPost:
			s.reject(w, r, d, KindUnknown, http.StatusMethodNotAllowed, OutcomeNotFound,
				fmt.Sprintf("method %s not allowed on %s", r.Method, p))
		case kind == KindCountTokens:
			s.countTokens(w, r, d)
		default:
			s.generate(w, r, d)
		}
		return
	}
	if p == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		s.probe(w, r) // connectivity checks (Claude Code sends HEAD /)
		return
	}
	if strings.HasSuffix(p, "/models") && r.Method == http.MethodGet {
		s.models(w, r)
		return
	}
	d := guessDialect(r)
	s.reject(w, r, d, KindUnknown, http.StatusNotFound, OutcomeNotFound, "fakellm: no route for "+r.Method+" "+p)
}

// route picks the dialect and kind for a model route, or nil.
func route(r *http.Request) (*dialect, string) {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/messages/count_tokens"):
		return anthropicDialect, KindCountTokens
	case strings.HasSuffix(p, "/messages"):
		return anthropicDialect, KindGenerate
	case strings.HasSuffix(p, "/chat/completions"):
		return chatDialect, KindGenerate
	case strings.HasSuffix(p, "/responses"):
		return responsesDialect, KindGenerate
	}
	if _, method, ok := geminiPath(p); ok {
		switch method {
		case "generateContent", "streamGenerateContent":
			return geminiDialect, KindGenerate
		case "countTokens":
			return geminiDialect, KindCountTokens
		}
	}
	return nil, ""
}

// guessDialect picks the error shape for an unknown route.
func guessDialect(r *http.Request) *dialect {
	switch {
	case strings.Contains(r.URL.Path, "/v1beta/") || strings.Contains(r.URL.Path, ":") || r.Header.Get("X-Goog-Api-Key") != "":
		return geminiDialect
	case r.Header.Get("Anthropic-Version") != "" || strings.Contains(r.URL.Path, "/messages"):
		return anthropicDialect
	}
	return chatDialect
}

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

// control serves /_fakellm/: GET requests[?bodies=1], POST reset,
// GET|PUT|POST script, GET health.
func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	switch name := strings.TrimPrefix(r.URL.Path, "/_fakellm/"); {
	case name == "requests" && r.Method == http.MethodGet:
		entries, _ := s.log.snapshot(r.URL.Query().Get("bodies") != "")
		writeJSON(w, http.StatusOK, entries)
	case name == "reset" && r.Method == http.MethodPost:
		s.Reset()
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	case name == "script" && r.Method == http.MethodGet:
		sc := s.Script()
		if sc == nil {
			sc = &Script{Rules: []Rule{}}
		}
		writeJSON(w, http.StatusOK, sc)
	case name == "script" && (r.Method == http.MethodPut || r.Method == http.MethodPost):
		body, status, err := s.readBody(w, r)
		if err != nil {
			writeJSON(w, status, map[string]any{"error": err.Error()})
			return
		}
		sc, err := ParseScript(body)
		if err == nil {
			err = s.SetScript(sc)
		}
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "rules": len(sc.Rules)})
	case name == "health" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "fakellm: no control route " + r.Method + " " + r.URL.Path})
	}
}
