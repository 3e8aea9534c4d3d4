package acp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/harness"
	"github.com/harnessd/harnessd/harness/adapter/adaptertest"
	"github.com/harnessd/harnessd/wire"
)

// deafAgent starts an agent that, once the turn's prompt is read, never
// reads its stdin again and sends 20,000 requests (40 bytes each), then
// the prompt's response.
func deafAgent(t *testing.T) *Adapter {
	script := `read l; printf '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}\n'
read l; printf '{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}\n'
read l
i=0; while [ $i -lt 20000 ]; do printf '{"jsonrpc":"2.0","id":%d,"method":"x/y"}\n' $i; i=$((i+1)); done
printf '{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}\n'
exec sleep 60`
	l := adaptertest.Launch(t, "bash", "-c", script)
	l.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return start(t, l)
}

// deafTurn runs turn n of a within d.
func deafTurn(a *Adapter, n int, d time.Duration) (harness.TurnResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return a.Turn(ctx, harness.TurnInput{Number: n, Message: "hi", OutputLimit: 1 << 20}, func(wire.Event) {})
}

// TestAgentThatDoesNotReadHoldsNoGoroutinePerRequest: an agent that stops
// reading its stdin and sends 20,000 requests left one goroutine, blocked
// writing its answer, per request (19,232 after the turn) until the episode
// ended. The answers now wait in one bounded queue with one writer; when it
// is full the adapter stops reading the agent, and the turn ends at its
// deadline.
func TestAgentThatDoesNotReadHoldsNoGoroutinePerRequest(t *testing.T) {
	a := deafAgent(t)
	before := runtime.NumGoroutine()
	res, err := deafTurn(a, 1, 5*time.Second)
	during := runtime.NumGoroutine()
	t.Logf("turn: %+v %v; goroutines %d before the turn, %d after it", res, err, before, during)
	if during-before > 10 {
		t.Fatalf("20000 requests the agent never read the answers of left %d goroutines", during-before)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the turn of an agent that does not read ended with %v, not at its deadline", err)
	}
}

// TestPromptBehindAnUnreadAnswerKeepsItsDeadline: a turn's prompt written
// while an answer waits for the agent to read holds to the turn's
// deadline. The answer's write holds the process's write lock, which heeds
// no context: the prompt waited for it until the episode ended.
func TestPromptBehindAnUnreadAnswerKeepsItsDeadline(t *testing.T) {
	a := deafAgent(t)
	res, err := deafTurn(a, 1, 5*time.Second) // leaves answers the agent does not read
	t.Logf("turn 1: %+v %v", res, err)
	done := make(chan error, 1)
	go func() {
		_, err := deafTurn(a, 2, 200*time.Millisecond)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("turn 2: %v, want its deadline", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("turn 2, whose prompt waits behind an unread answer, outlived its 200ms deadline by a minute")
	}
}

// TestAnswersReachAnAgentThatReads is the control: an agent that reads gets
// every answer, in order, behind 2,000 answers to calls it made.
func TestAnswersReachAnAgentThatReads(t *testing.T) {
	parts := []string{}
	for range 2000 {
		parts = append(parts, `rawline {"jsonrpc":"2.0","id":"x","method":"fs/read_text_file","params":{}}`)
	}
	parts = append(parts, "permission Bash: ls")
	a := started(t)
	res, _ := mustTurn(t, a, 1, strings.Join(parts, ";;"))
	if res.Response != "permission Bash: ls: selected allow" {
		t.Fatalf("response %q", res.Response)
	}
}
