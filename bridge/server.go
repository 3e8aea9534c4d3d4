package bridge

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harnessd/harnessd/internal/doorcap"
	"github.com/harnessd/harnessd/internal/httpgroup"
	"github.com/harnessd/harnessd/wire"
)

// Defaults for ServerOptions fields left zero.
const (
	DefaultMaxBodyBytes = 8 << 20
	// EndpointPath is the path of the MCP endpoint.
	EndpointPath = "/mcp"
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// OnCall and OnResult observe every tools/call the Server serves: the
	// authoritative record of the harness's environment tool use. They run
	// on the call's goroutine, concurrently for concurrent calls, and must
	// not block long. Calls refused before reaching a tool (unknown or
	// hidden names, bad tokens) are not reported.
	OnCall func(CallStart)
	// OnResult: see OnCall. It fires once per OnCall, also for failures.
	OnResult func(CallEnd)
	// CallTimeout bounds each call; zero means DefaultCallTimeout, negative
	// means none (sources may still have their own).
	CallTimeout time.Duration
	// MaxBodyBytes bounds a request body; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// SessionIdleTTL forgets MCP sessions idle this long (the client must
	// initialize again); zero keeps them until Close or until MaxSessions
	// needs room. It is mcp-go's idle sweep; memory is bounded without it.
	SessionIdleTTL time.Duration
	// MaxSessions bounds the MCP sessions kept at once; zero means
	// DefaultMaxSessions (64). An initialize beyond it ends the least
	// recently used session with no request in flight, or, when every
	// session has one, is refused with 503 and a JSON-RPC error naming
	// the cap (X-Harnessd-Refused: bridge_session_cap).
	MaxSessions int
	// Logger receives the server's records (mcp-go's per-request lines at
	// Debug); nil means slog.Default().
	Logger *slog.Logger
	// Listener, when set, is served on instead of a fresh port on
	// 127.0.0.1 (a sandbox's door, open inside its network namespace);
	// the Server closes it. URL names its address.
	Listener net.Listener
	// Door bounds the harness's connections to the Server: zero fields
	// mean doorcap's defaults (256 connections, 2 minutes idle, 10 s to
	// send a header, 30 s to send a body), and the bytes of the POST
	// bodies it holds at once, Door.BodyBytes: zero means twice
	// MaxBodyBytes (16 MiB); a body that does not fit is refused with 503
	// naming the budget (X-Harnessd-Refused: door_body_budget).
	Door doorcap.Bounds

	// Record keeps every served call's ToolRecord for Records (record.go),
	// up to MaxRecordBytes (zero means DefaultMaxRecordBytes) of names,
	// arguments and results as JSON, each call counting 256 bytes more for
	// what it holds in Go objects.
	Record         bool
	MaxRecordBytes int64
	// Replay, when not empty, answers the Server's next calls from these
	// records in order, without calling the tools, while each call has the
	// recorded name and arguments (decoded JSON equality); then calls go
	// to the tools. A call unlike the recorded one gets an error result,
	// and so does every call after it.
	Replay []ToolRecord
	// ReplayWindow is how many unanswered records a replayed call may be
	// matched against, the earliest first (parallel tool calls arrive in
	// any order); zero means DefaultReplayWindow, 1 strict order.
	ReplayWindow int
	// OnDivergence is called once, on the replay's first divergence, from
	// the call's goroutine.
	OnDivergence func(wire.Divergence)
	// Inherit, with Record, starts the record with these calls, served
	// elsewhere (a fork's sibling that did not replay them carries its
	// parent's record, so that a later replay fork of it has them).
	Inherit []ToolRecord
}

// CallStart describes a tool call as it starts.
type CallStart struct {
	// ID is unique within the Server.
	ID string
	// Served is the name the harness called; Upstream the name at Source.
	Served, Upstream, Source string
	// Arguments are the raw JSON arguments as received (empty for none).
	Arguments json.RawMessage
	// Time is when the call started.
	Time time.Time
	// Replayed says the call was answered from ServerOptions.Replay: no
	// tool ran.
	Replayed bool
}

// CallEnd describes a finished tool call.
type CallEnd struct {
	CallStart
	// Result is what the harness received. When Err is set it is an error
	// result (IsError) carrying Err's text.
	Result *mcp.CallToolResult
	// Err is why the call failed at the bridge or the tool server (not set
	// for a tool's own error result).
	Err error
	// Duration is the call's wall time at the bridge.
	Duration time.Duration
}

// Server is the loopback streamable-HTTP MCP endpoint a harness talks to. It
// serves the catalog's visible tools to clients holding its bearer token.
type Server struct {
	cat        *Catalog
	opts       ServerOptions
	log        *slog.Logger
	timeout    time.Duration
	maxBody    int64
	token      string
	tokenSum   [32]byte
	url        string
	mcp        *server.MCPServer
	streamable *server.StreamableHTTPServer
	handler    http.Handler // the guarded MCP endpoint the door serves
	servers    httpgroup.Group
	bodies     *doorcap.Budget // the harness's POST bodies in flight
	sessions   *sessions       // the live MCP sessions, the streamable server's manager
	cancelBase context.CancelFunc
	idPrefix   string
	seq        atomic.Int64
	closeOnce  sync.Once
	closeErr   error
	rec        *callRecord
}

// Serve starts a Server for cat on 127.0.0.1 with an OS-chosen port (or
// on opts.Listener) and a fresh random token, so that a client of an earlier Server (an earlier
// episode) is locked out. The Server does not own the catalog's sources.
func Serve(cat *Catalog, opts ServerOptions) (*Server, error) {
	if cat == nil {
		return nil, errors.New("bridge: Serve needs a catalog")
	}
	log := orDefault(opts.Logger).With("component", "bridge")
	s := &Server{cat: cat, opts: opts, log: log, timeout: callTimeout(opts.CallTimeout),
		maxBody: opts.MaxBodyBytes, rec: newCallRecord(opts)}
	s.servers.Limit = doorcap.NewLimit(opts.Door, bridgeDoor, log)
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	budget := opts.Door.BodyBytes
	if budget <= 0 {
		budget = 2 * s.maxBody
	}
	s.bodies = doorcap.NewBudget(budget, opts.Door.BodyReadTimeout, bridgeDoor, log)
	s.sessions = newSessions(opts.MaxSessions, s.endSession, log)
	var tok [32]byte
	var idp [4]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, fmt.Errorf("bridge: token: %w", err)
	}
	rand.Read(idp[:])
	s.token = base64.RawURLEncoding.EncodeToString(tok[:])
	s.tokenSum = sha256.Sum256([]byte(s.token))
	s.idPrefix = hex.EncodeToString(idp[:]) + "-"

	mcpLog := slog.New(demoteHandler{log.Handler()})
	s.mcp = server.NewMCPServer("harnessd-bridge", "1",
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		server.WithLogger(mcpLog))
	if err := s.addTools(); err != nil {
		return nil, err
	}
	sopts := []server.StreamableHTTPOption{
		server.WithSessionIdManager(s.sessions), // stateful: mcp-go keeps the sessions it validates
		server.WithEventStore(server.NewInMemoryEventStore()),
		server.WithStreamableHTTPLogger(mcpLog),
	}
	if opts.SessionIdleTTL > 0 {
		sopts = append(sopts, server.WithSessionIdleTTL(opts.SessionIdleTTL))
	}
	s.streamable = server.NewStreamableHTTPServer(s.mcp, sopts...)

	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp4", "127.0.0.1:0"); err != nil {
			s.streamable.Shutdown(context.Background())
			return nil, fmt.Errorf("bridge: listen: %w", err)
		}
	}
	s.url = "http://" + ln.Addr().String() + EndpointPath
	mux := http.NewServeMux()
	mux.Handle(EndpointPath, s.streamable)
	base, cancel := context.WithCancel(context.Background())
	s.cancelBase = cancel
	s.handler = s.guard(mux)
	srv := httpgroup.NewServer(s.handler, opts.Door, log)
	srv.MaxHeaderBytes = 64 << 10
	srv.BaseContext = func(net.Listener) context.Context { return base }
	if err := s.servers.Serve(srv, ln, log, "bridge"); err != nil {
		cancel()
		s.streamable.Shutdown(context.Background())
		return nil, fmt.Errorf("bridge: serve: %w", err)
	}
	log.Debug("bridge listening", "url", s.url, "tools", len(cat.Served()))
	return s, nil
}

// addTools registers the catalog's visible tools under their served names.
func (s *Server) addTools() (err error) {
	var tools []server.ServerTool
	for _, e := range s.cat.Served() {
		t, warns := e.Tool.mcpTool(e.Served)
		for _, w := range warns {
			s.log.Warn("tool definition partly dropped", "tool", e.Served, "source", e.Source, "why", w)
		}
		if err := mcp.ValidateParamHeaderAnnotations(&t); err != nil {
			return fmt.Errorf("bridge: tool '%s' of '%s': %w: %v", e.Served, e.Source, ErrInvalidTool, err)
		}
		tools = append(tools, server.ServerTool{Tool: t, Handler: s.toolHandler(e)})
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("bridge: registering tools: %w: %v", ErrInvalidTool, r)
		}
	}()
	s.mcp.AddTools(tools...)
	return nil
}

// DoorStats counts the harness's connections to the Server: held now, and
// refused at its cap or at the daemon's descriptor reserve.
func (s *Server) DoorStats() doorcap.Stats { return s.servers.Limit.Stats() }

// URL returns the endpoint, http://127.0.0.1:PORT/mcp.
func (s *Server) URL() string { return s.url }

// Token returns the bearer token clients must send.
func (s *Server) Token() string { return s.token }

// Close stops the Server: calls in flight are cancelled, open streams (GET
// listeners, SSE responses) end, and the listener closes. If ctx ends
// first, remaining connections are closed forcibly. Close is idempotent and
// leaves the catalog's sources running.
func (s *Server) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.cancelBase()
		if err := s.streamable.Shutdown(ctx); err != nil {
			s.log.Debug("closing MCP sessions", "err", err)
		}
		if err := s.servers.Shutdown(ctx); err != nil {
			s.closeErr = fmt.Errorf("bridge: close: %w", err)
		}
	})
	return s.closeErr
}

func (s *Server) nextID() string {
	return s.idPrefix + strconv.FormatInt(s.seq.Add(1), 10)
}
