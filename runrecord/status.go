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
	// Interrupted: a signal or a timeout stopped the run, or its
	// process died (a live status nobody holds, Current); fsd resume goes
	// on from its journal.
	Interrupted Status = "interrupted"
	// Incomplete: the run's folder has no run.json: its process died
	// before writing it. Nothing can be resumed; fsd runs prune removes
	// it. Never written, only listed (ReadRun).
	Incomplete Status = "incomplete"
)

// Live reports whether the run was still going when run.json was last
// written, so its record may still change: it is running or waiting for
// an approval. Whether it still is, the folder's lock says (Current).
func (s Status) Live() bool { return s == Running || s == Waiting }
