package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/harnessd/harnessd/internal/doorcap"
)

// doorRefusalsDesc describes the doors' refusals, read from doorcap's
// process-wide counts.
var doorRefusalsDesc = prometheus.NewDesc("harnessd_door_refusals_total",
	"Requests and connections the episodes' doors refused, by door (model_gateway, bridge, egress) and reason "+
		"(door_connection_cap, fd_reserve, door_body_budget, door_body_timeout, bridge_session_cap).",
	[]string{"door", "reason"}, nil)

// expectDoors makes the doors' series exist (at 0) from the daemon's
// start, before any episode opened a door.
func expectDoors() {
	for _, door := range []string{"model gateway", "bridge"} {
		doorcap.Expect(door, doorcap.ReasonCap, doorcap.ReasonReserve, doorcap.ReasonBodies, doorcap.ReasonBodyTimeout)
	}
	doorcap.Expect("bridge", "bridge_session_cap")
	doorcap.Expect("egress", doorcap.ReasonCap, doorcap.ReasonReserve)
}

// doorCollector exports doorcap.Refusals.
type doorCollector struct{}

func (doorCollector) Describe(ch chan<- *prometheus.Desc) { ch <- doorRefusalsDesc }

func (doorCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range doorcap.Refusals() {
		ch <- prometheus.MustNewConstMetric(doorRefusalsDesc, prometheus.CounterValue, float64(r.Count), r.Door, r.Reason)
	}
}
