package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/harnessd/harnessd/gateway"
	"github.com/harnessd/harnessd/session"
)

// A reset's sampling override and policy version reach the episode's
// gateway, on a cold reset and on a standby's handover alike: the engine
// gets the merged pin, the export carries it and the session's version;
// the next reset without an override falls back to the configured pin.
func TestResetSamplingAndPolicyVersion(t *testing.T) {
	for _, warm := range []int{0, 1} {
		t.Run(map[int]string{0: "cold", 1: "standby"}[warm], func(t *testing.T) {
			llm, url := engine(t)
			cfg := engineConfig(t, url)
			temp, seed := 0.4, int64(9)
			cfg.Harness.Model.Sampling = &gateway.Sampling{Temperature: &temp}
			cfg.Warm = warm
			daemon := gateway.NewPolicyVersion(nil)
			daemon.Set(3)
			if err := cfg.Normalize(); err != nil {
				t.Fatal(err)
			}
			s, err := session.NewSession(session.Options{Config: cfg, Adapters: adapters(t), Supervisor: supervisor(t), Policy: daemon})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close(context.Background()) })
			if s.PolicyVersion() != 3 {
				t.Fatalf("a new session's version %d, want the daemon's 3", s.PolicyVersion())
			}
			six := int64(6)
			obs, err := s.Reset(context.Background(), session.ResetOptions{Sampling: &gateway.Sampling{Seed: &seed}, PolicyVersion: &six})
			if err != nil || obs.Done {
				t.Fatalf("reset: %v %+v", err, obs)
			}
			if warm > 0 && !obs.Metadata.Standby {
				t.Fatalf("the reset did not hand a standby over")
			}
			step(t, s, "llm hello")
			ex, err := s.Export(obs.Metadata.EpisodeID)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(ex.PinnedSampling.Pinned()); got != `{"seed":9,"temperature":0.4}` {
				t.Errorf("export pin %s", got)
			}
			if c := ex.Calls[0]; c.PolicyVersionSent != 6 || c.PolicyVersion != 6 || !c.SamplingPinned {
				t.Errorf("call %+v", c)
			}
			var body map[string]json.RawMessage
			reqs := llm.Requests()
			json.Unmarshal(reqs[len(reqs)-1].Body, &body)
			if string(body["seed"]) != "9" || string(body["temperature"]) != "0.4" {
				t.Errorf("the engine got seed %s, temperature %s", body["seed"], body["temperature"])
			}

			obs, err = s.Reset(context.Background(), session.ResetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			step(t, s, "llm again")
			if ex, err = s.Export(obs.Metadata.EpisodeID); err != nil {
				t.Fatal(err)
			}
			if got := string(ex.PinnedSampling.Pinned()); got != `{"temperature":0.4}` || ex.Calls[0].PolicyVersion != 6 {
				t.Errorf("the next reset: pin %s, version %d", got, ex.Calls[0].PolicyVersion)
			}
		})
	}
}

// A sampling override needs an engine upstream, and a merged pin must be
// valid: either refusal leaves the session usable.
func TestResetSamplingRefused(t *testing.T) {
	cfg := testConfig(t)
	s := newSession(t, cfg)
	temp := 1.0
	if _, err := s.Reset(context.Background(), session.ResetOptions{Sampling: &gateway.Sampling{Temperature: &temp}}); !errors.Is(err, session.ErrSamplingNeedsEngine) {
		t.Errorf("no gateway: %v", err)
	}
	_, url := engine(t)
	cfg = engineConfig(t, url)
	cfg.Harness.Model.Sampling = &gateway.Sampling{Temperature: &temp}
	s = newSession(t, cfg)
	var se *session.SamplingError
	if _, err := s.Reset(context.Background(), session.ResetOptions{Sampling: &gateway.Sampling{Allow: []string{"temperature"}}}); !errors.As(err, &se) {
		t.Errorf("a pin both pinning and allowing temperature: %v", err)
	}
	if obs, err := s.Reset(context.Background(), session.ResetOptions{}); err != nil || obs.Done {
		t.Errorf("the session after a refused reset: %v", err)
	}
}
