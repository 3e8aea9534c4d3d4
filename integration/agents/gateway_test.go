package agents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"golang.org/x/sys/unix"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// realKeyEnv and realKey are the daemon's variable holding the upstream's
// key and its distinctive value: the fake LLM must get it from the gateway,
// and no process of the agent's tree nor any file of its HOME or workspace
// may hold it.
const (
	realKeyEnv = "HARNESSD_TEST_REAL_MODEL_KEY"
	realKey    = "sk-REAL-do-not-leak-3b7f21c9e4a8"
)

// capture is what one turn's gateway events showed.
type capture struct {
	calls     int             // training calls whose ids matched the engine's
	toolCalls int             // of them, answers that called a tool
	streamed  map[string]bool // per dialect: streamed agent requests seen (true) or non-streamed (false)
	dialects  map[string]int
}

// agentEntries returns the fake LLM's log entries of agent name (its path
// prefix) after sequence number after.
func (s *suite) agentEntries(name string, after int) []fakellm.Entry {
	var out []fakellm.Entry
	for _, e := range s.llm.Requests() {
		if e.Seq > after && strings.HasPrefix(e.Path, "/"+name+"/") {
			out = append(out, e)
		}
	}
	return out
}

// lastSeq is the sequence number of the fake LLM's last entry.
func (s *suite) lastSeq() int {
	es := s.llm.Requests()
	if len(es) == 0 {
		return 0
	}
	return es[len(es)-1].Seq
}

// checkCapture checks turn n's gateway events against the engine's log:
// every training llm_response carries exactly the prompt and completion ids
// the engine produced for a distinct request of this agent made since the
// turn began (entries, which checkCapture marks used), it is stamped with
// turn n, and no call failed.
//
// ids holds the episode's calls so far: a call's prompt ids may be a delta
// from an earlier turn's call, which ids rebuilds.
func checkCapture(t *testing.T, n int, evs []wire.Event, entries []fakellm.Entry, used map[int]bool, ids *wire.CallTokenIDs) capture {
	t.Helper()
	c := capture{streamed: map[string]bool{}, dialects: map[string]int{}}
	if err := ids.AddEvents(evs); err != nil {
		t.Errorf("turn %d: the gateway's token ids: %v", n, err)
	}
	reqs := map[int]*wire.LLMRequest{}
	for _, e := range evs {
		if e.Origin != wire.OriginGateway {
			continue
		}
		if e.Turn != n {
			t.Errorf("turn %d: a gateway %s event stamped turn %d", n, e.Type, e.Turn)
		}
		switch d := e.Data.(type) {
		case *wire.LLMRequest:
			reqs[d.CallIndex] = d
		case *wire.LLMResponse:
			if d.Status != 0 || d.Error != "" {
				t.Errorf("turn %d: call %d failed: %d %s", n, d.CallIndex, d.Status, d.Error)
				continue
			}
			if p, ok := ids.Prompt(d.CallIndex); ok {
				full := *d
				full.PromptTokenIDs = p
				d = &full
			}
			if d.Traffic != "training" || len(d.PromptTokenIDs) == 0 || len(d.CompletionTokenIDs) == 0 || len(d.Logprobs) != len(d.CompletionTokenIDs) {
				t.Errorf("turn %d: call %d: traffic %q, %d prompt ids, %d completion ids, %d logprobs", n, d.CallIndex,
					d.Traffic, len(d.PromptTokenIDs), len(d.CompletionTokenIDs), len(d.Logprobs))
				continue
			}
			match := -1
			for i, en := range entries {
				if used[en.Seq] {
					continue
				}
				p, comp, ok := en.EngineTokenIDs()
				if ok && slices.Equal(p, d.PromptTokenIDs) && slices.Equal(comp, d.CompletionTokenIDs) {
					match = i
					break
				}
			}
			if match < 0 {
				t.Errorf("turn %d: call %d's %d prompt and %d completion ids match no engine request of the turn", n, d.CallIndex,
					len(d.PromptTokenIDs), len(d.CompletionTokenIDs))
				continue
			}
			en := entries[match]
			used[en.Seq] = true
			if en.Headers["Authorization"] != "Bearer "+realKey {
				t.Errorf("turn %d: the engine got Authorization %q, want the real key", n, en.Headers["Authorization"])
			}
			for j, lp := range d.Logprobs {
				if lp != fakellm.EngineLogprob(d.CompletionTokenIDs[j], j) {
					t.Errorf("turn %d: call %d: logprob %d is %v, the engine's %v", n, d.CallIndex, j, lp, fakellm.EngineLogprob(d.CompletionTokenIDs[j], j))
					break
				}
			}
			c.calls++
			if len(en.ReplyCalls) > 0 {
				c.toolCalls++
			}
			if r := reqs[d.CallIndex]; r != nil {
				c.dialects[r.Dialect]++
				c.streamed[fmt.Sprintf("%s stream=%v", r.Dialect, r.Stream)] = true
			}
		}
	}
	return c
}

// checkAllMatched fails for an answered engine request of the agent that no
// captured call matched.
func checkAllMatched(t *testing.T, entries []fakellm.Entry, used map[int]bool) {
	t.Helper()
	for _, e := range entries {
		if _, _, ok := e.EngineTokenIDs(); ok && !used[e.Seq] {
			t.Errorf("engine request %d (%s, rule %s) was captured in no turn", e.Seq, e.Path, e.Rule)
		}
	}
}

// checkNoRealKey fails if a process of tree has the real key in its
// environment or a file under root (the daemon's workspaces: every
// episode's HOME and workspace) holds it.
func checkNoRealKey(t *testing.T, tree []proc, root string) (procs, files int) {
	t.Helper()
	for _, p := range tree {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.pid))
		if err != nil {
			continue // gone
		}
		procs++
		if bytes.Contains(b, []byte(realKey)) || bytes.Contains(b, []byte(realKeyEnv+"=")) {
			t.Errorf("process %s holds the real model key in its environment", p)
		}
	}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > 64<<20 {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		files++
		if bytes.Contains(b, []byte(realKey)) {
			t.Errorf("file %s holds the real model key", path)
		}
		return nil
	})
	if procs == 0 || files == 0 {
		t.Errorf("checked %d processes and %d files for the real key: nothing to check", procs, files)
	}
	return procs, files
}

// streamSummary lists the dialect/streaming combinations seen, sorted.
func streamSummary(cs ...capture) string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cs {
		for k := range c.streamed {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// replayNonStreaming sends the agent's last model request of evs again,
// non-streamed, in its own dialect, to the episode's gateway with the
// episode's key, both read from the agent's environment (pid): so that
// every dialect's non-streaming path runs through the real daemon, for
// agents that only stream. It returns the dialect.
func replayNonStreaming(t *testing.T, pid int, evs []wire.Event) string {
	t.Helper()
	// In sandbox isolation pid is the sandbox's init: the agent is below
	// it, and its gateway listens inside the sandbox's network namespace.
	agent := withModelEnv(pid)
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", agent))
	if err != nil {
		t.Fatal(err)
	}
	var base, key string
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("HARNESSD_MODEL_URL=")); ok {
			base = string(v)
		}
		if v, ok := bytes.CutPrefix(kv, []byte("HARNESSD_MODEL_API_KEY=")); ok {
			key = string(v)
		}
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasPrefix(key, "sk-harnessd-") {
		t.Fatalf("the agent's environment has gateway %q, key %q", base, key)
	}
	var last *wire.LLMRequest
	for _, e := range evs {
		if r, ok := e.Data.(*wire.LLMRequest); ok && e.Origin == wire.OriginGateway && len(r.Tools) > 0 {
			last = r
		}
	}
	if last == nil {
		t.Fatal("no gateway llm_request offering tools to replay")
	}
	// Its messages may be a delta from an earlier request's (all of this
	// episode's calls so far are in the turn's events): the whole
	// conversation again.
	var msgs wire.CallMessages
	if err := msgs.AddEvents(evs); err != nil {
		t.Fatal(err)
	}
	whole, ok := msgs.Messages(last.CallIndex)
	if !ok {
		t.Fatalf("call %d's messages cannot be rebuilt from the turn's events (missing %v)", last.CallIndex, msgs.Missing())
	}
	full := *last
	full.Messages = whole
	last = &full
	var path string
	body := map[string]any{"model": last.Model}
	hdr := http.Header{"Content-Type": {"application/json"}}
	switch last.Dialect {
	case "anthropic":
		path = "/v1/messages"
		body["messages"], body["tools"], body["max_tokens"] = last.Messages, last.Tools, 1024
		hdr.Set("x-api-key", key)
		hdr.Set("anthropic-version", "2023-06-01")
	case "openai-chat":
		path = "/v1/chat/completions"
		body["messages"], body["tools"] = last.Messages, last.Tools
		hdr.Set("Authorization", "Bearer "+key)
	case "openai-responses":
		path = "/v1/responses"
		body["input"], body["tools"] = last.Messages, last.Tools
		hdr.Set("Authorization", "Bearer "+key)
	case "gemini":
		path = "/v1beta/models/" + last.Model + ":generateContent"
		delete(body, "model")
		body["contents"], body["tools"] = last.Messages, last.Tools
		hdr.Set("x-goog-api-key", key)
	default:
		t.Fatalf("dialect %q", last.Dialect)
	}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(b))
	req.Header = hdr
	client := &http.Client{Transport: &http.Transport{DialContext: dialInNetns(agent)}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.HasPrefix(bytes.TrimSpace(out), []byte("data:")) {
		t.Fatalf("non-streamed %s replay: %d %.300s", last.Dialect, resp.StatusCode, out)
	}
	return last.Dialect
}

// withModelEnv returns pid, or the first of its descendants, whose
// environment names the model gateway (0 when none).
func withModelEnv(pid int) int {
	queue := []int{pid}
	all := allProcs()
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p)); err == nil && bytes.Contains(b, []byte("HARNESSD_MODEL_URL=")) {
			return p
		}
		for _, c := range all {
			if c.ppid == p {
				queue = append(queue, c.pid)
			}
		}
	}
	return pid
}

// dialInNetns dials from the network namespace of process pid (a
// sandboxed agent's, where its gateway door listens; the test runs as
// root). The dial runs on a locked thread that enters the namespace and is
// put back before it is unlocked: a thread that ended instead would fire
// the parent-death signal of every daemon it once forked (Go's Pdeathsig
// is per thread), killing another agent's daemon mid-test.
func dialInNetns(pid int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			home, err := os.Open("/proc/thread-self/ns/net")
			if err != nil {
				runtime.UnlockOSThread()
				ch <- result{nil, err}
				return
			}
			defer home.Close()
			f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
			if err != nil {
				runtime.UnlockOSThread()
				ch <- result{nil, err}
				return
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				runtime.UnlockOSThread()
				ch <- result{nil, fmt.Errorf("enter the agent's network namespace: %w", err)}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
				runtime.UnlockOSThread() // back home: the thread may serve others
			} // else it stays locked and ends with this goroutine
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}
