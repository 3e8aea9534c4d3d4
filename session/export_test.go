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
