package engine

import (
	"context"

	"github.com/fsdrun/fsd/runrecord"
)

// Pending returns the run's calls waiting for approval, oldest first.
func (r *Run) Pending() []runrecord.PendingCall { return r.appr.Pending() }

// Answer answers a pending call (by its id, PendingCall.Call). The first
// answer to a call stands: a later one, from here or from `fsd approve`,
// gets runrecord.ErrAnswered.
func (r *Run) Answer(a runrecord.Answer) error { return r.appr.Answer(a) }

// watchApprovals connects the run's approval gate to its record: answers
// are files in the record's folder, and run.json says waiting and lists
// the pending calls while any wait. sum is run.json as written at start;
// halt stops the run (approval.Stop: a call nobody here can answer).
func (r *Run) watchApprovals(runCtx context.Context, halt context.CancelCauseFunc, sum *runrecord.Summary) error {
	// A resumed run starts with the calls its first process left waiting:
	// they stay listed until the replay reaches them.
	r.appr.Start(func() bool { return runCtx.Err() != nil }, halt, sum.Pending)
	if r.rec == nil {
		return nil
	}
	return r.appr.Open(r.rec.Dir(), func(pending []runrecord.PendingCall) {
		s := *sum
		s.Status, s.Pending = runrecord.Running, pending
		if len(pending) > 0 {
			s.Status = runrecord.Waiting
		}
		r.acct.summarize(&s)
		if err := r.rec.WriteSummary(s); err != nil {
			r.log.Warn().Err(err).Msg("could not list the pending approvals in run.json")
		}
	})
}
