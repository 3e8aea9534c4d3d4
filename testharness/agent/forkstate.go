package agent

import (
	"encoding/json"
	"fmt"
)

// State is everything an Executor keeps in memory between turns: what a
// forked sibling needs to continue the conversation exactly (the line
// protocol's fork and restore messages carry it as JSON). Texts the
// environment delivered during a turn that no waitevent took are not part
// of it: they belong to the turn they were sent in.
type State struct {
	// Turns is the number of turns run (the count directive).
	Turns int `json:"turns"`
	// History is every user message so far (the history directive).
	History []string `json:"history"`
	// LLM is the llm directive's conversation, each message as sent or
	// received.
	LLM []json.RawMessage `json:"llm"`
	// CallSeq numbers the tool calls (their call ids).
	CallSeq int `json:"call_seq"`
	// Remembered is what the remember directive keeps (recall says it).
	Remembered *string `json:"remembered,omitempty"`
}

// Snapshot returns the executor's state, as State's JSON. Call it between
// turns.
func (e *Executor) Snapshot() json.RawMessage {
	s := State{Turns: e.turns, History: append([]string{}, e.history...),
		LLM: append([]json.RawMessage{}, e.llm.messages...), CallSeq: e.callSeq, Remembered: e.remembered}
	b, err := json.Marshal(s)
	if err != nil {
		// Every field is plain data or already valid JSON.
		panic(fmt.Sprintf("agent: marshal state: %v", err))
	}
	return b
}

// Restore makes the executor continue from a state Snapshot returned
// (possibly another process's). Call it between turns; it replaces
// everything the executor kept.
func (e *Executor) Restore(raw json.RawMessage) error {
	var s State
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("restore: the state is not an agent state: %w", err)
	}
	if s.Turns < 0 || s.CallSeq < 0 {
		return fmt.Errorf("restore: negative counters in the state (turns %d, call_seq %d)", s.Turns, s.CallSeq)
	}
	for i, m := range s.LLM {
		if !json.Valid(m) {
			return fmt.Errorf("restore: llm message %d is not JSON", i)
		}
	}
	e.turns, e.history, e.llm.messages, e.callSeq, e.remembered = s.Turns, s.History, s.LLM, s.CallSeq, s.Remembered
	return nil
}
