package session

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/harnessd/harnessd/egress"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/process/sandbox"
	"github.com/harnessd/harnessd/tasks"
	"github.com/harnessd/harnessd/wire"
)

// ErrNoTaskset is returned by Reset for a task choice (task_id,
// task_index) in an environment without tasks:.
var ErrNoTaskset = errors.New("the environment serves no taskset (tasks: is not configured)")

// pickTask picks the episode's task when the environment has a taskset
// (nil without one).
func (s *Session) pickTask(opts ResetOptions) (*tasks.Task, error) {
	set := s.cfg.Taskset()
	if set == nil {
		if opts.TaskID != "" || opts.TaskIndex != nil {
			return nil, ErrNoTaskset
		}
		return nil, nil
	}
	t, err := set.Pick(tasks.Choice{ID: opts.TaskID, Index: opts.TaskIndex, Seed: opts.Seed})
	if err == nil && !t.AgentUser.Root() && !s.env.Sandboxed() {
		// In process isolation the harness runs as the daemon's user.
		return nil, fmt.Errorf("task %s: task.toml agent.user = %q cannot be honoured in process isolation (the harness runs as the daemon's user); use isolation: sandbox", t.ID, t.AgentUser.String())
	}
	return t, err
}

// taskStarted applies the task's episode budget ([agent] timeout_sec,
// when shorter than episode.episode_timeout) and puts the task into the
// reset observation.
func (s *Session) taskStarted(r *run, md *wire.Metadata) {
	t := r.ep.Task()
	if t == nil {
		return
	}
	if t.AgentTimeout > 0 && !t.IsMultiStep() {
		// A multi-step task's [agent] timeout_sec bounds each step's turn
		// (stepTimeout), as Harbor bounds each step's agent run.
		s.mu.Lock()
		if dl := time.Now().Add(t.AgentTimeout); r.deadline.IsZero() || dl.Before(r.deadline) {
			r.deadline = dl
			r.budget = t.AgentTimeout
		}
		s.mu.Unlock()
	}
	md.TaskID, md.TaskInstruction, md.TaskMetadata = t.ID, t.Instruction, t.Metadata
}

// episodeBudget is the episode's wall-clock budget for messages.
func (s *Session) episodeBudget(r *run) units.Duration {
	if r.budget > 0 {
		return units.Duration(r.budget)
	}
	return s.cfg.Episode.EpisodeTimeout
}

// turnMessage is what turn n delivers: the trainer's message, or the
// task's instruction when the first turn's message is empty — for a
// multi-step task, step n's instruction when turn n's message is empty.
func (s *Session) turnMessage(r *run, n int, msg string) string {
	t := r.ep.Task()
	switch {
	case msg != "" || t == nil:
		return msg
	case t.IsMultiStep() && n <= len(t.Steps):
		return t.Steps[n-1].Instruction
	case n == 1:
		return t.Instruction
	}
	return msg
}

// beginTaskStep prepares turn n of a multi-step task, step n: its
// workdir/ is uploaded into the workspace and its setup.sh runs (in a
// sandbox of its own, as the step's agent user). A setup that fails ends
// the episode as Harbor ends the trial: the step has no verifier result,
// and the observation returned (nil otherwise) is graded from the steps
// before it.
func (s *Session) beginTaskStep(ctx context.Context, r *run, n int) *wire.Observation {
	t := r.ep.Task()
	if t == nil || !t.IsMultiStep() || n > len(t.Steps) {
		return nil
	}
	ws := r.ep.Dirs().Workspace
	err := t.PrepareStep(ws, n)
	var res *tasks.Result
	if err == nil {
		scratch := scratchIn(r.ep.Dirs().Root, fmt.Sprintf("step%d-setup", n))
		defer os.RemoveAll(scratch)
		res, err = t.Setup(ctx, tasks.RunOptions{Workspace: ws, Scratch: scratch, Hide: s.gradeHide(), Step: n})
	}
	switch {
	case err != nil:
	case res == nil:
		return nil
	case res.ExitCode != 0 || res.TimedOut:
		err = fmt.Errorf("setup.sh exited with code %d (timed out: %v): %s", res.ExitCode, res.TimedOut, res.Stderr)
	default:
		return nil
	}
	name := t.Steps[n-1].Name
	r.ep.Log().Warn("task step setup failed", "step", name, "err", err)
	r.stepResults = append(r.stepResults, tasks.StepResult{Name: name, Failed: true})
	r.stepGrades = append(r.stepGrades, wire.TaskGrade{Step: name, Error: fmt.Sprintf("step %s: %v", name, err)})
	tctx, cancel := teardown(ctx)
	defer cancel()
	r.ep.StopHarness(tctx)
	s.events.Add(wire.ErrorEvent(wire.OriginDaemon, fmt.Sprintf("task step %s: %v", name, err), false))
	empty := ""
	obs := &wire.Observation{Done: true, Metadata: wire.Metadata{EpisodeID: r.id, TurnNumber: n, Response: &empty,
		TurnEvents: s.events.EndTurn(), Truncated: s.events.Truncation()}}
	r.stepStopped = fmt.Sprintf("step %s failed", name)
	s.finalTaskGrade(r, obs)
	s.noteObservation(obs)
	s.finish(tctx, r, "")
	return obs
}

// SubmitKey is the action metadata key that ends a task episode after its
// turn: {"message": "...", "metadata": {"submit": true}}.
const SubmitKey = "submit"

// submitted reports a step that asks to end the task episode and grade it.
func submitted(r *run, a wire.Action) bool {
	v, ok := a.Metadata[SubmitKey].(bool)
	return r.ep.Task() != nil && ok && v
}

// gradedFailures are the failures after which a task is still graded: the
// agent's work is in the workspace whatever stopped it. A cancelled turn
// (client gone, shutdown) and a failed start are not graded.
var gradedFailures = []wire.FailureType{
	wire.FailureTurnTimeout, wire.FailureEpisodeTimeout, wire.FailureHarnessCrashed, wire.FailureHarnessExited,
	wire.FailureProtocol, wire.FailureOutputLimit, wire.FailureModelBudget, wire.FailureResourceLimit, wire.FailureMaxTurns,
}

// scratchIn is the path of a grading's or a setup's scratch directory in
// the episode's directory root, named kind and 128 random bits: root is
// bound in the harness's sandbox (read-only, mode 0711: not listable but
// searchable), and between the steps of a task the harness is alive while
// the scratch holds the tests (the task's, which grade every later step,
// and the step's) and the verifier's logs, readable by any id. Only a
// name the harness cannot guess keeps them out of its reach.
func scratchIn(root, kind string) string {
	return filepath.Join(root, kind+"-"+rand.Text())
}

// gradeTask grades the episode's task when obs ends the episode: the
// harness is stopped first, then the task's tests run (tasks.Task.Grade)
// against the workspace, and their reward is added to obs's (a "tests"
// reward detail beside the rubrics').
func (s *Session) gradeTask(ctx context.Context, r *run, obs *wire.Observation) {
	ep := r.ep
	t := ep.Task()
	if t == nil || r.graded {
		return
	}
	if t.IsMultiStep() {
		s.gradeTaskStep(ctx, r, obs)
		return
	}
	if !obs.Done {
		return
	}
	if f := obs.Metadata.ErrorType; f != "" && !slices.Contains(gradedFailures, f) {
		return
	}
	r.graded = true
	tctx, cancel := teardown(ctx)
	ep.StopHarness(tctx)
	cancel()
	scratch := scratchIn(ep.Dirs().Root, "grade")
	defer os.RemoveAll(scratch)
	start := time.Now()
	l := s.cfg.Limits
	res, err := t.Grade(ctx, tasks.RunOptions{Workspace: ep.Dirs().Workspace, Scratch: scratch, Hide: s.gradeHide(),
		Limits: sandbox.Limits{MemoryBytes: int64(l.Memory), Pids: l.Pids, CPU: l.CPU}, Egress: s.gradeEgress()})
	g := s.wireGrade(r, res, err)
	g.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	addTaskGrade(obs, t.ID, g)
	s.markNeedsNetwork(obs, g)
	ep.Log().Info("task graded", "reward", rewardValue(g.Reward), "elapsed", time.Since(start), "error", g.Error)
}

// gradeHide are the daemon's directories the tests must not see.
func (s *Session) gradeHide() []string {
	out := []string{s.cfg.WorkspaceRoot()}
	if s.cfg.RecordDir != "" {
		out = append(out, s.cfg.RecordDir)
	}
	return out
}

// wireGrade is a grading run as metadata.grade (err: it could not run).
func (s *Session) wireGrade(r *run, res *tasks.Result, err error) *wire.TaskGrade {
	if err != nil {
		return &wire.TaskGrade{Error: err.Error()}
	}
	g := res.WireGrade()
	if len(g.Tampered) > 0 {
		r.ep.Log().Warn("task reward withheld: written by a process other than the tests'", "writers", g.Tampered)
	}
	return g
}

// markNeedsNetwork gives an episode whose tests needed the network the
// error_type grader_needs_network (its turn ended normally: no other
// error_type is replaced).
func (s *Session) markNeedsNetwork(obs *wire.Observation, g *wire.TaskGrade) {
	if g.ErrorType == wire.FailureGraderNeedsNetwork && obs.Metadata.ErrorType == "" {
		obs.Metadata.ErrorType, obs.Metadata.Error = g.ErrorType, g.Error
	}
}

// addTaskGrade puts task id's grade g on obs: the grade, a "tests" reward
// detail, and its reward added to the observation's.
func addTaskGrade(obs *wire.Observation, id string, g *wire.TaskGrade) {
	obs.Metadata.TaskID, obs.Metadata.Grade = id, g
	obs.Metadata.RewardDetails = append(obs.Metadata.RewardDetails, wire.RewardDetail{Name: "tests", Type: "task", Weight: 1, Score: g.Reward, Error: g.Error})
	if g.Reward != nil {
		total := *g.Reward
		if obs.Reward != nil {
			// Both are finite; their sum may not be (JSON has no +Inf).
			total = math.Max(-math.MaxFloat64, math.Min(math.MaxFloat64, total+*obs.Reward))
		}
		obs.Reward = &total
	}
}

// gradeEgress is the egress proxy a grader may use: the environment's
// (network.egress: allow, its network.allow hosts), never the host's own
// addresses nor, unless network.allow_private, private ones; nil without
// one.
func (s *Session) gradeEgress() *egress.Options {
	return s.cfg.Network.EgressOptions()
}

// gradeTaskStep grades turn n of a multi-step task: step n's tests run
// against the workspace (the harness stopped first when the episode ends
// here; between steps it stays, idle, for the next turn), the
// observation gets the step's grade and reward, and the episode ends
// after the last step or when the step stops the task (a failure without
// a verifier result, a min_reward it falls below). The observation that
// ends the episode carries the task's reward as Harbor derives it from
// the steps (tasks.Task.TrialRewards) and every step's grade.
func (s *Session) gradeTaskStep(ctx context.Context, r *run, obs *wire.Observation) {
	ep := r.ep
	t := ep.Task()
	n := obs.Metadata.TurnNumber
	if f := obs.Metadata.ErrorType; f != "" && !slices.Contains(gradedFailures, f) {
		if obs.Done && len(r.stepResults) > 0 {
			s.finalTaskGrade(r, obs)
		}
		return
	}
	if n < 1 || n > len(t.Steps) || len(r.stepResults) >= n {
		if obs.Done {
			s.finalTaskGrade(r, obs)
		}
		return
	}
	if n == len(t.Steps) {
		obs.Done = true
	}
	if obs.Done {
		tctx, cancel := teardown(ctx)
		ep.StopHarness(tctx)
		cancel()
	}
	name := t.Steps[n-1].Name
	scratch := scratchIn(ep.Dirs().Root, fmt.Sprintf("step%d-grade", n))
	defer os.RemoveAll(scratch)
	start := time.Now()
	l := s.cfg.Limits
	res, err := t.Grade(ctx, tasks.RunOptions{Workspace: ep.Dirs().Workspace, Scratch: scratch, Hide: s.gradeHide(), Step: n,
		Limits: sandbox.Limits{MemoryBytes: int64(l.Memory), Pids: l.Pids, CPU: l.CPU}, Egress: s.gradeEgress()})
	g := s.wireGrade(r, res, err)
	g.Step, g.DurationMS = name, float64(time.Since(start).Microseconds())/1000
	sr := tasks.StepResult{Name: name}
	if err == nil {
		sr.Rewards = res.Rewards()
	}
	sr.Failed = sr.Rewards == nil
	r.stepResults, r.stepGrades = append(r.stepResults, sr), append(r.stepGrades, *g)
	ep.Log().Info("task step graded", "step", name, "reward", rewardValue(g.Reward), "elapsed", time.Since(start), "error", g.Error)
	if stop, why := t.StopAfter(n-1, sr); stop && !obs.Done {
		obs.Done, r.stepStopped = true, why
		tctx, cancel := teardown(ctx)
		ep.StopHarness(tctx)
		cancel()
	}
	if obs.Done {
		s.finalTaskGrade(r, obs)
		return
	}
	addTaskGrade(obs, t.ID, g)
}

// finalTaskGrade puts a multi-step task's grade on the observation that
// ends its episode: the task's reward from the steps that ran, each
// step's grade, why it stopped early.
func (s *Session) finalTaskGrade(r *run, obs *wire.Observation) {
	t := r.ep.Task()
	r.graded = true
	g := &wire.TaskGrade{Steps: r.stepGrades, Stopped: r.stepStopped}
	for _, sg := range r.stepGrades {
		g.DurationMS += sg.DurationMS
		if sg.ErrorType != "" {
			g.ErrorType, g.Error = sg.ErrorType, fmt.Sprintf("step %s: %s", sg.Step, sg.Error)
		}
	}
	if g.ErrorType == "" {
		g.Scores = t.TrialRewards(r.stepResults)
		if v, ok := tasks.TrialReward(g.Scores); ok {
			g.Reward = &v
		} else {
			g.Error = tasks.NoTrialReward(r.stepResults)
		}
	}
	addTaskGrade(obs, t.ID, g)
	s.markNeedsNetwork(obs, g)
	r.ep.Log().Info("task graded", "reward", rewardValue(g.Reward), "steps", len(r.stepGrades), "stopped", r.stepStopped, "error", g.Error)
}

// lastStep reports whether turn n is a multi-step task's last step.
func lastStep(r *run, n int) bool {
	t := r.ep.Task()
	return t != nil && t.IsMultiStep() && n >= len(t.Steps)
}

// stepTimeout bounds turn n of a multi-step task: the step's [steps.agent]
// timeout_sec, else the task's [agent] timeout_sec, never longer than the
// environment's episode.turn_timeout; 0 for other turns (the defaults).
func (s *Session) stepTimeout(r *run, n int) time.Duration {
	t := r.ep.Task()
	if t == nil || !t.IsMultiStep() || n > len(t.Steps) {
		return 0
	}
	d := t.Steps[n-1].AgentTimeout
	if d <= 0 {
		d = t.AgentTimeout
	}
	if max := s.cfg.Episode.TurnTimeout.D(); max > 0 && (d <= 0 || max < d) {
		d = max
	}
	return d
}
