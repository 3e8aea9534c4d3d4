package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"

	"github.com/coder/websocket"
)

// runRelay is the minimal relay daemon: per WebSocket connection it starts
// the agent (until its ready line); per client frame it decodes the step's
// message, writes it to the agent's stdin as one jsonl message line, reads
// the agent's stdout up to turn_complete, and answers with those lines as
// one frame (padded with spaces to -reply-size, so that the client reads as
// many bytes as harnessd's observation frame has).
func runRelay(args []string) error {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	agent := fs.String("agent", "", "the testharness binary (run as `PATH agent`)")
	replySize := fs.Int("reply-size", 0, "pad each reply frame to at least this many bytes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *agent == "" {
		return fmt.Errorf("relay: -agent is required")
	}
	return serveUntilEOF(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(64 << 20)
		if err := relayConn(r, c, *agent, *replySize); err != nil {
			c.Close(websocket.StatusInternalError, err.Error())
		}
	}))
}

// relayConn runs one connection's agent and relays its turns.
func relayConn(r *http.Request, c *websocket.Conn, agent string, replySize int) error {
	cmd := exec.Command(agent, "agent")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HARNESSD_PROTOCOL=1"}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("agent stdin: %w", err)
	}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("agent stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start agent: %w", err)
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	out := bufio.NewReaderSize(pipe, 1<<16)
	if line, err := out.ReadBytes('\n'); err != nil || !bytes.Contains(line, []byte(`"ready"`)) {
		return fmt.Errorf("agent not ready: %q %v", line, err)
	}
	var reply bytes.Buffer
	for turn := 1; ; turn++ {
		_, frame, err := c.Read(r.Context())
		if err != nil {
			return nil // the client went away
		}
		var step struct {
			Data struct {
				Message string `json:"message"`
			} `json:"data"`
		}
		if err := json.Unmarshal(frame, &step); err != nil {
			return fmt.Errorf("bad frame: %w", err)
		}
		line, _ := json.Marshal(map[string]any{"type": "message", "turn": turn, "content": step.Data.Message})
		if _, err := in.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("write to agent: %w", err)
		}
		reply.Reset()
		for {
			line, err := out.ReadBytes('\n')
			if err != nil {
				return fmt.Errorf("read from agent: %w", err)
			}
			reply.Write(line)
			if bytes.Contains(line, []byte(`"turn_complete"`)) {
				break
			}
		}
		for reply.Len() < replySize {
			reply.WriteByte(' ')
		}
		if err := c.Write(r.Context(), websocket.MessageText, reply.Bytes()); err != nil {
			return nil
		}
	}
}
