package session_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harnessd/harnessd/config"
	"github.com/harnessd/harnessd/internal/testbin"
	"github.com/harnessd/harnessd/internal/units"
	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/session"
	"github.com/harnessd/harnessd/testharness/fakellm"
	"github.com/harnessd/harnessd/wire"
)

// withUser gives a configuration the test double's simulated user.
func withUser(t *testing.T, args ...string) func(*config.Config) {
	bin := testbin.Path(t, "testharness")
	return func(c *config.Config) {
		c.User = &config.UserConfig{Command: append([]string{bin, "user"}, args...), Timeout: units.Duration(20 * time.Second)}
	}
}

// userSession is a session with a simulated user; the user program runs in
// a side sandbox, so the machine must have them.
func userSession(t *testing.T, edits ...func(*config.Config)) *session.Session {
	t.Helper()
	if r := sandboxProbe(); !r.OK {
		testbin.Missing(t, "the simulated user runs in a sandbox: %s", r.Detail)
	}
	cfg := testConfig(t)
	for _, e := range edits {
		e(cfg)
	}
	return newSession(t, cfg)
}

// A simulated-user program plays a five-turn episode to done from a single
// reset: one step with play asks the user for each turn's message (it
// checks every response, so it saw each observation) and ends when the
// user says done after turn 5.
func TestSimulatedUserPlaysFiveTurnsToDone(t *testing.T) {
	rec := t.TempDir()
	s := userSession(t, withUser(t, "--turns", "5", "--expect", "turn %d"), func(c *config.Config) { c.RecordDir = rec })
	reset(t, s)
	var turns []int
	obs, err := s.Step(context.Background(), wire.Action{Metadata: map[string]any{session.PlayKey: true}}, func(e wire.Event) {
		if e.Type == wire.EventTurnComplete {
			turns = append(turns, e.Turn)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !obs.Done || !obs.Metadata.UserDone || obs.Metadata.ErrorType != "" {
		t.Fatalf("want the user's done, got done=%v %+v", obs.Done, obs.Metadata)
	}
	if obs.Metadata.TurnNumber != 5 || obs.Metadata.UserReason != "satisfied after 5 turns" {
		t.Errorf("ended at turn %d with reason %q, want turn 5 and the user's reason", obs.Metadata.TurnNumber, obs.Metadata.UserReason)
	}
	if len(turns) != 5 {
		t.Errorf("turns streamed: %v, want 5", turns)
	}
	if obs.Metadata.MessageSource != wire.SourceUser {
		t.Errorf("message_source %q, want user", obs.Metadata.MessageSource)
	}
	if _, err := s.Step(context.Background(), wire.Action{}, nil); err != session.ErrEpisodeDone {
		t.Errorf("a step after the user's done: %v, want ErrEpisodeDone", err)
	}
	// The record file has every turn's message, marked as the user's.
	s.Close(context.Background())
	files, _ := filepath.Glob(filepath.Join(rec, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("record files %v", files)
	}
	f, _ := os.Open(files[0])
	defer f.Close()
	recs, err := wire.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, r := range recs {
		if r.Kind == wire.RecordMessage {
			if r.Source != wire.SourceUser {
				t.Errorf("message record of turn %d has source %q, want user", r.Turn, r.Source)
			}
			msgs = append(msgs, *r.Content)
		}
	}
	if strings.Join(msgs, "|") != "say turn 1|say turn 2|say turn 3|say turn 4|say turn 5" {
		t.Errorf("recorded messages %q", msgs)
	}
}

// Step by step: each empty step takes the user's message; a trainer's
// message replaces it; the user's done lands on the turn after which it
// said so, where a done rubric scores the dialogue it is given.
func TestSimulatedUserStepByStepAndDialogueRubric(t *testing.T) {
	scorer := filepath.Join(t.TempDir(), "dialogue.sh")
	// The rubric scores the number of user messages the dialogue holds.
	os.WriteFile(scorer, []byte("#!/bin/sh\ngrep -o '\"role\":\"user\"' | wc -l\n"), 0o755)
	s := userSession(t, withUser(t, "--turns", "3"), func(c *config.Config) {
		c.Rubrics = []rubric.Spec{{Name: "dialogue", Type: rubric.KindCommand, Command: []string{scorer}, On: rubric.OnDone}}
	})
	reset(t, s)
	if got := *step(t, s, "").Metadata.Response; got != "turn 1" {
		t.Errorf("turn 1 answered %q", got)
	}
	obs := step(t, s, "say from the trainer")
	if *obs.Metadata.Response != "from the trainer" || obs.Metadata.MessageSource != "" {
		t.Errorf("turn 2: %q source %q", *obs.Metadata.Response, obs.Metadata.MessageSource)
	}
	obs = step(t, s, "")
	if *obs.Metadata.Response != "turn 3" || !obs.Done || !obs.Metadata.UserDone {
		t.Fatalf("turn 3: %q done=%v %+v", *obs.Metadata.Response, obs.Done, obs.Metadata)
	}
	if obs.Reward == nil || *obs.Reward != 3 {
		t.Errorf("dialogue rubric: reward %v, details %+v; want 3 user messages", obs.Reward, obs.Metadata.RewardDetails)
	}
}

// A user program that dies, answers what is not an answer, or does not
// answer in time ends the episode at the next step with error_type
// user_failed, naming why.
func TestSimulatedUserFailureEndsTheEpisode(t *testing.T) {
	// user.timeout bounds the opening answer too (the user program's start
	// in its sandbox, seconds on a loaded machine): only the silent user
	// waits for it to run out, so the others are given a generous one.
	for _, c := range []struct {
		flag, want string
		timeout    time.Duration
	}{
		{"--crash-at", "exited with code 3", time.Minute},
		{"--garbage-at", "this is not an answer", time.Minute},
		{"--silent-at", "no answer within user.timeout 4s", 4 * time.Second},
	} {
		t.Run(c.flag, func(t *testing.T) {
			s := userSession(t, withUser(t, c.flag, "2"), func(cfg *config.Config) { cfg.User.Timeout = units.Duration(c.timeout) })
			reset(t, s)
			// Question 1 is the opening; question 2 comes after turn 1,
			// whose observation is whole: the failure ends the next step.
			if obs := step(t, s, ""); obs.Done || *obs.Metadata.Response != "turn 1" {
				t.Fatalf("turn 1: done=%v %+v", obs.Done, obs.Metadata)
			}
			obs := step(t, s, "")
			if !obs.Done || obs.Metadata.ErrorType != wire.FailureUser || !strings.Contains(obs.Metadata.Error, c.want) {
				t.Fatalf("want user_failed naming %q, got done=%v %s: %s", c.want, obs.Done, obs.Metadata.ErrorType, obs.Metadata.Error)
			}
		})
	}
}

// Playing to done without a simulated user is refused.
func TestPlayNeedsAUser(t *testing.T) {
	s := newSession(t, testConfig(t))
	reset(t, s)
	if _, err := s.Step(context.Background(), wire.Action{Metadata: map[string]any{session.PlayKey: true}}, nil); err != session.ErrNoUser {
		t.Fatalf("play without a user: %v, want ErrNoUser", err)
	}
}

// A model user plays through the episode's model upstream, but its calls
// go from the daemon straight to the endpoint: they are never captured by
// the episode's gateway, so the training export holds the harness's calls
// only. The fake engine's log (the positive control) shows both.
func TestModelUserIsNeverInTheTrainingExport(t *testing.T) {
	llm := fakellm.New(fakellm.Options{Engine: true, Script: &fakellm.Script{Rules: []fakellm.Rule{
		// Requests: 1 user (opening), 2 harness, 3 user, 4 harness, 5 user.
		{Name: "user-done", When: fakellm.Match{Nth: 5}, Reply: fakellm.Reply{Text: "DONE: two answers are enough"}},
		{Name: "user", When: fakellm.Match{SystemContains: "SIMUSER"}, Reply: fakellm.Reply{Text: "llm tell me more"}},
		{Name: "harness", Reply: fakellm.Reply{Text: "here is more"}},
	}}})
	url, err := llm.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { llm.Close() })
	cfg := engineConfig(t, url)
	cfg.User = &config.UserConfig{Model: &config.UserModelConfig{Prompt: "SIMUSER: you want to learn more."}}
	s := newSession(t, cfg)
	if _, err := s.Reset(context.Background(), session.ResetOptions{EpisodeID: "ep-user-model"}); err != nil {
		t.Fatal(err)
	}
	obs, err := s.Step(context.Background(), wire.Action{Metadata: map[string]any{session.PlayKey: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !obs.Done || !obs.Metadata.UserDone || obs.Metadata.TurnNumber != 2 || obs.Metadata.UserReason != "two answers are enough" {
		t.Fatalf("played: done=%v %+v", obs.Done, obs.Metadata)
	}
	if obs.ResponseText() != "llm: here is more" {
		t.Errorf("turn 2 answered %q", obs.ResponseText())
	}
	var user, harness int
	for _, e := range llm.Requests() {
		switch e.Rule {
		case "user", "user-done":
			user++
			if e.Headers["Authorization"] != "Bearer "+realKey {
				t.Errorf("the user model's call carried %q, want the upstream's key", e.Headers["Authorization"])
			}
		case "harness":
			harness++
		}
	}
	if user != 3 || harness != 2 {
		t.Fatalf("the engine answered %d user and %d harness calls, want 3 and 2", user, harness)
	}
	ex, err := s.Export("ep-user-model")
	if err != nil {
		t.Fatal(err)
	}
	checkExport(t, ex, 2)
	for _, c := range ex.Calls {
		if c.Turn < 1 || c.Turn > 2 {
			t.Errorf("export call %d of turn %d", c.CallIndex, c.Turn)
		}
	}
	b, _ := json.Marshal(ex)
	if strings.Contains(string(b), "SIMUSER") || strings.Contains(string(b), "two answers are enough") {
		t.Error("the user model's prompt or answer is in the training export")
	}
}

// The user program runs sandboxed: not as root, and without the daemon's
// files (here a world-readable file in the workspace root, which a harness
// cannot see either); the control is its own program, which it does read.
func TestSimulatedUserIsSandboxed(t *testing.T) {
	cfg := testConfig(t)
	secret := filepath.Join(cfg.Workspace.Root, "secret.txt")
	// World-readable, so that only the sandbox keeps it from the user.
	if err := os.WriteFile(secret, []byte("daemon's"), 0o644); err != nil {
		t.Fatal(err)
	}
	for d := cfg.Workspace.Root; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	os.Chmod(secret, 0o644)
	bin := testbin.Path(t, "testharness")
	s := userSession(t, withUser(t, "--report", secret+","+bin), func(c *config.Config) { c.Workspace = cfg.Workspace })
	reset(t, s)
	obs := step(t, s, "")
	r := obs.Metadata.UserReason
	t.Logf("the user program reports: %s", r)
	if !obs.Metadata.UserDone || !strings.Contains(r, secret+"=false") || !strings.Contains(r, bin+"=true") || strings.Contains(r, "uid=0 ") {
		t.Fatalf("the user program reports %q; want a non-root uid, the secret unreadable, its own program readable", r)
	}
}

// A user that says done when asked to open ends the episode before any
// turn: done, user_done, turn 0, and the harness never got a message.
func TestSimulatedUserDoneBeforeTheFirstTurn(t *testing.T) {
	s := userSession(t, withUser(t, "--turns", "0"))
	reset(t, s)
	obs := step(t, s, "")
	if !obs.Done || !obs.Metadata.UserDone || obs.Metadata.TurnNumber != 0 || obs.Metadata.ErrorType != "" {
		t.Fatalf("done=%v %+v", obs.Done, obs.Metadata)
	}
	if st := s.State(); st.StepCount != 0 || !st.Done {
		t.Fatalf("state: %+v", st)
	}
}
