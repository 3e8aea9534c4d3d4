package sandbox

// IDBase returns the first host id of the sandbox's private id range and
// true (IDRange), or 0 and false when the sandbox maps the daemon's own
// ids. A sandbox that must share the harness's files without being the
// harness's (a rubric, a grader or a tool server of the same episode)
// passes it as Config.IDBase: its ids are then the harness's ids.
func (s *Sandbox) IDBase() (uint32, bool) {
	if s.ids.mode != IDRange {
		return 0, false
	}
	return s.ids.hostBase, true
}
