package main

import (
	"context"
	"fmt"

	"github.com/harnessd/harnessd/client"
	"github.com/harnessd/harnessd/wire"
)

// userEpisodes plays the worked example twice: step by step, each step's
// message empty ("ask the user": the simulated customer writes it after
// seeing the last turn), and then a whole episode in one step
// ({"play": true}). Each ends when the customer says done, and the done
// rubric scores the dialogue.
func userEpisodes(ctx context.Context, d *daemon) error {
	env, err := client.Dial(ctx, d.url, nil)
	if err != nil {
		return err
	}
	defer env.Close()
	note("the customer (customer.py) runs in a sandbox of its own and answers each observation with")
	note(`{"message": ...} or {"done": true, "reason": ...}; the desk tools are the simulation side of a mapping`)
	obs, err := env.Reset(ctx, client.ResetOptions{EpisodeID: "helpdesk-1"})
	if err != nil {
		return err
	}
	out.Observation("reset", obs)
	sawEvent := 0 // the turn whose events hold the example's env_event
	for n := 1; !obs.Done; n++ {
		fmt.Printf("\n%s %s\n", out.Paint("1", fmt.Sprintf("step %d ▶", n)), `"" (the simulated user writes the message)`)
		if obs, err = env.Step(ctx, ""); err != nil {
			return err
		}
		for _, e := range obs.Metadata.TurnEvents {
			out.Event(e)
			if e.Type == wire.EventEnv {
				sawEvent = obs.Metadata.TurnNumber
			}
		}
		out.Observation(fmt.Sprintf("turn %d", obs.Metadata.TurnNumber), obs)
		if n > 3 {
			return fmt.Errorf("the customer did not say done after turn 3: %s", describe(obs))
		}
	}
	if err := userDone(obs, 3); err != nil {
		return err
	}
	note("the customer said done: %s", obs.Metadata.UserReason)
	if sawEvent != 2 {
		return fmt.Errorf("the example's event (a ticket placed before turn 2) was not in turn 2's events (seen in turn %d)", sawEvent)
	}
	note("the environment's event queue placed inbox/T-5678.txt before turn 2 (an env_event in that turn)")

	if _, err = env.Reset(ctx, client.ResetOptions{EpisodeID: "helpdesk-2"}); err != nil {
		return err
	}
	fmt.Printf("\n%s %s\n", out.Paint("1", "step ▶"), `{"message": "", "metadata": {"play": true}} (one step plays to done)`)
	obs, err = env.StepAction(ctx, wire.Action{Metadata: map[string]any{"play": true}})
	if err != nil {
		return err
	}
	out.Observation(fmt.Sprintf("turn %d", obs.Metadata.TurnNumber), obs)
	if err := userDone(obs, 3); err != nil {
		return err
	}
	note("one step, %d turns, each message the customer's (the record file marks them source \"user\")", obs.Metadata.TurnNumber)
	return nil
}

// userDone checks an episode the customer ended, satisfied, after turns turns.
func userDone(obs *wire.Observation, turns int) error {
	md := obs.Metadata
	if !obs.Done || !md.UserDone || md.TurnNumber != turns || md.ErrorType != "" || obs.Reward == nil || *obs.Reward != 1 {
		return fmt.Errorf("want the customer's done after turn %d with reward 1; got %s", turns, describe(obs))
	}
	return nil
}

// describe is what a check of obs needs to show: its end, turn and reward,
// and the failure, if any, on a line of its own.
func describe(obs *wire.Observation) string {
	md := obs.Metadata
	reward := "none"
	if obs.Reward != nil {
		reward = fmt.Sprint(*obs.Reward)
	}
	s := fmt.Sprintf("done=%v user_done=%v turn %d reward %s", obs.Done, md.UserDone, md.TurnNumber, reward)
	if md.ErrorType != "" {
		s += fmt.Sprintf("\n  error_type %s: %s", md.ErrorType, md.Error)
	}
	return s
}
