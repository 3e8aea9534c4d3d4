package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/wire"
)

// modelMetrics count the model calls the episodes' gateways answered, from
// the llm_response events of source gateway among a turn's events (a turn
// whose events were capped counts only those it kept), and the requests
// they refused as no model route (the gateway package's counter). Labels are bounded:
// the four agent dialects (others as "other"), the traffic (training,
// evaluation) and the outcome (ok, error).
type modelMetrics struct {
	calls   *prometheus.CounterVec
	tokens  *prometheus.CounterVec
	seconds *prometheus.HistogramVec
}

func newModelMetrics(register func(prometheus.Collector)) *modelMetrics {
	m := &modelMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harnessd_model_calls_total",
			Help: "Model calls through the episodes' gateways, by agent dialect, traffic (training, evaluation) and outcome (ok, error).",
		}, []string{"dialect", "traffic", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harnessd_model_tokens_total",
			Help: "Tokens of model calls through the gateways, by kind (prompt, completion) and traffic: counted from the engine's token ids, or from the provider's reported usage for evaluation traffic.",
		}, []string{"kind", "traffic"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "harnessd_model_call_duration_seconds",
			Help:    "Duration of model calls through the gateways (upstream latency), by agent dialect and traffic.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"dialect", "traffic"}),
	}
	register(m.calls)
	register(m.tokens)
	register(m.seconds)
	register(refusedCollector{})
	return m
}

// refusedDesc describes the gateways' refusals of requests on no model
// route, read from the gateway package's own counter.
var refusedDesc = prometheus.NewDesc("harnessd_model_refused_requests_total",
	"Requests the episodes' gateways refused with 404 as no model route, by reason: path (not a plain path: dot segments, "+
		"double slashes, percent-encoding) or route (a path no dialect defines).", []string{"reason"}, nil)

// refusedCollector exports gateway.RefusedRequests.
type refusedCollector struct{}

func (refusedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- refusedDesc }

func (refusedCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range gateway.RefusalReasons {
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(gateway.RefusedRequests(r)), r)
	}
}

// observe counts the gateway's calls among an observation's turn events.
func (m *modelMetrics) observe(obs *wire.Observation) {
	for _, e := range obs.Metadata.TurnEvents {
		r, ok := e.Data.(*wire.LLMResponse)
		if !ok || e.Origin != wire.OriginGateway {
			continue
		}
		dialect, traffic := dialectLabel(r.Dialect), r.Traffic
		if traffic != gateway.TrafficEvaluation {
			traffic = gateway.TrafficTraining
		}
		outcome := outcomeOK
		if r.Error != "" || r.Status >= 400 {
			outcome = outcomeError
		}
		m.calls.WithLabelValues(dialect, traffic, outcome).Inc()
		if r.LatencyMS != nil {
			m.seconds.WithLabelValues(dialect, traffic).Observe(*r.LatencyMS / 1000)
		}
		prompt, completion := r.PromptTokenIDsFrom+len(r.PromptTokenIDs), len(r.CompletionTokenIDs)
		if prompt == 0 && completion == 0 && r.Usage != nil {
			prompt, completion = r.Usage.PromptTokens, r.Usage.CompletionTokens
		}
		m.tokens.WithLabelValues("prompt", traffic).Add(float64(prompt))
		m.tokens.WithLabelValues("completion", traffic).Add(float64(completion))
	}
}

// dialectLabel bounds the dialect label to the gateway's dialects.
func dialectLabel(d string) string {
	switch gateway.Dialect(d) {
	case gateway.DialectChat, gateway.DialectResponses, gateway.DialectAnthropic, gateway.DialectGemini:
		return d
	}
	return "other"
}

// The policy versions and sampling pins of the gateways' calls, read from
// the gateway package's counters and the daemon's version.
var (
	policyVersionDesc = prometheus.NewDesc("harnessd_policy_version",
		"The daemon-wide policy version the trainer set last (0 until it sets one; a session's own version is not shown).", nil, nil)
	straddlingDesc = prometheus.NewDesc("harnessd_model_calls_straddling_update_total",
		"Engine calls in flight while their session's policy version changed (straddles_update in the export).", nil, nil)
	pinnedDesc = prometheus.NewDesc("harnessd_model_calls_sampling_pinned_total",
		"Engine calls sent under a sampling pin, by what the pin found: all of them (pinned), those with fields of the agent's "+
			"stripped (stripped), those sent sampling otherwise than pinned (differs).", []string{"kind"}, nil)
)

// policyCollector exports the daemon's policy version and the gateways'
// straddling and pinned calls.
type policyCollector struct{ daemon *gateway.PolicyVersion }

func (policyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- policyVersionDesc
	ch <- straddlingDesc
	ch <- pinnedDesc
}

func (c policyCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(policyVersionDesc, prometheus.GaugeValue, float64(c.daemon.Version()))
	ch <- prometheus.MustNewConstMetric(straddlingDesc, prometheus.CounterValue, float64(gateway.StraddlingCalls()))
	pinned, stripped, differs := gateway.PinnedCalls()
	ch <- prometheus.MustNewConstMetric(pinnedDesc, prometheus.CounterValue, float64(pinned), "pinned")
	ch <- prometheus.MustNewConstMetric(pinnedDesc, prometheus.CounterValue, float64(stripped), "stripped")
	ch <- prometheus.MustNewConstMetric(pinnedDesc, prometheus.CounterValue, float64(differs), "differs")
}
