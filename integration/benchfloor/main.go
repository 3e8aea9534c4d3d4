// Command benchfloor is the out-of-process floor of harnessd's benchmarks
// (integration/bench_*_test.go, `make bench`): the least a daemon could do
// for the same work, each in a process of its own as harnessd is.
//
//	benchfloor relay -agent PATH   pipe-to-agent + WebSocket-to-client, nothing else
//	benchfloor bare                a bare net/http + coder/websocket server
//	benchfloor toolcall ...        a client process timing MCP tool calls
//
// The servers listen on 127.0.0.1:0, print their address as the first line
// of stdout, and exit when stdin reaches EOF (their parent, the benchmark,
// holds it open). The program owns nothing of harnessd and imports none of
// its packages: it must stay a floor, doing only what it names.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchfloor relay|bare|toolcall [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "relay":
		err = runRelay(os.Args[2:])
	case "bare":
		err = runBare(os.Args[2:])
	case "toolcall":
		err = runToolCall(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q (want relay, bare or toolcall)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchfloor:", err)
		os.Exit(1)
	}
}

// serveUntilEOF serves h on a fresh loopback listener, prints the address,
// and returns when stdin reaches EOF or the server fails.
func serveUntilEOF(h http.Handler) error {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Println(ln.Addr().String())
	srv := &http.Server{Handler: h}
	failed := make(chan error, 1)
	go func() { failed <- srv.Serve(ln) }()
	eof := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(eof) }()
	select {
	case <-eof:
		srv.Close()
		return nil
	case err := <-failed:
		return fmt.Errorf("serve: %w", err)
	}
}
