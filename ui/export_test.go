package ui

import "time"

// At a fixed time, so two pages of one record can be compared byte for
// byte.
var (
	WriteReportAt = writeReport
	ReportAt      = report
)

// SetNow makes s build its pages at now.
func SetNow(s *Server, now time.Time) { s.now = func() time.Time { return now } }

// Kept is how many runs' indexes s keeps.
func Kept(s *Server) int {
	s.idx.mu.Lock()
	defer s.idx.mu.Unlock()
	return len(s.idx.runs)
}
