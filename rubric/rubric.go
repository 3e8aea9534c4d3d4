package rubric

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/harnessd/harnessd/process"
	"github.com/harnessd/harnessd/wire"
)

// Input is what a rubric scores: one turn of an episode.
type Input struct {
	EpisodeID  string `json:"episode_id"`
	TurnNumber int    `json:"turn_number"`
	Message    string `json:"message"`
	Response   string `json:"response"`
	// Done says the episode ends with this turn.
	Done bool `json:"done"`
	// HarnessDone says the harness declared the task complete.
	HarnessDone bool `json:"harness_done"`
	// Observation is the serialized observation metadata of the turn.
	Observation json.RawMessage `json:"observation,omitempty"`
	// Workspace is the episode's working directory; a command rubric sees
	// (and is told) the path the harness sees.
	Workspace string `json:"workspace"`
	// Dialogue is the episode's conversation so far, this turn's response
	// included, when the environment has a simulated user (user:): a
	// command rubric reads it from the JSON on its stdin to score the
	// dialogue as a whole.
	Dialogue []DialogueEntry `json:"dialogue,omitempty"`
	// Sandbox starts the sandbox a command rubric runs in (given the
	// rubric's command); a command rubric never runs without one.
	Sandbox func(ctx context.Context, command []string) (*Sandbox, error) `json:"-"`
}

// DialogueEntry is one message of an episode's conversation.
type DialogueEntry struct {
	// Turn is the turn the message belongs to.
	Turn int `json:"turn"`
	// Role is "user" (the turn's message) or "assistant" (the harness's
	// response).
	Role string `json:"role"`
	// Source says who wrote a user message: "user" (the simulated user),
	// "task" (the task's instruction) or "trainer".
	Source string `json:"source,omitempty"`
	// Content is the message's text.
	Content string `json:"content"`
}

// Sandbox is where one command rubric runs: a launcher into a sandbox
// with the episode's workspace mounted read-only at Workspace, closed with
// Close once the rubric has ended.
type Sandbox struct {
	Launcher  process.Launcher
	Workspace string
	Close     func() error
}

// ErrNoSandbox is the error of a command rubric given no sandbox to run in.
var ErrNoSandbox = errors.New("command rubrics run only in a sandbox, and none was given")

// Result is one rubric's outcome: the reward detail an observation reports.
type Result = wire.RewardDetail

// ToolFunc calls a tool by name (hidden tools included) and returns its
// text, or an error for a failed call or a tool-reported error.
type ToolFunc func(ctx context.Context, name string, args json.RawMessage) (string, error)

// Deps are what rubrics need from the daemon.
type Deps struct {
	Supervisor *process.Supervisor // runs command scorers
	CallTool   ToolFunc            // reaches tool rubrics' tools
	Env        []string            // base environment of command scorers
	Logger     *slog.Logger
}

// Set is a configured list of rubrics.
type Set struct {
	specs []Spec
	res   []*regexp.Regexp
	deps  Deps
}

// New validates specs and returns a Set. A nil or empty spec list gives an
// empty Set that scores nothing.
func New(specs []Spec, deps Deps) (*Set, error) {
	s := &Set{deps: deps, specs: make([]Spec, len(specs)), res: make([]*regexp.Regexp, len(specs))}
	if s.deps.Logger == nil {
		s.deps.Logger = slog.Default()
	}
	names := map[string]bool{}
	for i, sp := range specs {
		if err := sp.validate(i); err != nil {
			return nil, err
		}
		if names[sp.Name] {
			return nil, fmt.Errorf("rubric %q: duplicate name", sp.Name)
		}
		names[sp.Name] = true
		if sp.Type == KindTool && deps.CallTool == nil {
			return nil, fmt.Errorf("rubric %q: %w", sp.Name, ErrNoToolCaller)
		}
		if sp.Type == KindCommand && deps.Supervisor == nil {
			return nil, fmt.Errorf("rubric %q: command rubric needs a process supervisor", sp.Name)
		}
		if sp.Pattern != "" {
			s.res[i] = regexp.MustCompile(sp.Pattern)
		}
		s.specs[i] = sp
	}
	return s, nil
}

// Empty reports whether the set has no rubrics.
func (s *Set) Empty() bool { return s == nil || len(s.specs) == 0 }

// Applies reports whether any rubric scores at this point: turn rubrics
// always, done rubrics only when in.Done.
func (s *Set) Applies(done bool) bool {
	if s == nil {
		return false
	}
	for _, sp := range s.specs {
		if sp.On == OnTurn || done {
			return true
		}
	}
	return false
}

// Score runs every rubric that applies to in (turn rubrics after every turn,
// done rubrics when in.Done) and returns the weighted sum of their scores and
// one Result each. A failing rubric contributes nothing to the sum and
// reports its error (the session then gives no reward: one failed rubric
// must not drop a penalty from the sum); Score itself never fails.
func (s *Set) Score(ctx context.Context, in Input) (float64, []Result) {
	if s == nil {
		return 0, nil
	}
	var results []Result
	var terms []float64
	for i := range s.specs {
		sp := &s.specs[i]
		if sp.On == OnDone && !in.Done {
			continue
		}
		r := Result{Name: sp.Name, Type: sp.Type, Weight: sp.weight()}
		score, detail, err := s.run(ctx, i, in)
		r.Detail = detail
		if err == nil && (math.IsNaN(score) || math.IsInf(score, 0)) {
			err = fmt.Errorf("score is not a finite number")
		}
		if err != nil {
			r.Error = err.Error()
			s.deps.Logger.Warn("rubric failed", "rubric", sp.Name, "episode_id", in.EpisodeID, "turn", in.TurnNumber, "err", err)
		} else {
			r.Score = &score
			terms = append(terms, score)
			terms = append(terms, r.Weight)
		}
		results = append(results, r)
	}
	return finiteWeightedSum(terms), results
}

// finiteWeightedSum is the sum of the products of terms' pairs (score,
// weight), finite: each score is finite, but their weighted sum may not
// be (two scores of 1.7e308, or one of weight 2, gave +Inf; +Inf and -Inf
// beside each other NaN, neither a JSON number). When the quick sum is not
// finite it is taken again exactly, and a sum beyond float64's range is
// its largest finite value of that sign.
func finiteWeightedSum(terms []float64) float64 {
	var total float64
	for i := 0; i+1 < len(terms); i += 2 {
		total += terms[i] * terms[i+1]
	}
	if !math.IsNaN(total) && !math.IsInf(total, 0) {
		return total
	}
	exact := new(big.Float).SetPrec(4096)
	for i := 0; i+1 < len(terms); i += 2 {
		p := new(big.Float).SetPrec(4096).SetFloat64(terms[i])
		exact.Add(exact, p.Mul(p, new(big.Float).SetFloat64(terms[i+1])))
	}
	f, _ := exact.Float64()
	return math.Max(-math.MaxFloat64, math.Min(math.MaxFloat64, f))
}

func (s *Set) run(ctx context.Context, i int, in Input) (float64, string, error) {
	sp := &s.specs[i]
	switch sp.Type {
	case KindMatch:
		ok := false
		if s.res[i] != nil {
			ok = s.res[i].MatchString(in.Response)
		} else {
			ok = strings.Contains(in.Response, sp.Contains)
		}
		if ok {
			return 1, "", nil
		}
		return 0, "", nil
	case KindCommand:
		return s.runCommand(ctx, sp, in)
	case KindTool:
		return s.runTool(ctx, sp, in)
	}
	return 0, "", fmt.Errorf("unknown rubric type %q", sp.Type)
}

// parseScore reads a score from tool or scorer output: a bare number, or
// JSON with a numeric "score" or "reward".
func parseScore(text string) (float64, bool) {
	t := strings.TrimSpace(text)
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		return f, true
	}
	// Only the two keys are decoded: the rest of the output (which may
	// echo what the harness wrote) stays raw JSON.
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(t), &obj) == nil {
		for _, k := range []string{"score", "reward"} {
			var f float64
			if v := bytes.TrimSpace(obj[k]); len(v) > 0 && (v[0] == '-' || '0' <= v[0] && v[0] <= '9') && json.Unmarshal(v, &f) == nil {
				return f, true
			}
		}
	}
	return 0, false
}

// Validate checks specs as New would, without building a Set, so that
// configuration errors surface when the configuration is loaded. The error
// joins every problem of every spec.
func Validate(specs []Spec) error {
	names := map[string]bool{}
	var errs []error
	for i := range specs {
		sp := specs[i]
		errs = append(errs, sp.validate(i))
		if names[sp.Name] {
			errs = append(errs, fmt.Errorf("rubric %q: duplicate name", sp.Name))
		}
		names[sp.Name] = true
	}
	return errors.Join(errs...)
}
