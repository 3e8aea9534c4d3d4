package gateway

import (
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/wire"
)

// UpstreamKind says what the gateway forwards calls to.
type UpstreamKind string

// Upstream kinds.
const (
	// UpstreamEngine is a token-returning inference engine (vLLM or SGLang)
	// serving OpenAI-compatible Chat Completions. Every agent dialect is
	// translated to it; calls are made non-streaming with return_token_ids
	// and logprobs injected, and recorded as training traffic.
	UpstreamEngine UpstreamKind = "engine"
	// UpstreamPassthrough is a hosted provider speaking the agent's own
	// dialect (Upstream.Dialect). Requests are forwarded unmodified but for
	// the key swap and Upstream.Model (and the provider's network tools
	// left out without Options.ProviderNetwork), answers
	// streamed back unmodified, and calls recorded as
	// evaluation traffic: no token ids, never training data.
	UpstreamPassthrough UpstreamKind = "passthrough"
)

// Upstream is where calls go and with which credential.
type Upstream struct {
	// Kind is the upstream's kind; "" means UpstreamEngine.
	Kind UpstreamKind
	// URL is the upstream's base URL. For an engine it includes the version
	// prefix, e.g. http://127.0.0.1:8000/v1 (the chat endpoint is URL +
	// "/chat/completions"); for a passthrough it is the provider's root, e.g.
	// https://api.anthropic.com, and the agent's path is appended.
	URL string
	// APIKey is the real credential, sent upstream in the dialect's place:
	// a bearer token (engine, OpenAI), x-api-key (Anthropic) or
	// x-goog-api-key (Gemini). It stays in the daemon: the agent only ever
	// holds the gateway's Key.
	APIKey string
	// Dialect is the one agent dialect a passthrough upstream speaks
	// (openai-chat, openai-responses, anthropic or gemini); requests in
	// another are refused. Unused for an engine.
	Dialect Dialect
	// Model is the model name sent upstream in place of whatever the agent
	// asks for ("" keeps the agent's).
	Model string
	// Timeout bounds one upstream call; default 10 minutes.
	Timeout time.Duration
}

// Budgets limit an episode's model use. Zero means unlimited.
type Budgets struct {
	// MaxModelCalls is the number of model calls allowed per episode.
	MaxModelCalls int
	// MaxOutputTokens is the number of completion tokens allowed per episode.
	MaxOutputTokens int
	// MaxTurnModelCalls is the number of model calls allowed per turn.
	MaxTurnModelCalls int
	// MaxTurnOutputTokens is the number of completion tokens allowed per turn.
	MaxTurnOutputTokens int
	// MaxTokens caps the max_tokens of each request (an agent asking for
	// more, or for none, gets this); it is also lowered to what remains of
	// the output-token budgets.
	MaxTokens int
}

// Options configure a Gateway.
type Options struct {
	// ProviderNetwork lets the agent use a passthrough provider's own
	// tools that reach the network for it (web search, web fetch, remote
	// MCP servers). False, the zero value, leaves them out of the agent's
	// requests: they would carry a sandboxed harness past its network
	// boundary, with the operator's key.
	ProviderNetwork bool
	// EpisodeID names the episode in the export and the logs.
	EpisodeID string
	// Upstream is where calls go.
	Upstream Upstream
	// Budgets limit the episode's model use.
	Budgets Budgets
	// Sampling is the sampling pin of the episode's engine calls (nil:
	// none, the agent's own parameters are sent); SetSampling changes it.
	// A passthrough ignores it.
	Sampling *Sampling
	// Policy is the policy version the calls are stamped with (nil:
	// always 0): the session's, whose parent is the daemon's.
	Policy *PolicyVersion
	// FullTokenIDs makes every llm_response carry the call's full prompt
	// ids; by default a call extending an earlier one carries only the ids
	// after that parent's prompt+completion (SetFullTokenIDs changes it).
	FullTokenIDs bool
	// OnEvent receives an llm_request and an llm_response event (origin
	// gateway, stamped with the running turn) for every model call. It is
	// called from the request's goroutine, possibly concurrently for
	// concurrent calls, and must not block for long.
	OnEvent func(wire.Event)
	// OnBudget is called when a call is refused because a budget ran out;
	// the session turns it into a terminal observation (err.FailureType()).
	OnBudget func(err *BudgetError)
	// Logger receives the gateway's records; nil discards them.
	Logger *slog.Logger
	// Key is the per-episode key the agent must present; "" makes a random
	// one. It is never the upstream's key.
	Key string
	// MaxRequestBody caps an agent's request body; default 32 MiB.
	MaxRequestBody int64
	// MaxResponseBody caps an upstream's response body; default 64 MiB.
	MaxResponseBody int64
	// HTTPClient makes upstream calls; nil means a client shared by all
	// gateways (one connection pool for the daemon).
	HTTPClient *http.Client
	// Door bounds the agent's connections to the gateway, across all its
	// listeners: zero fields mean doorcap's defaults (256 connections, 2
	// minutes idle, 10 s to send a header, 30 s to send a body), and the
	// bytes of the request bodies it holds at once, Door.BodyBytes: zero
	// means twice MaxRequestBody (64 MiB); a body that does not fit is
	// refused with 503 (Anthropic: 529) naming the budget.
	Door doorcap.Bounds

	// History, when set, makes the new gateway (a fork's) start with these
	// calls as its own: the same call indices (its own continue after
	// them), filed in the prefix index so that a later call extending one
	// of them gets it as parent, and in the Export, whose calls and chain
	// spans mark them inherited. Their llm_request and llm_response events
	// are not emitted again (a later call's llm_response names its
	// inherited parent but carries its full prompt ids, since this
	// gateway's consumer never got the parent's). They count against the
	// per-episode budgets (MaxModelCalls, MaxOutputTokens) as they did in
	// the parent, because a fork continues the parent's trajectory, and a
	// budget bounds a trajectory: forking must not be a way around it. The
	// per-turn budgets start afresh at the next SetTurn, as in any turn.
	// The History's rewards and the environment's events are carried too.
	History *History
	// Replay, with History, answers the next calls from History's
	// recorded answers in order (those of one turn in any order, as
	// concurrent calls arrive), byte for byte as the parent's agent got
	// them, without an upstream call; see replay.go for what a request is
	// matched on. A request unlike the recorded one is a divergence
	// (OnDivergence, Diverged). Once the answers are used up the gateway
	// goes live. New refuses a replay of a History whose answers were not
	// all kept (History.Replayable).
	Replay bool
	// OnDivergence is called once, on the first divergence of a replay,
	// from the request's goroutine.
	OnDivergence func(Divergence)
	// MaxRecordedAnswerBytes caps the answers the gateway keeps for a
	// later replay (History), inherited ones included; default 64 MiB,
	// negative keeps none. Past it, History still holds every call for the
	// chains, but a replay of the calls after the cap is refused.
	MaxRecordedAnswerBytes int64
}

const (
	defaultMaxRequestBody  = 32 << 20
	defaultMaxResponseBody = 64 << 20
	defaultUpstreamTimeout = 10 * time.Minute
)

// sharedClient is the default upstream client: one pool for every gateway
// of the daemon, so that an open gateway costs no connections of its own.
// Its dials refuse a descriptor in the daemon's reserve, as the doors'
// own connections do (doorcap.GuardDial). It never follows a redirect: a
// model API does not redirect a POST, and net/http would re-send the call,
// body and real key (x-api-key and x-goog-api-key even to another host) to
// wherever Location points; the 3xx is the upstream's answer.
var sharedClient = &http.Client{CheckRedirect: noRedirects, Transport: &http.Transport{
	Proxy:               nil, // upstreams are configured explicitly, never via the environment
	DialContext:         doorcap.GuardDial((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext),
	ForceAttemptHTTP2:   true,
	MaxIdleConnsPerHost: 64,
	IdleConnTimeout:     90 * time.Second,
}}

// noRedirects makes a client return a redirect as the answer.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
