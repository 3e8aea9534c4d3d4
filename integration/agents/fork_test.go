package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/gateway"
	presets "github.com/harnessd/harnessd/harness/agents"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/wire"
)

// msgThird is a sibling's first turn after a fork.
const msgThird = "Third message, after the fork: what did I say before?"

// TestClaudeCodeFork forks a live Claude Code episode (the pinned npm
// package, the fake LLM in engine mode behind the gateway) after two turns
// into 4 siblings, by its own resume and by replay: each sibling's first
// model call extends the parent's last call's prompt + completion, its
// export holds the parent's chain as its prefix, and neither mechanism
// spent an engine call before the sibling's own turn (replay answered the
// parent's turns from the record).
func TestClaudeCodeFork(t *testing.T) {
	deps := pinned(t)
	s := newSuite(t)
	p := presets.ClaudeCode()
	s.require(t, deps, p)
	t.Parallel()
	d := s.serve(t, p, "--model-upstream", "engine", "--max-sessions", "12")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	env, err := client.Dial(ctx, d.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	obs, err := env.Reset(ctx, client.ResetOptions{})
	if err != nil || obs.Done {
		t.Fatalf("reset: %v %+v", err, obs)
	}
	if iso := obs.Metadata.Isolation; iso != "sandbox" {
		// Claude Code writes its working directory and HOME into its
		// system prompt: only sandbox isolation shows every episode the
		// same paths, so that a sibling's prompt extends its parent's.
		testbin.Missing(t, "a fork's shared token prefix with Claude Code needs sandbox isolation (this daemon runs %q)", iso)
	}
	for _, m := range []string{msgTool, msgSecond} {
		obs, err := env.Step(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		checkTurn(t, m, obs)
	}
	parentID := ""
	if st, err := env.State(ctx); err == nil && st.EpisodeID != nil {
		parentID = *st.EpisodeID
	}
	parent, err := exportOf(ctx, d.url, parentID)
	if err != nil {
		t.Fatal(err)
	}
	for _, mech := range []string{"resume", "replay"} {
		t.Run(mech, func(t *testing.T) {
			before := s.lastSeq()
			t0 := time.Now()
			sibs, err := env.Fork(ctx, client.ForkOptions{Count: 4, Mechanism: mech})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("fork ×4 by %s: %s", mech, time.Since(t0))
			if n := len(s.agentEntries(p.Name, before)); n != 0 {
				t.Errorf("the fork by %s made %d engine calls before the siblings' own turns", mech, n)
			}
			for i, sb := range sibs {
				if sb.Err != nil || sb.Mechanism != mech {
					t.Fatalf("sibling %d: %v (%s)", i, sb.Err, sb.Mechanism)
				}
				checkSibling(t, ctx, env, sb, parent, d.url)
			}
		})
	}
}

// checkSibling runs a sibling's first turn and checks its first model call
// and its export against the parent's export.
func checkSibling(t *testing.T, ctx context.Context, parent *client.Env, sb client.Sibling, pex *exportDoc, url string) {
	t.Helper()
	e, err := parent.AttachSibling(ctx, sb)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	obs, err := e.Step(ctx, msgThird)
	if err != nil {
		t.Fatal(err)
	}
	checkTurn(t, "sibling's turn", obs)
	var first *wire.LLMResponse
	for _, ev := range obs.Metadata.TurnEvents {
		if r, ok := ev.Data.(*wire.LLMResponse); ok && ev.Origin == wire.OriginGateway && r.ParentCallIndex > 0 {
			first = r
			break
		}
	}
	if first == nil {
		t.Fatalf("no model call of the sibling's turn extends an earlier one: %s", eventLines(obs.Metadata.TurnEvents))
	}
	base := pex.sequence(first.ParentCallIndex)
	if base == nil {
		t.Fatalf("the sibling's call extends call %d, which the parent's export does not have", first.ParentCallIndex)
	}
	if p := first.PromptTokenIDs; first.PromptTokenIDsFrom != 0 || len(p) <= len(base) || !slices.Equal(p[:len(base)], base) {
		t.Errorf("the sibling's call %d does not extend the parent's call %d's prompt+completion (%d ids, from %d; base %d)",
			first.CallIndex, first.ParentCallIndex, len(p), first.PromptTokenIDsFrom, len(base))
	}
	ex, err := exportOf(ctx, url, sb.EpisodeID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ex.Chains {
		if slices.Contains(c.Calls, first.CallIndex) {
			if len(c.InputIDs) <= len(base) || !slices.Equal(c.InputIDs[:len(base)], base) {
				t.Errorf("the sibling's chain through call %d does not start with the parent's", first.CallIndex)
			}
			return
		}
	}
	t.Errorf("no chain of the sibling's export holds its call %d", first.CallIndex)
}

// exportDoc is an episode's training export.
type exportDoc struct{ gateway.Export }

// sequence returns call k's prompt + completion ids: its chain's ids up to
// the end of its completion span (nil when no chain holds it).
func (ex *exportDoc) sequence(k int) []int {
	for _, c := range ex.Chains {
		for _, sp := range c.Spans {
			if sp.CallIndex == k && sp.Kind == gateway.SpanCompletion {
				return c.InputIDs[:sp.End]
			}
		}
	}
	return nil
}

// exportOf reads an episode's export from the daemon at url.
func exportOf(ctx context.Context, url, episodeID string) (*exportDoc, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/episodes/"+episodeID+"/export", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ex exportDoc
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("export of %s: HTTP %d: %.300s", episodeID, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, &ex.Export); err != nil {
		return nil, fmt.Errorf("export of %s: %w", episodeID, err)
	}
	return &ex, nil
}
