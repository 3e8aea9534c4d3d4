package egress

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/harnessd/harnessd/internal/doorcap"
)

// Defaults of Options.
const (
	DefaultMaxConnections = 64
	// DefaultMaxClientConnections is doorcap's default door cap.
	DefaultMaxClientConnections = doorcap.DefaultMaxConns
	DefaultDialTimeout          = 10 * time.Second
	DefaultReadHeaderTimeout    = 10 * time.Second
	DefaultIdleTimeout          = 5 * time.Minute
	DefaultMaxHeaderBytes       = 64 << 10
)

// Options configure a Proxy. The zero value of each field means its default.
type Options struct {
	// Policy is the allow-list of hosts (see Policy). New fails on a bad
	// pattern.
	Policy Policy

	// Deny is the address guard: a destination any of whose addresses falls
	// in one of these prefixes is refused, whatever the policy says. Nil
	// means DefaultDeny; the daemon passes DenyList's. Tests set an empty,
	// non-nil slice to reach targets they start on loopback.
	Deny []netip.Prefix
	// DenyAddrs are addresses refused in addition to Deny: the daemon's own
	// listener addresses and the host's addresses it must keep to itself.
	DenyAddrs []netip.Addr

	// Resolve returns the addresses of host (never called for an IP
	// literal). Default: net.DefaultResolver.LookupNetIP(ctx, "ip", host).
	// The proxy checks every address it returns and dials only those.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Dial opens a connection to addr, always a checked IP address and port.
	// Default: a net.Dialer. It must not resolve or redirect.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// DialTimeout bounds resolving and dialling one destination; default
	// DefaultDialTimeout.
	DialTimeout time.Duration

	// MaxConnections caps concurrent upstream connections (tunnels and
	// forwarded requests together, each from its host's lookup on); one
	// more gets 503. Default DefaultMaxConnections.
	MaxConnections int
	// MaxClientConnections caps the harness's connections to the proxy
	// (idle keep-alive ones and tunnels alike), across all its listeners:
	// one more is answered 503 and closed at accept. Default
	// DefaultMaxClientConnections.
	MaxClientConnections int
	// ReadHeaderTimeout bounds reading a request's header; default
	// DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// IdleTimeout ends a tunnel or a forwarded response when no byte has
	// moved for this long, and closes idle client connections; default
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's header; default DefaultMaxHeaderBytes.
	MaxHeaderBytes int

	// OnConnection, if set, is called once per request when it ends (a
	// tunnel when it closes), on the request's goroutine: it should not
	// block for long.
	OnConnection func(Connection)
	// Logger receives the HTTP server's own errors at debug level; default
	// slog.Default().
	Logger *slog.Logger
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if o.Deny == nil {
		o.Deny = DefaultDeny
	}
	if o.Resolve == nil {
		o.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if o.Dial == nil {
		var d net.Dialer
		o.Dial = d.DialContext
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxClientConnections <= 0 {
		o.MaxClientConnections = DefaultMaxClientConnections
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}
