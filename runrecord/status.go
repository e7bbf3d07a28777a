package runrecord

// Status is a run's status in run.json.
type Status string

// The statuses of a run.
const (
	// Running: the run's process is at work.
	Running Status = "running"
	// Waiting: the run's process is up and a call waits for a person's
	// approval (Summary.Pending lists it); an answer lets it go on.
	Waiting Status = "waiting"
	// Finished: the run ended with an answer.
	Finished Status = "finished"
	// Failed: the run ended with an error (Summary.Error).
	Failed Status = "failed"
	// Interrupted: a signal or a timeout stopped the run; fsd resume
	// goes on from its journal.
	Interrupted Status = "interrupted"
)

// Live reports whether the run was still going when run.json was last
// written, so its record may still change: it is running or waiting for
// an approval. A live status whose process is gone (killed) is what a
// reader that checks the PID shows as Interrupted.
func (s Status) Live() bool { return s == Running || s == Waiting }
