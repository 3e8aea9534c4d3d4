package metrics

import (
	"net/http"
	"runtime"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/internal/version"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// failureTypes are every wire.FailureType: the bounded values of the
// error_type label, with errorTypeNone for an episode that ended without one.
var failureTypes = wire.FailureTypes

// Label values.
const (
	errorTypeNone = "none"
	outcomeOK     = "ok"
	outcomeError  = "error"
	// toolOther replaces tool names beyond maxToolLabels.
	toolOther = "other"
	// maxToolLabels bounds the tool label. Tool names come from the
	// configured tool servers (the bridge reports calls on its catalog only),
	// so the set is bounded by the configuration; the cap guards against a
	// tool server that advertises a different catalog at every start.
	maxToolLabels = 256
)

// Options say what the metrics describe.
type Options struct {
	// Version is the daemon's version (harnessd_build_info).
	Version string
	// MaxSessions is the session limit.
	MaxSessions int
	// Live reports the process trees the supervisor has running.
	Live func() int
	// Kinds are the session kinds (the surfaces that create sessions),
	// the values of harnessd_sessions_open's kind label.
	Kinds []string
	// Surfaces are the values of the byte counters' surface label.
	Surfaces []string
	// Policy is the daemon's policy version (harnessd_policy_version).
	Policy *gateway.PolicyVersion
}

// Metrics are the server's Prometheus metrics, on a registry of their own
// (nothing is registered with the global default registry). Sessions feed
// them through Observe; the server counts sessions and bytes.
type Metrics struct {
	reg *prometheus.Registry

	sessionsOpen    *prometheus.GaugeVec
	episodesStarted prometheus.Counter
	episodesEnded   *prometheus.CounterVec
	resetSeconds    prometheus.Histogram
	turnSeconds     prometheus.Histogram
	toolCalls       *prometheus.CounterVec
	toolSeconds     *prometheus.HistogramVec
	received        *prometheus.CounterVec
	sent            *prometheus.CounterVec
	draining        prometheus.Gauge

	model *modelMetrics // calls, tokens and durations of model calls (modelmetrics.go)
	fork  *forkMetrics  // forks of live episodes and their siblings (fork.go)

	toolMu    sync.Mutex
	toolNames map[string]bool
}

// New registers every metric.
func New(o Options) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg, toolNames: map[string]bool{}}
	f := func(c prometheus.Collector) { reg.MustRegister(c) }

	// The Go runtime and process collectors are added deliberately: memory,
	// goroutines, file descriptors and CPU of the daemon are what a platform
	// team looks at first.
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "harnessd_build_info", Help: "Always 1; the labels say which build of harnessd runs.",
	}, []string{"version", "revision", "goversion"})
	build.WithLabelValues(o.Version, buildRevision(), runtime.Version()).Set(1)
	f(build)

	m.sessionsOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "harnessd_sessions_open", Help: "Sessions open, by the surface that created them; a closing session counts until its processes have stopped.",
	}, []string{"kind"})
	for _, k := range o.Kinds {
		m.sessionsOpen.WithLabelValues(k)
	}
	f(m.sessionsOpen)
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "harnessd_sessions_max", Help: "The session limit (--max-sessions).",
	}, func() float64 { return float64(o.MaxSessions) }))

	m.episodesStarted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "harnessd_episodes_started_total", Help: "Episodes started by a reset (including those whose harness failed to start).",
	})
	f(m.episodesStarted)
	m.episodesEnded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harnessd_episodes_ended_total",
		Help: `Episodes ended, by metadata.error_type ("none": done, closed or replaced without a failure).`,
	}, []string{"error_type"})
	m.episodesEnded.WithLabelValues(errorTypeNone)
	for _, t := range failureTypes {
		m.episodesEnded.WithLabelValues(string(t))
	}
	f(m.episodesEnded)

	m.resetSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "harnessd_reset_duration_seconds", Help: "Time a reset took: stopping the old tree, starting tools and the harness until ready.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
	})
	f(m.resetSeconds)
	m.turnSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "harnessd_turn_duration_seconds", Help: "Time a turn (step) took, rubrics included.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600},
	})
	f(m.turnSeconds)

	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harnessd_tool_calls_total", Help: "Tool calls of harnesses through the MCP bridge, by tool and outcome (ok, error).",
	}, []string{"tool", "outcome"})
	f(m.toolCalls)
	m.toolSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "harnessd_tool_call_duration_seconds", Help: "Duration of tool calls through the MCP bridge, by tool and outcome.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300},
	}, []string{"tool", "outcome"})
	f(m.toolSeconds)

	m.model = newModelMetrics(f)
	m.fork = newForkMetrics(f)
	f(policyCollector{o.Policy})
	expectDoors()
	f(doorCollector{})

	m.received = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harnessd_received_bytes_total", Help: "Bytes of WebSocket frames and HTTP bodies received, by surface (ws, harness, http, mcp).",
	}, []string{"surface"})
	m.sent = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harnessd_sent_bytes_total", Help: "Bytes of WebSocket frames and HTTP bodies sent, by surface (ws, harness, http, mcp).",
	}, []string{"surface"})
	for _, s := range o.Surfaces {
		m.received.WithLabelValues(s)
		m.sent.WithLabelValues(s)
	}
	f(m.received)
	f(m.sent)

	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "harnessd_process_trees_live", Help: "Process trees (harnesses, tool servers, rubric commands) started and not yet stopped.",
	}, func() float64 { return float64(o.Live()) }))
	m.draining = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "harnessd_draining", Help: "1 once the daemon is draining (SIGTERM), else 0.",
	})
	f(m.draining)
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// SessionOpened counts a session of kind opened; SessionClosed its end.
func (m *Metrics) SessionOpened(kind string) { m.sessionsOpen.WithLabelValues(kind).Inc() }

// SessionClosed counts the end of a session of kind.
func (m *Metrics) SessionClosed(kind string) { m.sessionsOpen.WithLabelValues(kind).Dec() }

// Bytes returns the counters of bytes received and sent on surface.
func (m *Metrics) Bytes(surface string) (received, sent prometheus.Counter) {
	return m.received.WithLabelValues(surface), m.sent.WithLabelValues(surface)
}

// Draining marks the daemon draining.
func (m *Metrics) Draining() { m.draining.Set(1) }

// Observe counts a session's lifecycle events: episodes started (with the
// reset's duration) and ended (by error type), turns (their duration, tool
// calls and model calls), forks (their siblings and duration).
func (m *Metrics) Observe(ev session.Event) {
	switch e := ev.(type) {
	case session.EpisodeOpened:
		m.episodesStarted.Inc()
		m.resetSeconds.Observe(e.Elapsed.Seconds())
	case session.TurnEnded:
		m.turnSeconds.Observe(e.Elapsed.Seconds())
		m.observeTools(e.Observation)
		m.model.observe(e.Observation)
	case session.EpisodeEnded:
		m.endEpisode(e.ErrorType)
	case session.Forked:
		m.fork.forked(e)
	}
}

// observeTools counts the bridge's tool calls among an observation's turn
// events.
func (m *Metrics) observeTools(obs *wire.Observation) {
	for _, e := range obs.Metadata.TurnEvents {
		r, ok := e.Data.(*wire.ToolResult)
		if !ok || e.Origin != wire.OriginBridge {
			continue
		}
		outcome := outcomeOK
		if r.Error != nil {
			outcome = outcomeError
		}
		tool := m.toolLabel(r.ToolName)
		m.toolCalls.WithLabelValues(tool, outcome).Inc()
		if r.DurationMS != nil {
			m.toolSeconds.WithLabelValues(tool, outcome).Observe(*r.DurationMS / 1000)
		}
	}
}

// toolLabel bounds the tool label to maxToolLabels names.
func (m *Metrics) toolLabel(name string) string {
	m.toolMu.Lock()
	defer m.toolMu.Unlock()
	if m.toolNames[name] {
		return name
	}
	if len(m.toolNames) >= maxToolLabels {
		return toolOther
	}
	m.toolNames[name] = true
	return name
}

// endEpisode counts an ended episode under its error type.
func (m *Metrics) endEpisode(t wire.FailureType) {
	label := errorTypeNone
	for _, known := range failureTypes {
		if t == known {
			label = string(t)
		}
	}
	m.episodesEnded.WithLabelValues(label).Inc()
}

// buildRevision is the VCS revision the binary was built from, as
// harnessd version says it (the Go build info, else the revision stamped
// with -ldflags), "unknown" when the build recorded none.
func buildRevision() string {
	if r := version.Read().Revision; r != "" {
		return r
	}
	return "unknown"
}
