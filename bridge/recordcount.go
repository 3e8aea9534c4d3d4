package bridge

// RecordCount is how many served calls the record holds (0 without
// ServerOptions.Record): a session notes it after each turn, so that a
// fork at an earlier turn replays only the calls up to it.
func (s *Server) RecordCount() int {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	return len(s.rec.recs)
}
