package session

// WorkspaceOf returns the host path of s's current episode's workspace
// (tests look at a sibling's files from outside).
func WorkspaceOf(s *Session) string {
	r := s.current()
	if r == nil {
		return ""
	}
	return r.ep.Dirs().Workspace
}

// SetMaxReplayTurns sets how many turns' messages a run keeps for a replay
// fork, until the test ends.
func SetMaxReplayTurns(t interface{ Cleanup(func()) }, n int) {
	old := maxReplayTurns
	maxReplayTurns = n
	t.Cleanup(func() { maxReplayTurns = old })
}
