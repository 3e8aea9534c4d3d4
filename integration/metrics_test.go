package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/harnessd/harnessd/internal/version"
	"github.com/harnessd/harnessd/wire"
)

// scrape reads /metrics (with the token) and parses it with Prometheus's
// own text parser.
func scrape(t *testing.T, d *daemon, token string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := d.DoRaw("GET", "/metrics", "", map[string]string{"Authorization": "Bearer " + token})
	if code != http.StatusOK {
		t.Fatalf("/metrics: HTTP %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse as the Prometheus text format: %v\n%s", err, body)
	}
	return fams
}

// sample finds the metric of family name whose labels include want
// (name=value pairs) and returns its value: a counter's or gauge's value, a
// histogram's sample count. It fails when there is none.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no metric family %s", name)
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				continue next
			}
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount())
		}
		t.Fatalf("%s: unexpected type %s", name, f.GetType())
	}
	t.Fatalf("%s has no series with labels %v", name, want)
	return 0
}

func expectSample(t *testing.T, fams map[string]*dto.MetricFamily, want float64, name string, labels ...string) {
	t.Helper()
	if got := sample(t, fams, name, labels...); got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

// scrapeOnceClosed scrapes /metrics once no session is open by
// harnessd_sessions_open. A session frees its slot (/health's
// active_sessions) at once and counts as open until its close has
// finished, stopping its harness and tool servers; a /ws client's close
// handshake waits only for the slot.
func scrapeOnceClosed(t *testing.T, d *daemon, token string) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(goneTimeout)
	for {
		fams := scrape(t, d, token)
		open := 0.0
		for _, m := range fams["harnessd_sessions_open"].GetMetric() {
			open += m.GetGauge().GetValue()
		}
		if open == 0 {
			return fams
		}
		if time.Now().After(deadline) {
			t.Fatalf("harnessd_sessions_open stayed %v in all, want 0", open)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMetricsDuringEpisode scrapes /metrics of a real daemon during and
// after real episodes (test agent, test tool server over the bridge) and
// checks that the counters moved as the episodes did.
func TestMetricsDuringEpisode(t *testing.T) {
	t.Parallel()
	const token = "metrics-token"
	d := startDaemon(t, spec{Flags: []string{"--config", pythonConfig(t), "--max-sessions", "2"}, Env: []string{"HARNESSD_API_TOKEN=" + token}})

	if code, _ := d.DoRaw("GET", "/metrics", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without the token: HTTP %d, want 401", code)
	}
	before := scrape(t, d, token)
	expectSample(t, before, 0, "harnessd_episodes_started_total")
	expectSample(t, before, 0, "harnessd_sessions_open", "kind", "ws")
	expectSample(t, before, 0, "harnessd_draining")
	// The doors' refusals exist at 0 from the start.
	expectSample(t, before, 0, "harnessd_door_refusals_total", "door", "bridge", "reason", "bridge_session_cap")
	expectSample(t, before, 0, "harnessd_door_refusals_total", "door", "model_gateway", "reason", "door_body_budget")
	// build_info names the version the daemon reports in /metadata.
	_, metaBody := d.DoRaw("GET", "/metadata", "", map[string]string{"Authorization": "Bearer " + token})
	var md struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(metaBody, &md); err != nil || md.Version == "" {
		t.Fatalf("/metadata version: %v: %s", err, metaBody)
	}
	expectSample(t, before, 1, "harnessd_build_info", "version", md.Version)
	if _, ok := before["go_goroutines"]; !ok {
		t.Errorf("the Go collector is missing")
	}

	ws := dialRaw(t, d, "/ws", http.Header{"Authorization": {"Bearer " + token}})
	obsData(t, ws.request(map[string]any{"type": "reset"}))
	if r := responseOf(t, obsData(t, ws.request(stepFrame(`tool add {"a":2,"b":3}`)))); r != "add -> 5" {
		t.Fatalf("tool turn: %q", r)
	}
	responseOf(t, obsData(t, ws.request(stepFrame("reply second"))))
	responseOf(t, obsData(t, ws.request(stepFrame("reply third"))))

	during := scrape(t, d, token)
	expectSample(t, during, 1, "harnessd_episodes_started_total")
	expectSample(t, during, 1, "harnessd_sessions_open", "kind", "ws")
	expectSample(t, during, 0, "harnessd_sessions_open", "kind", "http")
	expectSample(t, during, 1, "harnessd_reset_duration_seconds")
	expectSample(t, during, 3, "harnessd_turn_duration_seconds")
	expectSample(t, during, 1, "harnessd_tool_calls_total", "tool", "add", "outcome", "ok")
	expectSample(t, during, 1, "harnessd_tool_call_duration_seconds", "tool", "add", "outcome", "ok")
	expectSample(t, during, 0, "harnessd_episodes_ended_total", "error_type", "none")
	if n := sample(t, during, "harnessd_process_trees_live"); n < 2 { // the harness and the tool server
		t.Errorf("harnessd_process_trees_live = %v during an episode, want at least 2", n)
	}
	for _, name := range []string{"harnessd_received_bytes_total", "harnessd_sent_bytes_total"} {
		if n := sample(t, during, name, "surface", "ws"); n <= 0 {
			t.Errorf("%s{surface=ws} = %v after a WebSocket episode", name, n)
		}
	}

	// A crash ends the episode with its error type; a new episode on the
	// same socket starts.
	if md := meta(t, obsData(t, ws.request(stepFrame("crash 3")))); md["error_type"] != "harness_crashed" {
		t.Fatalf("crash turn: %v", md)
	}
	obsData(t, ws.request(map[string]any{"type": "reset"}))
	ws.send(map[string]any{"type": "close"})
	ws.expectClose()
	d.WaitSessions(0)

	// An HTTP episode, closed explicitly.
	if code, v := d.Do("POST", "/reset", "{}", map[string]string{"Authorization": "Bearer " + token}); code != 200 {
		t.Fatalf("POST /reset: %d %v", code, v)
	}
	if code, v := d.Do("POST", "/close", "{}", map[string]string{"Authorization": "Bearer " + token}); code != 200 {
		t.Fatalf("POST /close: %d %v", code, v)
	}
	d.WaitSessions(0)

	after := scrapeOnceClosed(t, d, token)
	expectSample(t, after, 3, "harnessd_episodes_started_total")
	expectSample(t, after, 1, "harnessd_episodes_ended_total", "error_type", "harness_crashed")
	expectSample(t, after, 2, "harnessd_episodes_ended_total", "error_type", "none") // closed over /ws and over /close
	expectSample(t, after, 0, "harnessd_episodes_ended_total", "error_type", "turn_timeout")
	expectSample(t, after, 0, "harnessd_sessions_open", "kind", "ws")
	expectSample(t, after, 0, "harnessd_sessions_open", "kind", "http")
	expectSample(t, after, 4, "harnessd_turn_duration_seconds")
	if n := sample(t, after, "harnessd_received_bytes_total", "surface", "http"); n <= 0 {
		t.Errorf("harnessd_received_bytes_total{surface=http} = %v after POST /reset", n)
	}
	fam := after["harnessd_episodes_ended_total"]
	for _, m := range fam.GetMetric() {
		v := m.GetLabel()[0].GetValue()
		known := v == "none"
		for _, ft := range wire.FailureTypes {
			known = known || v == string(ft)
		}
		if !known {
			t.Errorf("error_type label %q is outside the bounded set", v)
		}
	}
}

// Guards harnessd_build_info's revision (4ae2eac): it is the revision
// harnessd version names, the Go build info's or else the one make build
// stamps with -ldflags. The test builds the real binary as make build does
// in a tree the Go toolchain does not stamp (-buildvcs=false, -X ...revision),
// serves it and scrapes /metrics: the series' revision label is the stamp,
// as version --json says. Reading the build info alone (the code before)
// labels it "unknown".
func TestBuildInfoCarriesTheStampedRevision(t *testing.T) {
	t.Parallel()
	const rev = "0123456789abcdef0123456789abcdef01234567"
	bin := filepath.Join(t.TempDir(), "harnessd")
	build := exec.Command("go", "build", "-buildvcs=false",
		"-ldflags", "-X github.com/harnessd/harnessd/internal/version.revision="+rev, "-o", bin, "./cmd/harnessd")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	var v version.Info
	if err != nil || json.Unmarshal(out, &v) != nil || v.Revision != rev {
		t.Fatalf("the control: version --json of the stamped build: %s (%v), want revision %s", out, err, rev)
	}
	const token = "build-info-token"
	d := startDaemon(t, spec{Bin: bin, Flags: isolationProcess, Harness: agentCmd(t), Env: []string{"HARNESSD_API_TOKEN=" + token}})
	fams := scrape(t, d, token)
	f, ok := fams["harnessd_build_info"]
	if !ok || len(f.GetMetric()) != 1 {
		t.Fatalf("harnessd_build_info: %v, want one series", f)
	}
	labels := map[string]string{}
	for _, l := range f.GetMetric()[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["revision"] != rev || labels["version"] != v.Version {
		t.Errorf("harnessd_build_info labels %v, want revision %s and version %s (as version --json says)", labels, rev, v.Version)
	}
}
