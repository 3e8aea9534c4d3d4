package server

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
)

func TestParseDrainPolicy(t *testing.T) {
	for in, want := range map[string]DrainPolicy{"": DrainFinish, "finish": DrainFinish, " Cancel ": DrainCancel} {
		if got, err := ParseDrainPolicy(in); err != nil || got != want {
			t.Errorf("ParseDrainPolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseDrainPolicy("wait"); err == nil {
		t.Error("ParseDrainPolicy accepted an unknown policy")
	}
}

// TestShutdownFinishesRunningTurn: under DrainFinish a turn running when
// Shutdown starts is answered in full, readiness is false meanwhile, and a
// new turn is refused.
func TestShutdownFinishesRunningTurn(t *testing.T) {
	ts := start(t, Options{DrainFinishTimeout: time.Minute})
	env, err := client.Dial(context.Background(), ts.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if _, err := env.Reset(context.Background(), client.ResetOptions{}); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		text string
		err  error
	}
	release := filepath.Join(t.TempDir(), "release")
	got := make(chan answer, 1)
	go func() {
		o, err := env.Step(context.Background(), "waitfor "+release+";;reply done waiting")
		if err != nil {
			got <- answer{err: err}
			return
		}
		got <- answer{text: o.ResponseText()}
	}()
	waitFor(t, "the turn to start", func() bool {
		m := ts.reg.drainPeek()
		return len(m) == 1 && m[0].sess.Busy()
	})
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		shut <- ts.Shutdown(ctx)
	}()
	waitFor(t, "readiness to turn false", func() bool {
		resp, err := http.Get(ts.url + "/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := <-got
	if a.err != nil || a.text != "done waiting" {
		t.Fatalf("the running turn: %q, %v; want its full answer", a.text, a.err)
	}
	if _, err := env.Step(context.Background(), "reply again"); err == nil {
		t.Error("a new turn was accepted during the drain")
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
}

// TestShutdownBeforeServe: a Shutdown that comes before Serve (a server
// stopped while it starts) makes the later Serve return at once instead
// of serving forever; it hung a fuzz seed's cleanup 1 run in 4.
func TestShutdownBeforeServe(t *testing.T) {
	ts := start(t, Options{})
	s, err := New(ts.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		ln.Close()
		t.Fatal("Serve after Shutdown kept serving")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts after Serve returned")
	}
}
