package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func init() {
	register("health", "probe a running server's /health, or /ready with --ready (for container HEALTHCHECKs without curl)", runHealth)
}

// runHealth asks GET /health (liveness) of a server, or GET /ready
// (readiness) with --ready, and exits 0 when it answers 200 with status
// "healthy" ("ready"), 1 otherwise (unreachable, not ready, bad answer).
func runHealth(args []string) int {
	c := newCLI("health", "harnessd health [flags]\n\n"+
		"Prints the server's /health answer (liveness) and exits 0 when it is healthy, 1 when it is not\n"+
		"(unreachable, or an unexpected answer). With --ready it asks /ready (readiness) instead: exit 0 when\n"+
		"the server can start a harness, 1 while draining or when a program of the environment is missing.\n"+
		"Neither needs the API token.")
	fs := c.fs
	url := fs.String("url", "http://127.0.0.1:8000", "server `URL`")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	ready := fs.Bool("ready", false, "ask readiness (/ready) instead of liveness (/health)")
	if code, done := c.parse(args); done {
		return code
	}
	if code, done := c.noArgs(); done {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	path, want := "/health", "healthy"
	if *ready {
		path, want = "/ready", "ready"
	}
	base := strings.TrimRight(*url, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base // host:port, as chat takes it
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd health:", err)
		return exitUsage
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd health:", err)
		return exitFailure
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		fmt.Fprintln(os.Stderr, "harnessd health: read answer:", err)
		return exitFailure
	}
	fmt.Println(strings.TrimSpace(string(body)))
	var h struct {
		Status string `json:"status"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Status != want {
		fmt.Fprintf(os.Stderr, "harnessd health: not %s (HTTP %d)\n", want, resp.StatusCode)
		return exitFailure
	}
	return exitOK
}
