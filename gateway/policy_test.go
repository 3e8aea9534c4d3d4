package gateway

import (
	"net"
	"net/http"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
)

// blockingEngine serves the fake engine on 127.0.0.1, holding the first
// engine request until the test releases it: arrived says it is held.
func blockingEngine(t *testing.T) (url string, arrived <-chan struct{}, release chan<- struct{}) {
	t.Helper()
	llm := fakellm.New(fakellm.Options{Engine: true})
	in, out := make(chan struct{}), make(chan struct{})
	first := true
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if first {
			first = false // the gateway's calls of this test are sequential
			close(in)
			select {
			case <-out:
			case <-r.Context().Done():
				return
			}
		}
		llm.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); llm.Close() })
	return "http://" + ln.Addr().String(), in, out
}

// TestPolicyVersionStraddle: a call in flight while the daemon's version
// changes is recorded as sent under the old version, answered under the
// new, straddling the update; the calls before and after are not. A
// session's own version overrides the daemon's until the daemon's is set
// again.
func TestPolicyVersionStraddle(t *testing.T) {
	url, arrived, release := blockingEngine(t)
	daemon := NewPolicyVersion(nil)
	daemon.Set(3)
	sess := NewPolicyVersion(daemon)
	gw := startGateway(t, url, Options{Policy: sess})

	done := make(chan map[string]any)
	go func() {
		// t.Fatal is not for this goroutine: chatCall's checks report
		// through the channel's receiver instead.
		status, body := gw.post(t, "/v1/chat/completions", gw.bearer(), map[string]any{"model": "m", "messages": []any{user("first")}})
		done <- map[string]any{"status": status, "body": string(body)}
	}()
	<-arrived // call 1 is at the engine, sent under version 3
	daemon.Set(4)
	close(release)
	if r := <-done; r["status"] != 200 {
		t.Fatalf("call 1: %v", r)
	}
	chatCall(t, gw, nil, []any{user("second")}) // call 2: version 4 throughout
	sess.Set(9)
	chatCall(t, gw, nil, []any{user("third")}) // call 3: the session's 9
	daemon.Set(5)
	chatCall(t, gw, nil, []any{user("fourth")}) // call 4: the daemon's again

	ex, err := gw.Export()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		sent, answered int64
		straddles      bool
	}{{3, 4, true}, {4, 4, false}, {9, 9, false}, {5, 5, false}}
	if len(ex.Calls) != len(want) {
		t.Fatalf("%d calls, want %d", len(ex.Calls), len(want))
	}
	for i, w := range want {
		c := ex.Calls[i]
		if c.PolicyVersionSent != w.sent || c.PolicyVersion != w.answered || c.StraddlesUpdate != w.straddles {
			t.Errorf("call %d: sent under %d, answered under %d, straddles %v; want %d, %d, %v", c.CallIndex,
				c.PolicyVersionSent, c.PolicyVersion, c.StraddlesUpdate, w.sent, w.answered, w.straddles)
		}
	}
	if ex.PolicyVersion != 5 {
		t.Errorf("export made under version %d, want 5", ex.PolicyVersion)
	}
	r := gw.events.responses()[1]
	if r.Extra["straddles_update"] != true || r.Extra["policy_version"] != int64(4) || r.Extra["policy_version_sent"] != int64(3) {
		t.Errorf("call 1's llm_response extra %v", r.Extra)
	}
}

// TestPolicyVersionChanges: ChangedSince sees every change a session
// could see, including a daemon's Set of its own value that overrides the
// session's and a Set back (A to B to A), and none in a Set that changes
// nothing.
func TestPolicyVersionChanges(t *testing.T) {
	daemon := NewPolicyVersion(nil)
	sess := NewPolicyVersion(daemon)
	step := func(what string, set func(), want int64, changed bool) {
		t.Helper()
		v0, epoch := sess.Current()
		set()
		if v := sess.Version(); v != want || sess.ChangedSince(v0, epoch) != changed {
			t.Errorf("%s: version %d (want %d), changed %v (want %v)", what, v, want, sess.ChangedSince(v0, epoch), changed)
		}
	}
	step("session 5", func() { sess.Set(5) }, 5, true)
	step("daemon 0 again", func() { daemon.Set(0) }, 0, true)
	step("session 5 once more", func() { sess.Set(5) }, 5, true)
	step("session 5 again", func() { sess.Set(5) }, 5, false)
	step("daemon 7", func() { daemon.Set(7) }, 7, true)
	step("session 7", func() { sess.Set(7) }, 7, false)
	step("daemon 7 again", func() { daemon.Set(7) }, 7, false)
	step("A to B to A", func() { daemon.Set(8); sess.Set(7) }, 7, true)
	v, epoch := sess.Current()
	for i := 0; i <= policyHistory; i++ {
		sess.Set(v)
	}
	if !sess.ChangedSince(v, epoch) {
		t.Errorf("more sets than the history holds: not taken to straddle")
	}
	var none *PolicyVersion
	if v, e := none.Current(); v != 0 || e != 0 || none.ChangedSince(0, 0) {
		t.Errorf("a nil version is %d (epoch %d)", v, e)
	}
}
