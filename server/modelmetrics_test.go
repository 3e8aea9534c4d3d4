package server

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/gateway"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestModelCallMetrics runs an episode whose test agent makes three model
// calls through the gateway in front of the fake engine, then scrapes
// /metrics and parses it with the Prometheus text parser: the calls, their
// tokens and durations are counted under the dialect and traffic they had.
func TestModelCallMetrics(t *testing.T) {
	t.Run("engine", func(t *testing.T) { testModelCallMetrics(t, true) })
	// A passthrough provider's calls are evaluation traffic, without token
	// ids: their tokens come from the usage the gateway read of the
	// provider's answer (wire.TokenUsage).
	t.Run("passthrough", func(t *testing.T) { testModelCallMetrics(t, false) })
}

func testModelCallMetrics(t *testing.T, engine bool) {
	ts := modelServer(t, engine, "")
	refuseOne(t)
	traffic := "training"
	if !engine {
		traffic = "evaluation"
	}
	c := ts.ws(t, "/ws", http.Header{"Authorization": {"Bearer api-token"}})
	if r := roundTrip(t, c, `{"type":"reset","data":{}}`); r["type"] != "observation" {
		t.Fatalf("reset: %v", r)
	}
	for _, msg := range []string{"llm one;;llm two", "llm three"} {
		if r := roundTrip(t, c, `{"type":"step","data":{"message":"`+msg+`"}}`); r["type"] != "observation" {
			t.Fatalf("step: %v", r)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, ts.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer api-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	find := func(name string, labels map[string]string) *dto.Metric {
		for _, m := range fams[name].GetMetric() {
			ok := true
			for _, l := range m.GetLabel() {
				if want, has := labels[l.GetName()]; has && want != l.GetValue() {
					ok = false
				}
			}
			if ok {
				return m
			}
		}
		t.Fatalf("%s%v: no series in\n%s", name, labels, body)
		return nil
	}
	calls := map[string]string{"dialect": "openai-chat", "traffic": traffic, "outcome": "ok"}
	if n := find("harnessd_model_calls_total", calls).GetCounter().GetValue(); n != 3 {
		t.Errorf("harnessd_model_calls_total = %v, want 3", n)
	}
	for _, kind := range []string{"prompt", "completion"} {
		if n := find("harnessd_model_tokens_total", map[string]string{"kind": kind, "traffic": traffic}).GetCounter().GetValue(); n <= 0 {
			t.Errorf("harnessd_model_tokens_total{kind=%s} = %v", kind, n)
		}
	}
	if n := find("harnessd_model_refused_requests_total", map[string]string{"reason": "route"}).GetCounter().GetValue(); n < 1 {
		t.Errorf("harnessd_model_refused_requests_total{reason=route} = %v, want the refused request", n)
	}
	h := find("harnessd_model_call_duration_seconds", map[string]string{"dialect": "openai-chat", "traffic": traffic}).GetHistogram()
	if h.GetSampleCount() != 3 {
		t.Errorf("harnessd_model_call_duration_seconds count = %d, want 3", h.GetSampleCount())
	}
}

// refuseOne has a gateway of its own refuse a request with its key on a
// path that is no model route (the refusal counter is the process's).
func refuseOne(t *testing.T) {
	t.Helper()
	gw, err := gateway.New(gateway.Options{Upstream: gateway.Upstream{URL: "http://127.0.0.1:1/v1"}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Serve(ln); err != nil {
		t.Fatal(err)
	}
	defer gw.Close(context.Background())
	req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/key/generate", strings.NewReader(`{"messages":[]}`))
	req.Header.Set("Authorization", "Bearer "+gw.Key())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("refused request: %d", resp.StatusCode)
	}
}
