package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// toolCallResult is what runToolCall prints (one JSON line): the per-call
// p50 and p99 of each path, in microseconds.
type toolCallResult struct {
	N         int        `json:"n"`
	BridgedUS [2]float64 `json:"bridged_us"`
	DirectUS  [2]float64 `json:"direct_us"`
	HTTPUS    [2]float64 `json:"http_us"`
}

// runToolCall times, interleaved one call each per iteration: an MCP
// tools/call of echo through harnessd's bridge (streamable HTTP with the
// episode's token), the same call over stdio to a tool server this process
// starts itself (-tools, run as `PATH tools --only echo`), and a bare HTTP
// POST of a tools/call-sized body to -floor (benchfloor bare's /echo).
func runToolCall(args []string) error {
	fs := flag.NewFlagSet("toolcall", flag.ContinueOnError)
	bridgeURL := fs.String("bridge", "", "the bridge's MCP URL")
	token := fs.String("token", "", "the bridge's bearer token")
	tools := fs.String("tools", "", "the testharness binary (run as `PATH tools --only echo`)")
	floorURL := fs.String("floor", "", "a bare echo URL (benchfloor bare's /echo)")
	n := fs.Int("n", 300, "calls per path")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bridgeURL == "" || *tools == "" || *floorURL == "" {
		return fmt.Errorf("toolcall: -bridge, -tools and -floor are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

	tr, err := transport.NewStreamableHTTP(*bridgeURL, transport.WithHTTPBasicClient(hc),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + *token}))
	if err != nil {
		return fmt.Errorf("bridge transport: %w", err)
	}
	bridged := client.NewClient(tr)
	if err := initialize(ctx, bridged); err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	defer bridged.Close()
	direct, err := client.NewStdioMCPClient(*tools, []string{"PATH=" + os.Getenv("PATH")}, "tools", "--only", "echo")
	if err != nil {
		return fmt.Errorf("start tool server: %w", err)
	}
	defer direct.Close()
	if err := initialize(ctx, direct); err != nil {
		return fmt.Errorf("tool server: %w", err)
	}

	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"text": "ping"}
	call := func(c *client.Client) error {
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return err
		}
		if len(res.Content) != 1 {
			return fmt.Errorf("echo: %d content items", len(res.Content))
		}
		if t, ok := res.Content[0].(mcp.TextContent); !ok || t.Text != "ping" {
			return fmt.Errorf("echo answered %+v", res.Content[0])
		}
		return nil
	}
	payload := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ping"}}}`)
	post := func() error {
		resp, err := hc.Post(*floorURL, "application/json", bytes.NewReader(payload))
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
	paths := []func() error{func() error { return call(bridged) }, func() error { return call(direct) }, post}
	for range 50 { // warm up every path
		for _, p := range paths {
			if err := p(); err != nil {
				return err
			}
		}
	}
	times := make([][]time.Duration, len(paths))
	for range *n {
		for i, p := range paths {
			t0 := time.Now()
			if err := p(); err != nil {
				return err
			}
			times[i] = append(times[i], time.Since(t0))
		}
	}
	out := toolCallResult{N: *n, BridgedUS: p50p99(times[0]), DirectUS: p50p99(times[1]), HTTPUS: p50p99(times[2])}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func initialize(ctx context.Context, c *client.Client) error {
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "benchfloor", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	return nil
}

// p50p99 returns the 50th and 99th percentiles in microseconds.
func p50p99(d []time.Duration) [2]float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := min(max(int(p*float64(len(s))+0.5)-1, 0), len(s)-1)
		return float64(s[i]) / float64(time.Microsecond)
	}
	return [2]float64{at(0.50), at(0.99)}
}
