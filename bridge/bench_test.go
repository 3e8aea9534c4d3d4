package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/harnessd/harnessd/process"
)

// benchPaths sets up the three paths compared by BenchmarkToolCall and
// returns one call of each.
func benchPaths(b *testing.B) (bridged, direct, floor, inproc func() error) {
	sup := newSup(b)
	src := startStdio(b, sup, toolsSpec(b, "tools", "--only", "echo"))
	goEcho := NewGoSource("go", GoTool{Tool: Tool{Name: "go_echo"},
		Handler: func(_ context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
			var in struct{ Text string }
			json.Unmarshal(args, &in)
			return mcp.NewToolResultText(in.Text), nil
		}})
	srv := serve(b, newCatalog(b, CatalogOptions{}, src, goEcho), ServerOptions{})
	hc := connect(b, srv.URL(), srv.Token())

	// The same upstream program, spoken to directly over its pipes.
	spec := toolsSpec(b, "direct", "--only", "echo")
	p, err := sup.Start(process.Spec{Name: "direct", Path: spec.Command[0], Args: spec.Command[1:],
		Env: process.DefaultEnviron(nil), Stdio: process.StdioRaw, Logger: testLog()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Stop(context.Background(), 0) })
	tr := transport.NewIO(p.Stdout(), p.Stdin().(*os.File), nil)
	transport.WithCommandLogger(testLog())(tr)
	dc := client.NewClient(tr, client.WithProtocolVersion(UpstreamProtocolVersion))
	ctx := context.Background()
	if err := dc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dc.Close() })
	ireq := mcp.InitializeRequest{}
	ireq.Params.ProtocolVersion = UpstreamProtocolVersion
	if _, err := dc.Initialize(ctx, ireq); err != nil {
		b.Fatal(err)
	}

	// A bare loopback HTTP round trip with a body of similar size.
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	echo := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})}
	go echo.Serve(ln)
	b.Cleanup(func() { echo.Close() })
	floorClient := httpClient(b)
	floorURL := "http://" + ln.Addr().String() + "/mcp"
	payload := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ping"}}}`)

	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": "ping"}
	check := func(res *mcp.CallToolResult, err error) error {
		if err == nil && resultText(res) != "ping" {
			b.Fatalf("echo = %q", resultText(res))
		}
		return err
	}
	goReq := req
	goReq.Params.Name = "go_echo"
	bridged = func() error { return check(hc.CallTool(ctx, req)) }
	inproc = func() error { return check(hc.CallTool(ctx, goReq)) }
	direct = func() error { return check(dc.CallTool(ctx, req)) }
	floor = func() error {
		resp, err := floorClient.Post(floorURL, "application/json", bytes.NewReader(payload))
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
	for _, f := range []func() error{bridged, direct, floor, inproc} { // warm up
		for range 50 {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
	}
	return bridged, direct, floor, inproc
}

// BenchmarkToolCall compares a bridged tools/call (mcp-go HTTP client ->
// bridge -> stdio upstream) with a direct stdio call to the same upstream
// program and a bare loopback HTTP round trip; the ratio sub-benchmarks
// report per-call medians and bridged / (direct + http), whose budget is
// under 2. "bridged_go" (the same HTTP client -> bridge -> an in-process Go
// tool) shows the HTTP + MCP framing share of "bridged".
func BenchmarkToolCall(b *testing.B) {
	bridged, direct, floor, inproc := benchPaths(b)
	run := func(f func() error) func(*testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				if err := f(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("bridged", run(bridged))
	b.Run("direct", run(direct))
	b.Run("http_floor", run(floor))
	b.Run("bridged_go", run(inproc))
	// Both ratio runs measure every path in the same run, under the same
	// machine conditions: "ratio_blocks" alternates blocks of 20 calls per
	// path (each path warm), "ratio_interleaved" alternates single calls
	// (each path after the others, as a harness calling tools between
	// model turns would). One op is 20 calls (blocks) or 1 call
	// (interleaved) of each path.
	b.Run("ratio_blocks", ratio(bridged, direct, floor, 20))
	b.Run("ratio_interleaved", ratio(bridged, direct, floor, 1))
}

// ratio times the three paths in alternating blocks of block calls and
// reports their per-call medians and bridged / (direct + http).
func ratio(bridged, direct, floor func() error, block int) func(*testing.B) {
	return func(b *testing.B) {
		var tb, td, tf []time.Duration
		timed := func(f func() error, into *[]time.Duration) {
			for range block {
				t0 := time.Now()
				if err := f(); err != nil {
					b.Fatal(err)
				}
				*into = append(*into, time.Since(t0))
			}
		}
		for b.Loop() {
			timed(bridged, &tb)
			timed(direct, &td)
			timed(floor, &tf)
		}
		mb, md, mf := median(tb), median(td), median(tf)
		b.ReportMetric(float64(mb.Microseconds()), "bridged-µs")
		b.ReportMetric(float64(md.Microseconds()), "direct-µs")
		b.ReportMetric(float64(mf.Microseconds()), "http-µs")
		b.ReportMetric(float64(mb)/float64(md+mf), "ratio")
	}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
