package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.uber.org/goleak"

	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/process"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		testbin.Cleanup()
		os.Exit(code)
	}))
}

// testLog discards records unless HARNESSD_TEST_LOG is set (records can
// arrive after a test ends, where t.Log would panic).
func testLog() *slog.Logger {
	if os.Getenv("HARNESSD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newSup(t testing.TB) *process.Supervisor {
	t.Helper()
	s, err := process.NewSupervisor(process.Options{Logger: testLog()})
	if err != nil {
		t.Fatalf("NewSupervisor: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background(), 0); err != nil {
			t.Errorf("supervisor close: %v", err)
		}
	})
	return s
}

// toolsSpec describes `testharness tools ARGS...` as a stdio source.
func toolsSpec(t testing.TB, name string, args ...string) StdioSpec {
	return StdioSpec{Name: name, Command: append([]string{testbin.Path(t, "testharness"), "tools"}, args...)}
}

// startStdio starts a stdio source and closes it at cleanup.
func startStdio(t testing.TB, sup *process.Supervisor, spec StdioSpec) Source {
	t.Helper()
	src := NewStdioSource(spec, sup, testLog())
	if err := src.Start(testCtx(t)); err != nil {
		t.Fatalf("start %s: %v", spec.Name, err)
	}
	t.Cleanup(func() { src.Close(context.Background()) })
	return src
}

func newCatalog(t testing.TB, opts CatalogOptions, sources ...Source) *Catalog {
	t.Helper()
	cat, err := NewCatalog(testCtx(t), sources, opts)
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	return cat
}

func serve(t testing.TB, cat *Catalog, opts ServerOptions) *Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLog()
	}
	srv, err := Serve(cat, opts)
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(context.Background()); err != nil {
			t.Errorf("server close: %v", err)
		}
	})
	return srv
}

// fixture is the usual setup: source "tools" (every tool but grade),
// source "grader" (grade, hidden), harness built-in read_file.
type fixture struct {
	sup    *process.Supervisor
	tools  Source
	grader Source
	cat    *Catalog
	srv    *Server
}

func newFixture(t testing.TB, opts ServerOptions, toolArgs ...string) *fixture {
	t.Helper()
	f := &fixture{sup: newSup(t)}
	f.tools = startStdio(t, f.sup, toolsSpec(t, "tools", append([]string{"--omit", "grade"}, toolArgs...)...))
	f.grader = startStdio(t, f.sup, toolsSpec(t, "grader", "--only", "grade", "--score", "0.75"))
	f.cat = newCatalog(t, CatalogOptions{Builtins: []string{"read_file", "bash"}, Hide: []string{"grader/*"}}, f.tools, f.grader)
	f.srv = serve(t, f.cat, opts)
	return f
}

// httpClient returns a client with its own connection pool, closed at cleanup.
func httpClient(t testing.TB) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// connect opens an initialized mcp-go streamable-HTTP client on srv.
func connect(t testing.TB, url, token string, copts ...client.ClientOption) *client.Client {
	t.Helper()
	c, err := dial(t, url, token, copts...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return c
}

func dial(t testing.TB, url, token string, copts ...client.ClientOption) (*client.Client, error) {
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(httpClient(t)),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}),
		transport.WithHTTPLogger(testLog()))
	if err != nil {
		return nil, err
	}
	if len(copts) == 0 {
		copts = []client.ClientOption{client.WithProtocolVersion("2025-11-25")}
	}
	c := client.NewClient(tr, copts...)
	ctx := testCtx(t)
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "bridge-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		c.Close()
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return c, nil
}

// call calls a tool and returns the joined text content and IsError.
func call(t testing.TB, c *client.Client, name string, args any) (string, bool) {
	t.Helper()
	res, err := callErr(testCtx(t), c, name, args)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return resultText(res), res.IsError
}

func callErr(ctx context.Context, c *client.Client, name string, args any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return c.CallTool(ctx, req)
}

func resultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func toolNames(t testing.TB, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(testCtx(t), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// rawResponse is an HTTP response to a raw JSON-RPC POST.
type rawResponse struct {
	status int
	header http.Header
	body   []byte // the JSON-RPC message (the data of the last SSE event for a stream)
}

// rawPost POSTs one JSON-RPC message to url.
func rawPost(t testing.TB, hc *http.Client, url, token, session, body string) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
				last = append([]byte(nil), d...)
			}
		}
		b = last
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: b}
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawSession initializes a raw session and returns its id.
func rawSession(t testing.TB, hc *http.Client, url, token string) string {
	t.Helper()
	r := rawPost(t, hc, url, token, "", initializeBody)
	if r.status != http.StatusOK {
		t.Fatalf("initialize: status %d: %s", r.status, r.body)
	}
	sid := r.header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: no Mcp-Session-Id header")
	}
	if r := rawPost(t, hc, url, token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("initialized: status %d", r.status)
	}
	return sid
}

// rawToolSchemas extracts name -> inputSchema/outputSchema raw bytes from a
// tools/list result message.
func rawToolSchemas(t testing.TB, msg []byte) map[string][2]string {
	t.Helper()
	var m struct {
		Result struct {
			Tools []struct {
				Name         string          `json:"name"`
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("decode tools/list: %v\n%s", err, msg)
	}
	out := map[string][2]string{}
	for _, tl := range m.Result.Tools {
		out[tl.Name] = [2]string{string(tl.InputSchema), string(tl.OutputSchema)}
	}
	return out
}

// recorder collects OnCall/OnResult records.
type recorder struct {
	mu     sync.Mutex
	starts []CallStart
	ends   []CallEnd
}

func (r *recorder) opts() ServerOptions {
	return ServerOptions{
		OnCall:   func(s CallStart) { r.mu.Lock(); r.starts = append(r.starts, s); r.mu.Unlock() },
		OnResult: func(e CallEnd) { r.mu.Lock(); r.ends = append(r.ends, e); r.mu.Unlock() },
	}
}

func (r *recorder) snapshot() ([]CallStart, []CallEnd) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]CallStart(nil), r.starts...), append([]CallEnd(nil), r.ends...)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint(err))
	}
	return string(b)
}
