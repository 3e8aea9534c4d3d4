package simuser

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
)

// TestAModelUsersConversationIsBounded (red team 5): a model user's
// conversation kept every harness response for the episode's life and
// re-sent all of it on every call; a harness's response is bounded per
// turn only (4 MiB a line), so 24 turns of 1 MiB replies made a 24 MiB
// request body and kept 24 MiB in the daemon, without end. Now the
// conversation keeps the system message and the latest messages within
// maxHistoryBytes (8 MiB), starting with one of the harness's responses.
// The controls: the first call carries the whole 1 MiB reply, and every
// call the latest reply and the system message.
func TestAModelUsersConversationIsBounded(t *testing.T) {
	const reply = 1 << 20
	const turns = 24
	var (
		mu      sync.Mutex
		largest int
		last    []chatMessage
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []chatMessage `json:"messages"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Errorf("the user model's request is not JSON: %v", err)
		}
		mu.Lock()
		largest, last = max(largest, len(b)), req.Messages
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"go on"}}]}`)
	}))
	t.Cleanup(srv.Close)
	cfg, err := config.ParseConfig([]byte("harness:\n  command: [/bin/true]\nuser:\n  model:\n    url: "+srv.URL+"\n    name: user-model\n"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := NewModel(cfg.User.Model)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 1; i <= turns; i++ {
		resp := strings.Repeat(string(rune('a'+i%26)), reply)
		if _, err := m.Ask(ctx, Query{Type: "observation", EpisodeID: "e1", Turn: i, Response: &resp}); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		mu.Lock()
		if i == 1 && largest < reply {
			t.Fatalf("control: the first call's body is %d bytes, want the %d-byte reply in it", largest, reply)
		}
		n := len(last)
		if n < 2 || last[0].Role != "system" || last[1].Role != "user" || last[n-1].Content != resp {
			t.Fatalf("control: turn %d's call does not carry the system message, then a user message, and the latest reply last", i)
		}
		mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d turns of %d-byte replies: largest call body %d bytes, the last carried %d messages", turns, reply, largest, len(last))
	if largest > maxHistoryBytes+64<<10 {
		t.Errorf("a call's body reached %d bytes; want the conversation within %d bytes", largest, maxHistoryBytes)
	}
	kept := 0
	for _, h := range m.history {
		kept += len(h.Content)
	}
	if kept > maxHistoryBytes {
		t.Errorf("the model user keeps %d bytes of conversation; want at most %d", kept, maxHistoryBytes)
	}
}
