package fakellm

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// Kinds of logged requests.
const (
	KindGenerate    = "generate"     // a model turn (scripts answer these)
	KindCountTokens = "count_tokens" // Anthropic count_tokens, Gemini countTokens
	KindModels      = "models"       // model listings
	KindProbe       = "probe"        // GET or HEAD / (connectivity checks)
	KindUnknown     = "unknown"      // no such route
)

// Outcomes of logged requests.
const (
	OutcomePending    = "pending"     // still being answered (e.g. during a delay)
	OutcomeOK         = "ok"          // answered fully
	OutcomeError      = "error"       // answered with a scripted HTTP error
	OutcomeBadRequest = "bad_request" // malformed request, answered 4xx
	OutcomeNotFound   = "not_found"   // unknown route, answered 404
	OutcomeCanceled   = "canceled"    // the client went away (or the server closed) first
)

// Entry is one logged request.
type Entry struct {
	Seq      int       `json:"seq"` // 1-based position in the log
	N        int       `json:"n"`   // generation request number (as matched by nth); 0 for others
	Time     time.Time `json:"time"`
	Method   string    `json:"method"`
	Path     string    `json:"path"`
	Query    string    `json:"query,omitempty"`
	Dialect  Dialect   `json:"dialect"`
	Kind     string    `json:"kind"`
	Model    string    `json:"model,omitempty"`
	Stream   bool      `json:"stream"`
	Tools    []string  `json:"tools,omitempty"` // offered tool names (namespaced as NS__NAME)
	Messages int       `json:"messages"`        // conversation messages, system included
	// LastUser is the last user text message.
	LastUser string `json:"last_user,omitempty"`
	// ToolResult says whether the last message was a tool result, and
	// ToolResultText is its text.
	ToolResult     bool   `json:"tool_result"`
	ToolResultText string `json:"tool_result_text,omitempty"`
	// Headers holds the headers of interest (auth, API versions, betas,
	// user agent, originator, accept), canonicalised names.
	Headers map[string]string `json:"headers,omitempty"`
	// Rule names the rule that answered ("default:..." for the default).
	Rule string `json:"rule,omitempty"`
	Note string `json:"note,omitempty"`
	// ReplyText and ReplyCalls describe the answer ("name {args}" per call;
	// namespaced as NS__NAME).
	ReplyText  string   `json:"reply_text,omitempty"`
	ReplyCalls []string `json:"reply_calls,omitempty"`
	Status     int      `json:"status"`
	Outcome    string   `json:"outcome"`
	Error      string   `json:"error,omitempty"`
	// Body is the raw request body (not served over HTTP unless asked).
	Body json.RawMessage `json:"body,omitempty"`
}

// interestingHeaders are recorded in Entry.Headers.
var interestingHeaders = []string{
	"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Anthropic-Version", "Anthropic-Beta",
	"User-Agent", "Originator", "Accept", "Content-Type",
}

func headersOf(r *http.Request) map[string]string {
	h := map[string]string{}
	for _, k := range interestingHeaders {
		if v := r.Header.Values(k); len(v) > 0 {
			s := v[0]
			for _, x := range v[1:] {
				s += ", " + x
			}
			h[k] = s
		}
	}
	return h
}

// requestLog is the server's request log. Waiters are woken on every change.
type requestLog struct {
	mu      sync.Mutex
	entries []*Entry
	gen     int           // generation requests counted for nth
	changed chan struct{} // closed and replaced on every change
}

func newRequestLog() *requestLog {
	return &requestLog{changed: make(chan struct{})}
}

// add appends e (assigning Seq, and N when counted) and returns it.
func (l *requestLog) add(e *Entry, counted bool) *Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.Seq = len(l.entries) + 1
	if counted {
		l.gen++
		e.N = l.gen
	}
	l.entries = append(l.entries, e)
	l.notifyLocked()
	return e
}

// update applies f to e under the lock and wakes waiters. Entries dropped
// by a reset are still updated but no longer listed.
func (l *requestLog) update(e *Entry, f func(*Entry)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(e)
	l.notifyLocked()
}

func (l *requestLog) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// snapshot returns copies of the entries (bodies dropped unless asked).
func (l *requestLog) snapshot(bodies bool) ([]Entry, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Entry, len(l.entries))
	for i, e := range l.entries {
		out[i] = *e
		out[i].Tools = append([]string(nil), e.Tools...)
		out[i].ReplyCalls = append([]string(nil), e.ReplyCalls...)
		h := make(map[string]string, len(e.Headers))
		for k, v := range e.Headers {
			h[k] = v
		}
		out[i].Headers = h
		if !bodies {
			out[i].Body = nil
		}
	}
	return out, l.changed
}

func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
	l.gen = 0
	l.notifyLocked()
}

// Requests returns a copy of the request log, oldest first, bodies included.
func (s *Server) Requests() []Entry {
	e, _ := s.log.snapshot(true)
	return e
}

// Reset clears the request log and restarts the nth count. The script is
// kept.
func (s *Server) Reset() { s.log.reset() }

// Wait blocks until cond holds for the request log (checked now and after
// every change), the context ends, or the server closes. It returns the
// log it last checked. Use it instead of sleeping: e.g. wait until the
// agent's second request arrived, or until a delayed request was canceled.
func (s *Server) Wait(ctx context.Context, cond func([]Entry) bool) ([]Entry, error) {
	for {
		entries, changed := s.log.snapshot(true)
		if cond(entries) {
			return entries, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return entries, ctx.Err()
		case <-s.done:
			return entries, ErrClosed
		}
	}
}
