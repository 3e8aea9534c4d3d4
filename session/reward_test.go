package session_test

import (
	"testing"

	"github.com/harnessd/harnessd/rubric"
	"github.com/harnessd/harnessd/wire"
)

// TestRewardNullWithoutRubric: with no rubric nothing scores, so the reset,
// every turn and a terminal failure carry a null reward, not 0.
func TestRewardNullWithoutRubric(t *testing.T) {
	s := newSession(t, testConfig(t))
	if r := reset(t, s); r.Reward != nil {
		t.Fatalf("reset reward %v, want null", *r.Reward)
	}
	if o := step(t, s, "reply 0"); o.Reward != nil {
		t.Fatalf("turn reward %v, want null", *o.Reward)
	}
	o := step(t, s, "crash 3")
	if o.Metadata.ErrorType != wire.FailureHarnessCrashed || o.Reward != nil {
		t.Fatalf("terminal: %+v reward %v", o.Metadata, o.Reward)
	}
}

// TestRewardZeroIsAScore: a rubric that scored 0 gives 0, one that scored 1
// gives 1, and a rubric that could not score at all (its scorer does not
// exist) leaves the reward null with the error in reward_details.
func TestRewardZeroIsAScore(t *testing.T) {
	cfg := testConfig(t)
	cfg.Rubrics = []rubric.Spec{{Name: "zebra", Type: rubric.KindMatch, Contains: "zebra"}}
	s := newSession(t, cfg)
	reset(t, s)
	if o := step(t, s, "reply horse"); o.Reward == nil || *o.Reward != 0 {
		t.Fatalf("a score of 0: reward %v", o.Reward)
	}
	if o := step(t, s, "reply zebra"); o.Reward == nil || *o.Reward != 1 {
		t.Fatalf("a score of 1: reward %v", o.Reward)
	}

	cfg = testConfig(t)
	cfg.Rubrics = []rubric.Spec{{Name: "broken", Type: rubric.KindCommand, Command: []string{"/nonexistent/scorer"}}}
	s = newSession(t, cfg)
	reset(t, s)
	o := step(t, s, "reply hi")
	if o.Reward != nil {
		t.Fatalf("no rubric scored, yet reward %v", *o.Reward)
	}
	if len(o.Metadata.RewardDetails) != 1 || o.Metadata.RewardDetails[0].Score != nil || o.Metadata.RewardDetails[0].Error == "" {
		t.Fatalf("reward details: %+v", o.Metadata.RewardDetails)
	}
}

// TestAFailedRubricLeavesTheRewardNull: when one rubric that applies
// fails, the reward is null, not the sum of the others: a failed penalty
// rubric (weight -1) beside an answer rubric that scored 1 gave 1, so what
// made the penalty fail (an answer it could not start with, a workspace it
// timed out on) raised the reward. Each rubric's score or error stays in
// reward_details.
func TestAFailedRubricLeavesTheRewardNull(t *testing.T) {
	minusOne := -1.0
	cfg := testConfig(t)
	cfg.Rubrics = []rubric.Spec{
		{Name: "answer", Type: rubric.KindMatch, Contains: "42"},
		{Name: "penalty", Type: rubric.KindCommand, Command: []string{"/nonexistent/scorer"}, Weight: &minusOne},
	}
	s := newSession(t, cfg)
	reset(t, s)
	o := step(t, s, "reply 42")
	if o.Reward != nil {
		t.Errorf("a rubric failed, yet reward %v", *o.Reward)
	}
	d := o.Metadata.RewardDetails
	if len(d) != 2 || d[0].Score == nil || *d[0].Score != 1 || d[1].Score != nil || d[1].Error == "" {
		t.Errorf("reward details: %+v", d)
	}
}
