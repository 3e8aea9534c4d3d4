package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const realKey = "sk-real-upstream-key"

// engine starts the fake LLM in engine mode on 127.0.0.1.
func engine(t testing.TB, opts fakellm.Options) *fakellm.Server {
	t.Helper()
	opts.Engine = true
	s := fakellm.New(opts)
	if _, err := s.Start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// events collects what a gateway emits.
type events struct {
	mu  sync.Mutex
	all []wire.Event
}

func (e *events) add(ev wire.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) list() []wire.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]wire.Event(nil), e.all...)
}

// responses returns the llm_response payloads, by call index, each with
// its full prompt ids as a client rebuilds them (wire.CallTokenIDs) from
// the deltas the gateway emits; a delta that cannot be rebuilt panics.
func (e *events) responses() map[int]*wire.LLMResponse {
	out := map[int]*wire.LLMResponse{}
	var ids wire.CallTokenIDs
	evs := e.list()
	if err := ids.AddEvents(evs); err != nil {
		panic(err)
	}
	for _, ev := range evs {
		if r, ok := ev.Data.(*wire.LLMResponse); ok {
			full := *r
			if p, ok := ids.Prompt(r.CallIndex); ok && len(p) > 0 {
				full.PromptTokenIDs, full.PromptTokenIDsFrom = p, 0
			} else if r.PromptTokenIDsFrom > 0 {
				panic(fmt.Sprintf("call %d: a delta from call %d that cannot be rebuilt", r.CallIndex, r.ParentCallIndex))
			}
			out[r.CallIndex] = &full
		}
	}
	return out
}

// testGateway is a gateway served on loopback with its events and an HTTP
// client of its own.
type testGateway struct {
	*Gateway
	base   string // http://127.0.0.1:P
	events *events
	client *http.Client
}

// startGateway serves a gateway in front of upstream (the engine's base URL
// without /v1) on 127.0.0.1.
func startGateway(t testing.TB, upstream string, opts Options) *testGateway {
	t.Helper()
	ev := &events{}
	if opts.Upstream.URL == "" {
		opts.Upstream.URL = upstream + "/v1"
	}
	if opts.Upstream.APIKey == "" {
		opts.Upstream.APIKey = realKey
	}
	if opts.EpisodeID == "" {
		opts.EpisodeID = "ep-test"
	}
	if opts.OnEvent == nil {
		opts.OnEvent = ev.add
	}
	if opts.HTTPClient == nil {
		// A pool per test, emptied before the upstream closes (a pooled
		// connection that never carried a request holds up a server's
		// Shutdown for 5 s).
		up := &http.Transport{}
		t.Cleanup(up.CloseIdleConnections)
		opts.HTTPClient = &http.Client{Transport: up}
	}
	gw, err := New(opts)
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
	tr := &http.Transport{}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := gw.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		tr.CloseIdleConnections()
	})
	return &testGateway{Gateway: gw, base: "http://" + ln.Addr().String(), events: ev, client: &http.Client{Transport: tr}}
}

// post sends body to path with the given headers and returns the status
// and the body.
func (g *testGateway) post(t testing.TB, path string, headers map[string]string, body any) (int, []byte) {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, g.base+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// bearer is the header set of an agent presenting the episode's key.
func (g *testGateway) bearer() map[string]string {
	return map[string]string{"Authorization": "Bearer " + g.Key()}
}

// sseEvent is one Server-Sent Event.
type sseEvent struct{ Event, Data string }

// parseSSE reads a whole event stream per the SSE rules.
func parseSSE(t testing.TB, body []byte) []sseEvent {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 16<<20)
	var out []sseEvent
	var cur sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(data) > 0 {
				cur.Data = strings.Join(data, "\n")
				out = append(out, cur)
			}
			cur, data = sseEvent{}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			cur.Event = value
		case "data":
			data = append(data, value)
		}
	}
	if len(data) > 0 {
		t.Fatalf("stream ends without a blank line after its last event")
	}
	return out
}

// engineIDs recomputes what the fake engine produces for a chat request
// (tools and messages as sent upstream) answered with text and calls.
func engineIDs(t testing.TB, tools any, messages any, text string, calls [][2]string) (prompt, completion []int) {
	t.Helper()
	tb, _ := json.Marshal(tools)
	if tools == nil {
		tb = nil
	}
	mb, _ := json.Marshal(messages)
	var em []fakellm.EngineMessage
	if err := json.Unmarshal(mb, &em); err != nil {
		t.Fatal(err)
	}
	return fakellm.EngineTokenize(fakellm.EngineRenderPrompt(tb, em)),
		fakellm.EngineTokenize(fakellm.EngineRenderCompletion(text, calls))
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func newRequest(method, url string, headers map[string]string) (*http.Request, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req, nil
}
