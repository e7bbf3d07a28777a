package runrecord

// Status is a run's status in run.json.
type Status string

// The statuses of a run.
const (
	// Running: the run's process is at work.
	Running Status = "running"
	// Waiting: a call waits for a person's approval (Summary.Pending
	// lists it). While the run's process is up an answer lets it go on; a
	// run that stopped to wait (nobody could answer it: Summary.Finished
	// is set, Going is false) goes on with fsd resume once answered.
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

// Live reports whether the status is one a run has while it is not over:
// running, or waiting for an approval. Whether a process is at it, the
// folder's lock says (Current, then Summary.Going).
func (s Status) Live() bool { return s == Running || s == Waiting }

// Going reports whether the run s, read with its Current status, has a
// process at work on it, so its record may still change: it is running,
// or waiting with its process up — not a run that stopped to wait for an
// approval (it wrote when it stopped).
func (s Summary) Going() bool { return s.Status.Live() && !s.stoppedToWait() }

// stoppedToWait reports whether s is the run.json of a run that stopped
// to wait for an approval: waiting, written as the process ended.
func (s Summary) stoppedToWait() bool { return s.Status == Waiting && !s.Finished.IsZero() }
