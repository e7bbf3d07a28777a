package engine

import (
	"sync"
	"time"

	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/transcript"
)

// genLog is one generator's side of the journal: the io.Writer its
// transcript writes entries to, and the Sync its steps wait on.
type genLog struct {
	log  journal.Log
	gen  journal.Gen
	mu   sync.Mutex
	last journal.Mark
}

func (g *genLog) Write(line []byte) (int, error) {
	m, err := g.log.Append(g.gen, line)
	if err != nil {
		return 0, err
	}
	g.mu.Lock()
	g.last = max(g.last, m)
	g.mu.Unlock()
	return len(line), nil
}

// Sync waits for the commit that covers the generator's last entry.
func (g *genLog) Sync() error {
	g.mu.Lock()
	m := g.last
	g.mu.Unlock()
	return g.log.Wait(m)
}

// newTranscript opens a generator's transcript, journaled when the run
// keeps a record. A resumed run appends after what the journal holds, and
// returns that generator's journal.
func (r *Run) newTranscript(task string, attempt int) (*transcript.Transcript, *genReplay, error) {
	var j *genReplay
	if replay := r.journal(); replay != nil { // a fresh run has none to name
		j = replay.gen(transcriptName(task, attempt))
	}
	var log journal.Log
	if r.rec != nil {
		log = r.rec.Journal()
	}
	tr := journaledTranscript(log, journal.Gen{Task: task, Attempt: attempt}, j, r.now)
	if r.opts.opened != nil {
		r.opts.opened(task, tr)
	}
	return tr, j, nil
}

// journaledTranscript opens generator gen's transcript on log (nil: kept
// in memory only), whose steps wait for their commits (WithStepSync);
// after j's entries, which log already holds and are not written again.
// Entries are stamped by now, the run's clock, so a transcript's times
// line up with the run's events and requests.
// A worker process (Work) opens its task's the same way on its own log.
func journaledTranscript(log journal.Log, gen journal.Gen, j *genReplay, now func() time.Time) *transcript.Transcript {
	opts := []transcript.Option{transcript.WithStepSync(), transcript.WithClock(now)}
	if j != nil {
		opts = append(opts, transcript.WithJournal(j.entries))
	}
	if log == nil {
		return transcript.New(nil, opts...)
	}
	return transcript.New(&genLog{log: log, gen: gen}, opts...)
}
