package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/harnessd/harnessd/gateway/dialect"
	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/internal/httpgroup"
	"github.com/harnessd/harnessd/wire"
)

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("gateway: closed")

// Gateway is one episode's model endpoint. Create it with New, hand it
// listeners with Serve, point the agent at it with Key, and Close it when
// the episode ends. All methods are safe for concurrent use.
type Gateway struct {
	opts     Options
	log      *slog.Logger
	key      []byte
	client   *http.Client
	upstream string // the engine's chat completions URL

	mu       sync.Mutex
	turn     int
	sampling *Sampling       // the pin of later calls (SetSampling), nil: none
	calls    []*call         // every recorded call, in the order they ended
	byTurn   map[int][]*call // the recorded calls by turn
	chains   prefixIndex     // the trainable calls and their parents
	next     int             // the last call index handed out
	usage    usage           // per-episode counters
	turnUse  usage           // per-turn counters
	budget   *BudgetError
	rewards  map[int]float64
	events   []EnvEvent // the environment's queue events noted (NoteEvent)
	fullIDs  bool       // llm_responses carry full prompt ids (SetFullTokenIDs)

	// answerBytes is what the kept answers hold (inherited ones too);
	// answersFull says the cap was passed and no more are kept.
	answerBytes int64
	answersFull bool
	// replay is the inherited calls a replay answers from (nil: no
	// replay), replayed which of them were answered, replayPos the first
	// not answered, diverged the replay's divergence.
	replay    []*call
	replayed  []bool
	replayPos int
	diverged  *Divergence
	// toolsCanon caches the canonical hash of tool lists (replay.go).
	toolsCanon map[uint64]uint64

	// emitMu orders the llm_responses of trainable calls: a call's event
	// names its parent's as the base of its prompt ids only once the
	// parent's is emitted (call.emitted, guarded by emitMu).
	emitMu sync.Mutex
	// lastReq is the llm_request emitted last (guarded by emitMu): the
	// base the next one's messages are sent as a delta from.
	lastReq wire.RequestDeltas
	// memo remembers the Chat Completions request decoded last, so that
	// the next one of the conversation is decoded by what is new.
	memo dialect.Memo
	// promptIDs remembers the engine's prompt ids answered last, so that
	// the next answer's are parsed by what is new.
	promptIDs idsMemo
	// lastPrint is the messages printed last and their hashes (replay.go).
	lastPrint printedMessages

	servers httpgroup.Group // its Serve loops
	bodies  *doorcap.Budget // the agent's request bodies in flight (Options.Door.BodyBytes)

	refusedOnce atomic.Bool // a request on no model route was refused (and logged as a warning)
}

// usage counts model use against the budgets.
type usage struct {
	calls        int
	outputTokens int
}

// New returns a gateway for one episode. It does not listen until Serve.
func New(opts Options) (*Gateway, error) {
	if opts.Upstream.Kind == "" {
		opts.Upstream.Kind = UpstreamEngine
	}
	switch opts.Upstream.Kind {
	case UpstreamEngine:
	case UpstreamPassthrough:
		switch opts.Upstream.Dialect {
		case DialectChat, DialectResponses, DialectAnthropic, DialectGemini:
		default:
			return nil, fmt.Errorf("gateway: passthrough upstream needs a dialect, not %q", opts.Upstream.Dialect)
		}
	default:
		return nil, fmt.Errorf("gateway: upstream kind %q is not supported", opts.Upstream.Kind)
	}
	if opts.Upstream.URL == "" {
		return nil, errors.New("gateway: no upstream URL")
	}
	if !strings.HasPrefix(opts.Upstream.URL, "http://") && !strings.HasPrefix(opts.Upstream.URL, "https://") {
		return nil, fmt.Errorf("gateway: upstream URL %q is not http(s)", opts.Upstream.URL)
	}
	if opts.Upstream.Timeout <= 0 {
		opts.Upstream.Timeout = defaultUpstreamTimeout
	}
	if opts.MaxRequestBody <= 0 {
		opts.MaxRequestBody = defaultMaxRequestBody
	}
	if opts.MaxResponseBody <= 0 {
		opts.MaxResponseBody = defaultMaxResponseBody
	}
	b := opts.Budgets
	if b.MaxModelCalls < 0 || b.MaxOutputTokens < 0 || b.MaxTurnModelCalls < 0 || b.MaxTurnOutputTokens < 0 || b.MaxTokens < 0 {
		return nil, errors.New("gateway: budgets must not be negative")
	}
	key := opts.Key
	if key == "" {
		var raw [24]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return nil, fmt.Errorf("gateway: key: %w", err)
		}
		key = "sk-harnessd-" + hex.EncodeToString(raw[:])
	}
	if err := opts.Sampling.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: sampling: %w", err)
	}
	if opts.Upstream.APIKey != "" && key == opts.Upstream.APIKey {
		return nil, errors.New("gateway: the agent's key must not be the upstream's key")
	}
	if opts.MaxRecordedAnswerBytes == 0 {
		opts.MaxRecordedAnswerBytes = defaultMaxRecordedAnswerBytes
	}
	if opts.Replay {
		if opts.History == nil {
			return nil, errors.New("gateway: a replay needs a History")
		}
		if err := opts.History.Replayable(); err != nil {
			return nil, fmt.Errorf("gateway: cannot replay: %w", err)
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	client := opts.HTTPClient
	if client == nil {
		client = sharedClient
	}
	log = log.With("component", "gateway", "episode_id", opts.EpisodeID)
	g := &Gateway{
		opts: opts, log: log,
		key: []byte(key), client: client,
		upstream: strings.TrimRight(opts.Upstream.URL, "/") + "/chat/completions",
		turn:     1,
		sampling: opts.Sampling,
		fullIDs:  opts.FullTokenIDs,
		servers:  httpgroup.Group{Closed: ErrClosed, Limit: doorcap.NewLimit(opts.Door, "model gateway", log)},
		bodies:   doorcap.NewBudget(bodyBudget(opts), opts.Door.BodyReadTimeout, "model gateway", log),
	}
	g.adopt(opts.History)
	return g, nil
}

// Key returns the per-episode key the agent is given: as a bearer token,
// x-api-key, x-goog-api-key or Gemini's ?key=. Any other credential gets
// 401.
func (g *Gateway) Key() string { return string(g.key) }

// SetTurn stamps later calls with turn n (1-based) and starts the per-turn
// budgets afresh.
func (g *Gateway) SetTurn(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n != g.turn {
		g.turnUse = usage{}
	}
	g.turn = n
}

// SetSampling pins the sampling of later calls (a reset's own pin): nil
// sends the agent's own, as the gateway always did. It does not change
// calls already admitted.
func (g *Gateway) SetSampling(s *Sampling) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sampling = s
}

// SetFullTokenIDs makes the events of later calls whole (full true) or
// deltas from the call before (delta.go), and starts the deltas afresh:
// no event emitted before it is a base of a later one, so an episode
// prepared ahead, whose events were dropped until it was taken, sends no
// delta from them. The export always has the full chains.
func (g *Gateway) SetFullTokenIDs(full bool) {
	g.emitMu.Lock()
	defer g.emitMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fullIDs = full
	for _, c := range g.calls {
		c.emitted = false
	}
	g.lastReq = wire.RequestDeltas{}
}

// SetReward records the environment's reward for turn n, for the export.
// The gateway never makes rewards up: turns without one have none.
func (g *Gateway) SetReward(turn int, reward float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rewards == nil {
		g.rewards = map[int]float64{}
	}
	g.rewards[turn] = reward
}

// BudgetExhausted returns the first budget refusal of the episode, or nil.
func (g *Gateway) BudgetExhausted() *BudgetError {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.budget
}

// Serve serves the gateway on ln in the background until Close. It may be
// called more than once (a loopback listener and one inside a sandbox's
// network namespace); the gateway closes each listener on Close. All its
// listeners together hold at most Options.Door.MaxConns connections, idle
// ones close after its idle timeout, and an answer to a request without
// the key (GET / included) closes its connection.
func (g *Gateway) Serve(ln net.Listener) error {
	return g.servers.Serve(httpgroup.NewServer(http.HandlerFunc(g.serveDoor), g.opts.Door, g.log), ln, g.log, "gateway")
}

// serveDoor serves r, closing the connection after answering a request
// that does not hold the key: keyless requests cost no kept connection.
func (g *Gateway) serveDoor(w http.ResponseWriter, r *http.Request) {
	if !g.authorized(r) {
		w.Header().Set("Connection", "close")
	}
	g.ServeHTTP(w, r)
}

// DoorStats counts the agent's connections to the gateway: held now, and
// refused at its cap or at the daemon's descriptor reserve.
func (g *Gateway) DoorStats() doorcap.Stats { return g.servers.Limit.Stats() }

// BodyStats counts the agent's request bodies against the door's body
// budget: the bytes held now, and the bodies refused for want of room or
// dropped at the read timeout.
func (g *Gateway) BodyStats() doorcap.BudgetStats { return g.bodies.Stats() }

// bodyBudget is the bytes of request bodies the door holds at once:
// Options.Door.BodyBytes, by default twice MaxRequestBody (64 MiB), so
// that a body at the cap always fits beside the few smaller ones an agent
// sends at once (its main loop, subagents, a count_tokens).
func bodyBudget(opts Options) int64 {
	if opts.Door.BodyBytes > 0 {
		return opts.Door.BodyBytes
	}
	return 2 * opts.MaxRequestBody
}

// Close stops serving: it waits for calls in flight until ctx ends, then
// drops the connections. It is idempotent.
func (g *Gateway) Close(ctx context.Context) error {
	if err := g.servers.Shutdown(ctx); err != nil {
		return fmt.Errorf("gateway: close: %w", err)
	}
	return nil
}

// emit hands e to OnEvent, stamped with turn.
func (g *Gateway) emit(turn int, p wire.Payload) {
	if g.opts.OnEvent == nil {
		return
	}
	e := wire.New(wire.OriginGateway, p)
	e.Turn = turn
	g.opts.OnEvent(e)
}
