package gateway

import (
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/harnessd/harnessd/gateway/dialect"
	"github.com/harnessd/harnessd/wire"
)

// refusedRequests counts, per reason, the requests every gateway of the
// process refused as no model route.
var refusedRequests = map[string]*atomic.Uint64{}

func init() {
	for _, r := range dialect.RefusalReasons {
		refusedRequests[r] = new(atomic.Uint64)
	}
}

// Reasons a request is refused as no model route (RefusedRequests).
const (
	// RefusedPath: a path that is not a plain route path (dot segments,
	// double or trailing slashes, percent-encoding, other characters).
	RefusedPath = dialect.RefusedPath
	// RefusedRoute: a plain path no dialect defines.
	RefusedRoute = dialect.RefusedRoute
)

// RefusalReasons lists the reasons RefusedRequests counts.
var RefusalReasons = dialect.RefusalReasons

// RefusedRequests returns how many authenticated requests the process's
// gateways refused with 404 because their path was no model route, for one
// reason (RefusedPath, RefusedRoute).
func RefusedRequests(reason string) uint64 {
	if c, ok := refusedRequests[reason]; ok {
		return c.Load()
	}
	return 0
}

// maxRecordedTarget bounds the path and query an error event records.
const maxRecordedTarget = 512

// refuse answers a request on no model route with 404 in d's shape,
// counts it and records it as an error event of origin gateway (stamped
// with the running turn) whose extra "refused_request" holds the method,
// the path and query as sent (the key left out, bounded) and the reason.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, d dialect.Translator, reason string) {
	refusedRequests[reason].Add(1)
	target := r.URL.EscapedPath()
	q := r.URL.Query()
	q.Del("key")
	query := q.Encode()
	rec := func(s string) string {
		if len(s) > maxRecordedTarget {
			s = s[:maxRecordedTarget] + "…"
		}
		return strings.ToValidUTF8(s, "?")
	}
	msg := "gateway: no model route for " + r.Method + " " + rec(target)
	if reason == RefusedPath {
		msg = "gateway: not a model route path: " + r.Method + " " + rec(target)
	}
	// The first refusal of an episode is a warning, the rest debug records:
	// a flood of them must not flood the log (the counter and the events
	// have them all).
	level := slog.LevelDebug
	if g.refusedOnce.CompareAndSwap(false, true) {
		level = slog.LevelWarn
	}
	g.log.Log(r.Context(), level, "gateway: request on no model route refused", "method", r.Method, "path", rec(target), "reason", reason)
	g.mu.Lock()
	turn := g.turn
	g.mu.Unlock()
	ev := &wire.Error{Message: msg, Recoverable: true}
	wire.SetExtra(ev, "refused_request", map[string]string{"method": r.Method, "path": rec(target), "query": rec(query), "reason": reason})
	g.emit(turn, ev)
	d.WriteError(w, failure{Status: http.StatusNotFound, Kind: failNotFound, Message: msg})
}
