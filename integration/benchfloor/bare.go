package main

import (
	"bytes"
	"flag"
	"io"
	"net/http"

	"github.com/coder/websocket"
)

// runBare is a bare Go server: /ws answers every frame with a frame of
// -reply-size bytes, /health answers {"status":"healthy"}, and /echo
// returns a POST's body (the bare HTTP round trip of the tool-call floor).
func runBare(args []string) error {
	fs := flag.NewFlagSet("bare", flag.ContinueOnError)
	replySize := fs.Int("reply-size", 64, "bytes of each /ws reply frame")
	if err := fs.Parse(args); err != nil {
		return err
	}
	reply := bytes.Repeat([]byte{'x'}, *replySize)
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
			if err := c.Write(r.Context(), websocket.MessageText, reply); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"healthy"}`)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	return serveUntilEOF(mux)
}
