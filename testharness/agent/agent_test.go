package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/testharness/agent"
)

func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

func TestParse(t *testing.T) {
	cases := []struct {
		msg  string
		want []agent.Directive
	}{
		{"hello world", []agent.Directive{{Verb: "echo", Arg: "hello world"}}},
		{"reply a;;done", []agent.Directive{{Verb: "reply", Arg: "a"}, {Verb: "done"}}},
		{"tool add {\"a\":1}\nmore text", []agent.Directive{{Verb: "tool", Arg: `add {"a":1}`}, {Verb: "say", Arg: "more text"}}},
		{"   ", []agent.Directive{{Verb: "echo", Arg: "   "}}},
	}
	for _, c := range cases {
		if got := agent.Parse(c.msg); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%q) = %+v, want %+v", c.msg, got, c.want)
		}
	}
}

type event struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

type run struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	turn   int
	errBuf *strings.Builder
}

func start(t *testing.T, env []string, args ...string) *run {
	t.Helper()
	cmd := exec.Command(testbin.Path(t, "testharness"), append([]string{"agent"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	r := &run{t: t, cmd: cmd, in: in, out: sc, errBuf: &errBuf}
	if ev := r.next(); ev.Type != "ready" {
		t.Fatalf("first line %+v, want ready", ev)
	}
	return r
}

func (r *run) next() event {
	r.t.Helper()
	if !r.out.Scan() {
		r.t.Fatalf("stdout ended: %v", r.out.Err())
	}
	var ev event
	if err := json.Unmarshal(r.out.Bytes(), &ev); err != nil {
		return event{Type: "raw", Data: map[string]any{"line": r.out.Text()}}
	}
	return ev
}

func (r *run) send(msg string) {
	r.turn++
	b, _ := json.Marshal(map[string]any{"type": "message", "turn": r.turn, "content": msg})
	fmt.Fprintf(r.in, "%s\n", b)
}

// turn sends msg and returns the events up to and including turn_complete.
func (r *run) turnEvents(msg string) []event {
	r.t.Helper()
	r.send(msg)
	var evs []event
	for {
		ev := r.next()
		evs = append(evs, ev)
		if ev.Type == "turn_complete" {
			return evs
		}
	}
}

func last(evs []event) map[string]any { return evs[len(evs)-1].Data }

func TestMultiTurnContextAndDone(t *testing.T) {
	r := start(t, nil)
	if got := last(r.turnEvents("first"))["response"]; got != "echo: first" {
		t.Fatalf("response %q", got)
	}
	evs := r.turnEvents("history;;done")
	if got := last(evs)["response"]; got != "history: first | history;;done" {
		t.Fatalf("history response %q", got)
	}
	if last(evs)["done"] != true {
		t.Fatal("done not set")
	}
}

func TestCancelInterruptsSleep(t *testing.T) {
	r := start(t, nil)
	r.send("sleep 30s;;reply not reached")
	fmt.Fprintf(r.in, `{"type":"cancel","turn":%d}`+"\n", r.turn)
	ev := r.next()
	if ev.Type != "turn_complete" || ev.Data["cancelled"] != true {
		t.Fatalf("got %+v, want cancelled turn_complete", ev)
	}
}

func TestFaultDirectives(t *testing.T) {
	r := start(t, nil)
	evs := r.turnEvents("garbage;;malformed;;badevent;;stderr to stderr;;error soft")
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Type)
	}
	if want := []string{"raw", "raw", "no_such_event", "error", "turn_complete"}; !reflect.DeepEqual(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	r.send("exit 4")
	if ev := r.next(); ev.Type != "turn_complete" {
		t.Fatalf("got %+v", ev)
	}
	err := r.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Fatalf("exit: %v, want code 4", err)
	}
	if !strings.Contains(r.errBuf.String(), "to stderr") {
		t.Fatalf("stderr %q", r.errBuf.String())
	}
}

func TestCrashMidTurn(t *testing.T) {
	r := start(t, nil)
	r.send("reply before;;crash 9")
	if ev := r.next(); ev.Data["text"] != "before" {
		t.Fatalf("got %+v", ev)
	}
	err := r.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 9 {
		t.Fatalf("exit: %v, want 9", err)
	}
}

func TestStartupFlags(t *testing.T) {
	cmd := exec.Command(testbin.Path(t, "testharness"), "agent", "--crash-on-start", "5", "--stderr", "boom")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 || !strings.Contains(string(out), "boom") {
		t.Fatalf("crash-on-start: %v %q", err, out)
	}
}

// TestToolCallOverMCP runs a real streamable-HTTP MCP server with a bearer
// check and has the agent call a tool on it.
func TestToolCallOverMCP(t *testing.T) {
	srv := server.NewMCPServer("t", "1")
	srv.AddTool(mcp.NewTool("add", mcp.WithNumber("a"), mcp.WithNumber("b")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a, b := req.GetFloat("a", 0), req.GetFloat("b", 0)
			return mcp.NewToolResultText(fmt.Sprint(a + b)), nil
		})
	h := server.NewStreamableHTTPServer(srv)
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: auth, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	url := "http://" + ln.Addr().String() + "/mcp"

	r := start(t, []string{"HARNESSD_MCP_URL=" + url, "HARNESSD_MCP_TOKEN=tok"})
	evs := r.turnEvents(`tool add {"a":2,"b":3}`)
	if len(evs) != 4 || evs[0].Type != "tool_call" || evs[1].Type != "tool_result" || evs[1].Data["result"] != "5" {
		t.Fatalf("events %+v", evs)
	}
	if got := last(evs)["response"]; got != "add -> 5" {
		t.Fatalf("response %q", got)
	}

	bad := start(t, []string{"HARNESSD_MCP_URL=" + url, "HARNESSD_MCP_TOKEN=wrong"})
	evs = bad.turnEvents(`tool add {"a":1,"b":1}`)
	if evs[1].Type != "tool_result" || evs[1].Data["error"] == nil {
		t.Fatalf("wrong token should fail the call: %+v", evs)
	}
}

func TestLinesDirective(t *testing.T) {
	r := start(t, nil)
	evs := r.turnEvents("lines 5000")
	if len(evs) != 5001 {
		t.Fatalf("%d events, want 5000 lines and turn_complete", len(evs))
	}
	for i, want := range map[int]string{0: "line 000000000000", 4999: "line 000000004999"} {
		if got := evs[i].Data["line"]; got != want {
			t.Errorf("line %d is %q, want %q", i, got, want)
		}
	}
}
