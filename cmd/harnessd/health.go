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
	register("health", "probe a running server's /health (for container HEALTHCHECKs without curl)", runHealth)
}

// runHealth asks GET /health of a server and exits 0 when it answers 200
// with status "healthy", 1 otherwise (unreachable, draining, bad answer).
func runHealth(args []string) int {
	c := newCLI("health", "harnessd health [flags]\n\n"+
		"Prints the server's /health answer and exits 0 when it is healthy, 1 when it is not (unreachable,\n"+
		"draining, or an unexpected answer). /health needs no API token.")
	fs := c.fs
	url := fs.String("url", "http://127.0.0.1:8000", "server `URL`")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if code, done := c.parse(args); done {
		return code
	}
	if code, done := c.noArgs(); done {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(*url, "/")+"/health", nil)
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
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Status != "healthy" {
		fmt.Fprintf(os.Stderr, "harnessd health: not healthy (HTTP %d)\n", resp.StatusCode)
		return exitFailure
	}
	return exitOK
}
