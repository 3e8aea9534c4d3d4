package agent

// History returns the user messages of the conversation so far, oldest
// first (what the history directive says).
func (e *Executor) History() []string {
	return append([]string(nil), e.history...)
}

// Resume continues a saved conversation: history becomes the messages so
// far, and the turn count its length. Call it before the first turn.
func (e *Executor) Resume(history []string) {
	e.history = append([]string(nil), history...)
	e.turns = len(history)
}

// self is the binary that spawn, escape and orphan start.
func (e *Executor) self() string {
	if e.Self != "" {
		return e.Self
	}
	return selfPath()
}
