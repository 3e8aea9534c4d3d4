package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/jsonl"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { testbin.Cleanup(); os.Exit(code) }))
}

type testServer struct {
	*Server
	url string
	sup *process.Supervisor
}

// start runs a server on 127.0.0.1:0 with the test agent and tool server.
func start(t testing.TB, opts Options, agentArgs ...string) *testServer {
	t.Helper()
	bin := testbin.Path(t, "testharness")
	if opts.Config == nil {
		opts.Config = &config.Config{
			Name:      "test-env",
			Harness:   config.HarnessConfig{Config: harness.Config{Command: append([]string{bin, "agent"}, agentArgs...), StopGrace: units.Duration(200 * time.Millisecond)}},
			Tools:     []config.ToolConfig{{Name: "calc", Command: []string{bin, "tools"}}},
			Hide:      []string{"grade"},
			Workspace: config.WorkspaceConfig{Root: t.TempDir()},
		}
	}
	if err := opts.Config.Normalize(); err != nil {
		t.Fatal(err)
	}
	sup, err := process.NewSupervisor(process.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Supervisor = sup
	if opts.Adapters == nil {
		opts.Adapters = &harness.Registry{}
		if err := opts.Adapters.Add(jsonl.Name, jsonl.Factory); err != nil {
			t.Fatal(err)
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(ln)
	}()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		<-done
		sup.Close(ctx, 0)
	})
	return &testServer{Server: s, url: "http://" + ln.Addr().String(), sup: sup}
}

func (ts *testServer) ws(t *testing.T, path string, hdr http.Header) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), strings.Replace(ts.url, "http", "ws", 1)+path, &websocket.DialOptions{HTTPHeader: hdr})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func roundTrip(t *testing.T, c *websocket.Conn, frame string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
	return read(t, c, ctx)
}

func read(t *testing.T, c *websocket.Conn, ctx context.Context) map[string]any {
	t.Helper()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("frame %s: %v", b, err)
	}
	return m
}

func data(m map[string]any) map[string]any { d, _ := m["data"].(map[string]any); return d }

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z'
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWSBadFramesKeepSession(t *testing.T) {
	ts := start(t, Options{MaxFrameBytes: 1 << 16})
	c := ts.ws(t, "/ws", nil)
	if r := roundTrip(t, c, `{"type":"step","data":{"message":"x"}}`); data(r)["code"] != codeExecution ||
		data(r)["message"] != "No active episode; call reset() before step()" {
		t.Fatalf("step before reset: %v", r)
	}
	for frame, code := range map[string]string{
		`nope`:                       codeInvalidJSON,
		`{"type":"what"}`:            codeUnknownType,
		`{"type":"step","data":{}}`:  codeValidation,
		`{"type":"step"}`:            codeValidation,
		strings.Repeat("x", 100<<10): codeValidation, // over the frame limit
	} {
		r := roundTrip(t, c, frame)
		if r["type"] != "error" || data(r)["code"] != code {
			t.Fatalf("%.40s: %v, want %s", frame, r, code)
		}
		if msg, _ := data(r)["message"].(string); len(frame) > 1<<16 && !strings.Contains(msg, "(--max-frame-bytes)") {
			t.Errorf("an oversized frame's error does not name its flag: %q", msg)
		}
	}
	r := roundTrip(t, c, `{"type":"reset","data":{"episode_id":"e1"}}`)
	if r["type"] != "observation" || data(r)["metadata"].(map[string]any)["episode_id"] != "e1" {
		t.Fatalf("reset after bad frames: %v", r)
	}
	r = roundTrip(t, c, `{"type":"step","data":{"message":"reply hello"}}`)
	md := data(r)["metadata"].(map[string]any)
	if md["response"] != "hello" || data(r)["done"] != false || data(r)["observation"].(map[string]any)["metadata"] == nil {
		t.Fatalf("step: %v", r)
	}
	if r := roundTrip(t, c, `{"type":"state"}`); data(r)["step_count"] != 1.0 || data(r)["episode_id"] != "e1" {
		t.Fatalf("state: %v", r)
	}
}

func TestCapacityIsNeverExceeded(t *testing.T) {
	ts := start(t, Options{MaxSessions: 3})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok, refused int
	var conns []*client.Env
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env, err := client.Dial(context.Background(), ts.url, nil)
			if err != nil {
				t.Error(err)
				return
			}
			_, err = env.State(context.Background())
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				ok++
				conns = append(conns, env)
			} else if se, isSE := err.(*client.ServerError); isSE && se.Code == codeCapacity && se.Data["max_sessions"] == 3.0 {
				refused++
				env.Close()
			} else {
				t.Errorf("unexpected: %v", err)
			}
			if n := ts.ActiveSessions(); n > 3 {
				t.Errorf("%d sessions active", n)
			}
		}()
	}
	wg.Wait()
	if ok != 3 || refused != 5 {
		t.Fatalf("ok %d refused %d", ok, refused)
	}
	for _, c := range conns {
		c.Close()
	}
	waitFor(t, "sessions to end", func() bool { return ts.ActiveSessions() == 0 })
}

func TestDisconnectMidTurnFreesSession(t *testing.T) {
	ts := start(t, Options{})
	env, err := client.Dial(context.Background(), ts.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Reset(context.Background(), client.ResetOptions{}); err != nil {
		t.Fatal(err)
	}
	st, _ := env.State(context.Background())
	pid := st.HarnessPID
	c := ts.ws(t, "/ws", nil) // a second client is refused while the first holds the slot
	if r := read(t, c, context.Background()); data(r)["code"] != codeCapacity {
		t.Fatalf("%v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	env.Step(ctx, "sleep 30s") // the client gives up and drops the socket
	cancel()
	env.Close()
	waitFor(t, "the harness to die", func() bool { return !alive(pid) })
	waitFor(t, "the slot to free", func() bool { return ts.ActiveSessions() == 0 })
}

func TestHTTPStatefulAndIdleReaping(t *testing.T) {
	ts := start(t, Options{IdleTimeout: time.Second})
	post := func(path, body string) (int, map[string]any) {
		resp, err := http.Post(ts.url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := post("/step", `{"action":{"message":"x"}}`); code != http.StatusConflict || !strings.Contains(m["detail"].(string), "No active episode") {
		t.Fatalf("step before reset: %d %v", code, m)
	}
	code, m := post("/reset", `{}`)
	if code != 200 || m["session_id"] == nil {
		t.Fatalf("reset: %d %v", code, m)
	}
	if code, m := post("/step", `{"action":{"message":"reply one"}}`); code != 200 || m["metadata"].(map[string]any)["response"] != "one" {
		t.Fatalf("step: %d %v", code, m)
	}
	if code, m := post("/step", `{"action":{"msg":"x"}}`); code != 422 || m["detail"] == nil {
		t.Fatalf("bad action: %d %v", code, m)
	}
	if code, m := post("/step", `{"action":{"message":"hang"},"timeout_s":0.2}`); code != 200 || m["metadata"].(map[string]any)["error_type"] != "turn_timeout" {
		t.Fatalf("timeout_s: %d %v", code, m)
	}
	resp, _ := http.Get(ts.url + "/state")
	var st map[string]any
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st["step_count"] != 1.0 {
		t.Fatalf("state: %v", st)
	}
	// Nothing holds the HTTP session: the reaper ends it once idle.
	waitFor(t, "the idle HTTP session to be reaped", func() bool { return ts.ActiveSessions() == 0 })

	// A WebSocket session is never reaped while its socket is open.
	env, err := client.Dial(context.Background(), ts.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if _, err := env.Reset(context.Background(), client.ResetOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // longer than the idle timeout and a reaper tick
	if o, err := env.Step(context.Background(), "reply alive"); err != nil || o.ResponseText() != "alive" {
		t.Fatalf("attached session reaped: %v", err)
	}
}

func TestHarnessSocketCancelAndSanitizedFailure(t *testing.T) {
	ts := start(t, Options{Mode: Production})
	resp, err := http.Post(ts.url+"/reset", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 && resp.StatusCode != 405 {
		t.Fatalf("/reset in production: %d", resp.StatusCode)
	}
	h, err := client.DialHarness(context.Background(), ts.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Name() != "test-env" || h.SessionID() == "" {
		t.Fatalf("session_started: %q %q", h.Name(), h.SessionID())
	}
	var types []string
	fin, err := h.Send(context.Background(), `tool add {"a":2,"b":3}`, func(e wire.Event) { types = append(types, string(e.Type)) })
	if err != nil || fin.Data.(*wire.TurnComplete).Response != "add -> 5" {
		t.Fatalf("turn: %v %v", fin, err)
	}
	if strings.Join(types, ",") != "tool_call,tool_call,tool_result,tool_result,text_output,turn_complete" {
		t.Fatalf("event order %v", types)
	}
	// Cancel a long turn while it runs; the conversation continues.
	go func() {
		time.Sleep(100 * time.Millisecond)
		h.Cancel(context.Background())
	}()
	fin, err = h.Send(context.Background(), "sleep 30s;;reply late", nil)
	if err != nil || !fin.Data.(*wire.TurnComplete).Cancelled {
		t.Fatalf("cancel: %v %v", fin, err)
	}
	if fin, err := h.Send(context.Background(), "{", nil); err != nil || fin.Data.(*wire.TurnComplete).Response != "echo: {" {
		t.Fatalf("free-text content: %v %v", fin, err) // content is free text, not JSON
	}
}

func TestHarnessStartupFailureIsSanitized(t *testing.T) {
	ts := start(t, Options{Mode: Production}, "--crash-on-start", "3", "--stderr", "API_KEY=sk-secret-123")
	c := ts.ws(t, "/harness", nil)
	_, b, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "sk-secret") || !strings.Contains(string(b), `"code":"SESSION_ERROR"`) ||
		!strings.Contains(string(b), "harness session failed") {
		t.Fatalf("frame %s", b)
	}
}

func TestAPITokenAndHealth(t *testing.T) {
	ts := start(t, Options{APIToken: "s3cret"})
	get := func(path, auth string) int {
		req, _ := http.NewRequest("GET", ts.url+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		path, auth string
		want       int
	}{
		{"/health", "", 200}, {"/metadata", "", 401}, {"/metadata", "Bearer nope", 401},
		{"/metadata", "Bearer s3cret", 200}, {"/schema?token=s3cret", "", 200}, {"/state", "", 401},
		{"/metadata", basic("harnessd", "s3cret"), 200}, {"/metadata", basic("", "s3cret"), 200},
		{"/metadata", basic("harnessd", "nope"), 401}, {"/metadata", basic("s3cret", ""), 401},
		{"/metadata", "Basic !!!", 401}, {"/ready", "", 200}, {"/metrics", "", 401},
		{"/metrics", basic("x", "s3cret"), 200}, {"/openapi.json", "", 401}, {"/docs", "Bearer s3cret", 200},
	} {
		if got := get(c.path, c.auth); got != c.want {
			t.Errorf("%s %q: %d, want %d", c.path, c.auth, got, c.want)
		}
	}
	if _, err := client.Dial(context.Background(), ts.url, nil); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("ws without token: %v", err)
	}
	env, err := client.Dial(context.Background(), ts.url, &client.Options{Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	env.Close()
}

// basic is an Authorization header with HTTP Basic credentials.
func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func TestShutdownDrainsRunningTurn(t *testing.T) {
	ts := start(t, Options{DrainPolicy: DrainCancel})
	env, err := client.Dial(context.Background(), ts.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	env.Reset(context.Background(), client.ResetOptions{})
	o, err := env.Step(context.Background(), "escape")
	if err != nil {
		t.Fatal(err)
	}
	escaped, _ := strconv.Atoi(strings.TrimPrefix(o.ResponseText(), "escaped "))
	st, _ := env.State(context.Background())
	stepErr := make(chan error, 1)
	go func() {
		o, err := env.Step(context.Background(), "sleep 30s")
		if err == nil && o.Metadata.ErrorType != wire.FailureCancelled {
			err = errors.New("no cancelled observation: " + string(o.Metadata.ErrorType))
		} else if err == nil {
			err = errCancelledObservation
		}
		stepErr <- err
	}()
	waitFor(t, "the turn to start", func() bool {
		m := ts.reg.drainPeek()
		return len(m) == 1 && m[0].sess.Busy()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// The running turn ends as a cancelled observation, or the socket closes first.
	if err := <-stepErr; err != errCancelledObservation && !errors.Is(err, client.ErrClosed) {
		t.Fatalf("running step at shutdown: %v", err)
	}
	for _, pid := range []int{st.HarnessPID, escaped} {
		if alive(pid) {
			t.Errorf("pid %d survived the drain", pid)
		}
	}
	resp, err := http.Get(ts.url + "/health")
	if err == nil {
		resp.Body.Close()
		t.Fatal("still accepting connections after Shutdown")
	}
}

var errCancelledObservation = errors.New("cancelled observation")

func TestMetadataSchemaAndMCP(t *testing.T) {
	ts := start(t, Options{})
	var md, schema map[string]any
	for path, dst := range map[string]*map[string]any{"/metadata": &md, "/schema": &schema} {
		resp, err := http.Get(ts.url + path)
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(dst)
		resp.Body.Close()
	}
	if md["name"] != "test-env" || schema["action"].(map[string]any)["required"].([]any)[0] != "message" {
		t.Fatalf("metadata %v / schema %v", md, schema["action"])
	}
	rpc := func(body string) map[string]any {
		resp, err := http.Post(ts.url+"/mcp", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("HTTP %d", resp.StatusCode)
		}
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	code := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	for body, want := range map[string]float64{
		`nope`: -32700, `{"jsonrpc":"1.0","id":1,"method":"x"}`: -32600, `{"jsonrpc":"2.0","id":1,"method":"x"}`: -32601,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`: -32602, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}`: -32602,
	} {
		if got := code(rpc(body)); got != want {
			t.Errorf("%s: code %v, want %v", body, got, want)
		}
	}
	list := rpc(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	names := []string{}
	for _, tl := range list["result"].(map[string]any)["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if strings.Contains(strings.Join(names, ","), "grade") || !strings.Contains(strings.Join(names, ","), "add") {
		t.Fatalf("tools %v", names)
	}
	call := rpc(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}`)
	if call["id"] != "a" || !strings.Contains(string(marshal(call["result"])), `"3"`) {
		t.Fatalf("call %v", call)
	}
	created := rpc(`{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`)
	id := created["result"].(map[string]any)["session_id"].(string)
	if c := rpc(`{"jsonrpc":"2.0","id":1,"method":"openenv/session/create"}`); code(c) != -32000 {
		t.Fatalf("over capacity: %v", c)
	}
	closed := rpc(`{"jsonrpc":"2.0","id":1,"method":"openenv/session/close","params":{"session_id":"` + id + `"}}`)
	if closed["result"].(map[string]any)["closed"] != true || ts.ActiveSessions() != 0 {
		t.Fatalf("close %v", closed)
	}
}
