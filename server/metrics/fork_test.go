package metrics

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/session"
)

// TestForkCounts: a fork the session made is counted from its Forked event
// by the siblings' mechanism (mixed when they differ, the event's when none
// reports one) and outcome (ok, partial, failed), each sibling by its own,
// its duration in harnessd_fork_seconds; a fork the daemon refused is
// counted without a duration; a mechanism that is none of the three is
// "other", so the label stays bounded.
func TestForkCounts(t *testing.T) {
	m := New(Options{Version: "t", MaxSessions: 1, Live: func() int { return 0 }})
	ready := &session.Session{} // a sibling's session: only whether there is one counts
	fail := errors.New("diverged")
	for _, e := range []session.Forked{
		{Siblings: []session.Sibling{{Session: ready, Mechanism: "replay"}, {Session: ready, Mechanism: "replay"}}, Elapsed: 300 * time.Millisecond},
		{Siblings: []session.Sibling{{Session: ready, Mechanism: "resume"}, {Mechanism: "resume", Err: fail}}, Elapsed: 2 * time.Second},
		{Siblings: []session.Sibling{{Session: ready, Mechanism: "line"}, {Session: ready, Mechanism: "replay"}}, Elapsed: time.Second},
		{Mechanism: "replay", Siblings: []session.Sibling{{Err: fail}}, Elapsed: time.Second},
	} {
		m.Observe(e)
	}
	m.ForkNotMade("", ForkRefused)
	m.ForkNotMade("criu", ForkFailed)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`harnessd_forks_total{mechanism="replay",outcome="ok"} 1`,
		`harnessd_forks_total{mechanism="resume",outcome="partial"} 1`,
		`harnessd_forks_total{mechanism="mixed",outcome="ok"} 1`,
		`harnessd_forks_total{mechanism="replay",outcome="failed"} 1`,
		`harnessd_forks_total{mechanism="auto",outcome="refused"} 1`,
		`harnessd_forks_total{mechanism="other",outcome="failed"} 1`,
		`harnessd_fork_siblings_total{mechanism="replay",outcome="ok"} 3`,
		`harnessd_fork_siblings_total{mechanism="resume",outcome="error"} 1`,
		`harnessd_fork_siblings_total{mechanism="auto",outcome="error"} 1`,
		`harnessd_fork_seconds_count 4`,
		`harnessd_fork_seconds_sum 4.3`,
		`harnessd_fork_seconds_bucket{le="0.5"} 1`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
