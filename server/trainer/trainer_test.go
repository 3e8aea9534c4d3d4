package trainer

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/gateway"
)

// The route's answers without any session: the daemon's version set and
// read, and each malformed request refused with its status and the field
// it names.
func TestRouteDaemonAndRefusals(t *testing.T) {
	o := &Options{Daemon: gateway.NewPolicyVersion(nil), Sessions: func() []Session { return nil }}
	srv := httptest.NewServer(o)
	defer srv.Close()
	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := do("POST", "/policy_version", `{"version":12}`); code != 200 || !strings.Contains(b, `"version":12,"scope":"daemon"`) {
		t.Errorf("set: %d %s", code, b)
	}
	if code, b := do("GET", "/policy_version", ""); code != 200 || !strings.Contains(b, `"version":12`) || o.Daemon.Version() != 12 {
		t.Errorf("read: %d %s", code, b)
	}
	for _, c := range []struct {
		method, path, body string
		code               int
		names              string
	}{
		{"POST", "/policy_version", `{"version":-3}`, 422, "version"},
		{"POST", "/policy_version", `{}`, 422, "version"},
		{"POST", "/policy_version", `[1]`, 422, "data"},
		{"POST", "/policy_version", `{"version":1,"scope":"world"}`, 422, "scope"},
		{"POST", "/policy_version", `{"version":1,"scope":"daemon","episode_id":"e"}`, 422, "scope"},
		{"POST", "/policy_version", `{"version":1,"session_id":"s","episode_id":"e"}`, 422, "episode_id"},
		{"POST", "/policy_version", `{"version":1,"session_id":"nobody"}`, 404, "nobody"},
		{"GET", "/policy_version?session_id=s&episode_id=e", "", 422, "episode_id"},
		{"GET", "/policy_version?episode_id=gone", "", 404, "gone"},
		{"POST", "/policy_version", `{"version":1,"pad":"` + strings.Repeat("x", maxBody) + `"}`, 413, "4096"},
		{"DELETE", "/policy_version", "", 405, "Method"},
	} {
		code, b := do(c.method, c.path, c.body)
		if code != c.code || !strings.Contains(b, c.names) {
			t.Errorf("%s %s %.60s: %d %.200s; want %d naming %s", c.method, c.path, c.body, code, b, c.code, c.names)
		}
	}
	if o.Daemon.Version() != 12 {
		t.Errorf("a refused request changed the version to %d", o.Daemon.Version())
	}
}

// ResetKwargs reads a reset's sampling and policy version, and names the
// field of a bad one.
func TestResetKwargs(t *testing.T) {
	var pin *gateway.Sampling
	var version *int64
	raw := map[string]json.RawMessage{"sampling": json.RawMessage(`{"temperature":0.7,"allow":["logit_bias"]}`), "policy_version": json.RawMessage(`4`)}
	if errs := ResetKwargs(raw, &pin, &version); errs != nil || pin == nil || *pin.Temperature != 0.7 || version == nil || *version != 4 {
		t.Fatalf("good kwargs: %v %+v %v", errs, pin, version)
	}
	for _, c := range []struct{ raw, loc string }{
		{`{"sampling":{"temprature":1}}`, "sampling"},
		{`{"sampling":{"top_p":0}}`, "sampling"},
		{`{"sampling":[1]}`, "sampling"},
		{`{"policy_version":-1}`, "policy_version"},
		{`{"policy_version":"x"}`, "policy_version"},
	} {
		var m map[string]json.RawMessage
		json.Unmarshal([]byte(c.raw), &m)
		pin, version = nil, nil
		errs := ResetKwargs(m, &pin, &version)
		if len(errs) != 1 || errs[0].Loc[0] != c.loc || pin != nil || version != nil {
			t.Errorf("%s: %+v (pin %v, version %v)", c.raw, errs, pin, version)
		}
	}
}
