package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/wire"
)

// Fork outcomes (harnessd_forks_total's outcome label).
const (
	// ForkOK: every sibling is ready.
	ForkOK = "ok"
	// ForkPartial: some siblings are ready, some failed.
	ForkPartial = "partial"
	// ForkFailed: no sibling is ready, or the session refused the fork (a
	// turn running, no such turn to fork at, no episode).
	ForkFailed = "failed"
	// ForkRefused: the daemon had no free session slot for every sibling.
	ForkRefused = "refused"
)

// Mechanism label values besides wire.ForkMechanisms.
const (
	mechanismAuto  = "auto"  // the request named none and no sibling reported one
	mechanismMixed = "mixed" // the siblings used different mechanisms
	mechanismOther = "other" // a value that is not a mechanism (bounds the label)
)

// forkMetrics count forks and their siblings.
type forkMetrics struct {
	forks    *prometheus.CounterVec
	siblings *prometheus.CounterVec
	seconds  prometheus.Histogram
}

func newForkMetrics(f func(prometheus.Collector)) *forkMetrics {
	m := &forkMetrics{
		forks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harnessd_forks_total",
			Help: "Forks of live episodes, by the siblings' mechanism (resume, line, replay; mixed; auto when none was reported) and outcome " +
				"(ok: every sibling ready, partial, failed: none ready or the session refused, refused: no free session slots).",
		}, []string{"mechanism", "outcome"}),
		siblings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harnessd_fork_siblings_total", Help: "Siblings forks made, by mechanism and outcome (ok, error).",
		}, []string{"mechanism", "outcome"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "harnessd_fork_seconds", Help: "Time a whole fork took, from the request until every sibling was ready or had failed.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
		}),
	}
	for _, mech := range append(append([]string(nil), wire.ForkMechanisms...), mechanismAuto) {
		for _, o := range []string{ForkOK, ForkPartial, ForkFailed, ForkRefused} {
			m.forks.WithLabelValues(mech, o)
		}
	}
	f(m.forks)
	f(m.siblings)
	f(m.seconds)
	return m
}

// mechanismLabel bounds a mechanism to the label's values.
func mechanismLabel(mech string) string {
	if mech == "" {
		return mechanismAuto
	}
	for _, k := range wire.ForkMechanisms {
		if mech == k {
			return mech
		}
	}
	return mechanismOther
}

// forked counts a fork the session made (its Forked event): by the
// siblings' mechanism, its outcome, each sibling, and its duration.
func (fm *forkMetrics) forked(e session.Forked) {
	mech, ready := "", 0
	for _, s := range e.Siblings {
		switch {
		case s.Mechanism == "":
		case mech == "":
			mech = s.Mechanism
		case mech != s.Mechanism:
			mech = mechanismMixed
		}
		o := outcomeOK
		if s.Session == nil || s.Err != nil {
			o = outcomeError
		} else {
			ready++
		}
		fm.siblings.WithLabelValues(mechanismLabel(s.Mechanism), o).Inc()
	}
	if mech == "" {
		mech = e.Mechanism
	}
	label := mech
	if mech != mechanismMixed {
		label = mechanismLabel(mech)
	}
	outcome := ForkOK
	switch {
	case ready == 0:
		outcome = ForkFailed
	case ready < len(e.Siblings):
		outcome = ForkPartial
	}
	fm.forks.WithLabelValues(label, outcome).Inc()
	fm.seconds.Observe(e.Elapsed.Seconds())
}

// ForkNotMade counts a fork that made no sibling: refused by the daemon
// (ForkRefused: no free session slots for every sibling) or by the
// session (ForkFailed: a turn running, no such turn, an error before any
// sibling). requested is the mechanism the request named ("" for the best
// available). A fork the session made is counted from its Forked event.
func (m *Metrics) ForkNotMade(requested, outcome string) {
	m.fork.forks.WithLabelValues(mechanismLabel(requested), outcome).Inc()
}
