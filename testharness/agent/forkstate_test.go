package agent_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// chatServer is a loopback Chat Completions endpoint that answers every
// call with "answer N" and keeps each call's messages.
type chatServer struct {
	mu    sync.Mutex
	calls [][]json.RawMessage
}

func (c *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.calls = append(c.calls, req.Messages)
	n := len(c.calls)
	c.mu.Unlock()
	fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":"answer %d"}}]}`, n)
}

// The line protocol's fork hands over everything the agent keeps in memory
// (turns, history, the remembered string, the llm conversation), and a
// second agent process restored from it continues exactly: its next llm
// call's prompt extends the parent's conversation.
func TestForkStateRoundTrip(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	chat := &chatServer{}
	srv := &http.Server{Handler: chat}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	env := []string{"HARNESSD_MODEL_URL=http://" + ln.Addr().String(), "HARNESSD_MODEL_API_KEY=k"}

	parent := start(t, env)
	if got := last(parent.turnEvents("remember green;;llm hello"))["response"]; got != "remembered: green\nllm: answer 1" {
		t.Fatalf("turn 1: %q", got)
	}
	fmt.Fprintln(parent.in, `{"type":"fork","id":"f1"}`)
	var answer struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		State json.RawMessage `json:"state"`
	}
	if !parent.out.Scan() || json.Unmarshal(parent.out.Bytes(), &answer) != nil || answer.Type != "fork_state" || answer.ID != "f1" {
		t.Fatalf("fork answer %q", parent.out.Text())
	}

	sibling := start(t, env)
	line, _ := json.Marshal(map[string]any{"type": "restore", "state": answer.State})
	fmt.Fprintf(sibling.in, "%s\n", line)
	if ev := sibling.next(); ev.Type != "restored" {
		t.Fatalf("restore answer %+v", ev)
	}
	sibling.turn = 1
	got := last(sibling.turnEvents("recall;;count;;history;;llm again"))["response"]
	want := "recall: green\nturns: 2\nhistory: remember green;;llm hello | recall;;count;;history;;llm again\nllm: answer 2"
	if got != want {
		t.Fatalf("sibling's turn: %q, want %q", got, want)
	}
	chat.mu.Lock()
	defer chat.mu.Unlock()
	if len(chat.calls) != 2 || len(chat.calls[1]) != 3 || !reflect.DeepEqual(chat.calls[1][:2], append(chat.calls[0], json.RawMessage(`{"role":"assistant","content":"answer 1"}`))) ||
		!strings.Contains(string(chat.calls[1][2]), "again") {
		t.Fatalf("the sibling's llm call does not extend the parent's conversation: %s", fmtCalls(chat.calls))
	}
}

func fmtCalls(calls [][]json.RawMessage) string {
	var b strings.Builder
	for i, c := range calls {
		fmt.Fprintf(&b, "\ncall %d:", i+1)
		for _, m := range c {
			fmt.Fprintf(&b, " %s", m)
		}
	}
	return b.String()
}
