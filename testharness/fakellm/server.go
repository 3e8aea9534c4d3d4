package fakellm

import (
	"context"
	"errors"
	"fmt"
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
	// Scripts from ParseScript are valid; check hand-built ones with
	// Script.Validate.
	Script *Script
	// Models are listed by GET .../models; default [DefaultModel].
	Models []string
	// Logf, if set, receives one line per request.
	Logf func(format string, args ...any)
	// MaxBody caps request bodies; default 64 MiB.
	MaxBody int64
	// Engine makes Chat Completions answer like a vLLM engine: token ids
	// and logprobs when the request asks for them (see EngineTokenize).
	Engine bool
	// EngineTokensAsText makes an Engine report logprob tokens as text
	// instead of "token_id:N", as vLLM does without
	// --return-tokens-as-token-ids.
	EngineTokensAsText bool
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
