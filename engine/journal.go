package engine

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fsdrun/fsd/internal/proc"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/transcript"
)

// Replay is what an interrupted run left in its record: every
// generator's transcript, step by step. A resumed run replays it — model
// responses and command-tool results come from the journal, not from the
// model or the program — and goes on live from the first step the journal
// does not hold.
//
// Everything else (reads, state and store, board tools, reply tools,
// readers) is executed again: it is deterministic and in memory, and
// executing it rebuilds the run's state. A re-executed result that differs
// from the journal's stops the resume with an error saying where.
//
// A loaded Replay holds the run folder's lock until the resumed run ends
// (or Close): no other process can resume or write the same run.
type Replay struct {
	Dir     string
	Summary runrecord.Summary
	// Repaired lists the files whose torn last line was repaired, with
	// what was done; the run logs them.
	Repaired []string
	gens     map[string]*genReplay
	lock     *journal.Locked
}

// genReplay is one generator's journal.
type genReplay struct {
	entries int // entries on disk, not written again
	msgs    []model.Message
	// ents are the entries themselves: a session's next turn lays its
	// earlier turns' into the host's transcript as they were.
	ents []transcript.Entry
}

// newGenReplay is a generator's journal from its entries: the messages
// as the transcript held them, context lines in their places, so replay
// positions match the live transcript's.
func newGenReplay(entries []transcript.Entry) (*genReplay, error) {
	msgs, err := transcript.Rebuild(entries)
	if err != nil {
		return nil, err
	}
	return &genReplay{entries: len(entries), msgs: msgs, ents: entries}, nil
}

// rawGenReplay is newGenReplay of entries as a journal stores them
// (a worker's, read from JetStream); none is nil: nothing to resume.
func rawGenReplay(raw []json.RawMessage) (*genReplay, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	entries := make([]transcript.Entry, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &entries[i]); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		if entries[i].Seq != i {
			return nil, fmt.Errorf("entry %d says it is entry %d", i, entries[i].Seq)
		}
	}
	return newGenReplay(entries)
}

// ErrNotResumable is returned for a run record that cannot be resumed.
var ErrNotResumable = errors.New("run cannot be resumed")

// ErrInUse is returned by LoadReplay while another process holds the run.
var ErrInUse = errors.New("run is in use")

// LoadOption configures LoadReplay.
type LoadOption func(*loadOptions)

type loadOptions struct {
	ignorePID bool
	// session: the caller holds the session's lock, and a finished run
	// is a session whose next turn goes on from it.
	session bool
}

// IgnoreLivePID resumes a run whose recorded process id belongs to a live
// process that does not hold the run's lock: after a reboot the id may
// name an unrelated process. The lock is still required.
func IgnoreLivePID() LoadOption { return func(o *loadOptions) { o.ignorePID = true } }

// LoadReplay takes the lock of the run in dir and reads its journal.
// The run's id is the folder's name, whatever run.json says. Every
// JSON-lines file is repaired first (journal.RepairTail), so appends go
// on after a whole line.
//
// J1, J2: the lock and the live-pid check come first, then every file's
// torn tail is repaired before anything appends.
func LoadReplay(dir string, opts ...LoadOption) (j *Replay, err error) {
	var o loadOptions
	for _, opt := range opts {
		opt(&o)
	}
	if abs, aerr := filepath.Abs(dir); aerr == nil {
		dir = abs
	}
	j = &Replay{Dir: dir, gens: map[string]*genReplay{}}
	if j.Summary, err = runrecord.ReadSummary(dir); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotResumable, err)
	}
	// The record is data, not authority: the folder names the run.
	j.Summary.ID = filepath.Base(dir)
	lock, err := journal.Lock(dir)
	if errors.Is(err, journal.ErrLocked) {
		return nil, fmt.Errorf("%w: run %s is being written by another fsd (pid %d in run.json)", ErrInUse, j.Summary.ID, j.Summary.PID)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotResumable, err)
	}
	j.lock = lock
	defer func() {
		if err != nil {
			lock.Unlock()
		}
	}()
	if j.Summary.Going() && !o.ignorePID && !o.session && j.Summary.PID != os.Getpid() && proc.Alive(j.Summary.PID) {
		return nil, fmt.Errorf("%w: run %s is still running (pid %d); stop it first, or --force if that process is not fsd",
			ErrInUse, j.Summary.ID, j.Summary.PID)
	}
	if j.Summary.Status == runrecord.Finished && !o.session {
		return nil, fmt.Errorf("%w: run %s already finished", ErrNotResumable, j.Summary.ID)
	}
	if j.Summary.Seed == "" && j.Summary.HandleKey == "" {
		return nil, fmt.Errorf("%w: run %s has no handle seed", ErrNotResumable, j.Summary.ID)
	}
	if s, err := hex.DecodeString(j.Summary.Seed); j.Summary.Seed != "" && (err != nil || len(s) != 32) {
		return nil, fmt.Errorf("%w: run %s: run.json has a bad seed (want 64 hex digits)", ErrNotResumable, j.Summary.ID)
	}
	for _, name := range []string{runrecord.JournalFile, runrecord.EventsFile, runrecord.RequestsFile} {
		rep, err := journal.RepairTail(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("%w: repair %s: %v", ErrNotResumable, name, err)
		}
		if rep.Changed() {
			j.Repaired = append(j.Repaired, name+": "+rep.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, runrecord.JournalFile)); err != nil {
		// A record from before the journal: the host's transcript file, or
		// (a pipeline has no host) only the tasks' files. Resuming it with an
		// empty journal would run every completed task again, commands too.
		_, herr := os.Stat(filepath.Join(dir, runrecord.HostFile))
		_, terr := os.Stat(filepath.Join(dir, runrecord.TasksDir))
		if herr == nil || terr == nil {
			return nil, fmt.Errorf("%w: run %s was recorded by an older fsd (transcript files, no %s); fsd show and fsd runs read it, but only the fsd that recorded it can resume it",
				ErrNotResumable, j.Summary.ID, runrecord.JournalFile)
		}
	}
	gens, err := runrecord.ReadJournal(filepath.Join(dir, runrecord.JournalFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotResumable, err)
	}
	for _, ge := range gens {
		g, err := newGenReplay(ge.Entries)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %s: %v", ErrNotResumable, runrecord.JournalFile, ge.Name, err)
		}
		j.gens[ge.Name] = g
	}
	return j, nil
}

// ErrUnsealed is returned when a resume finds a run.json whose workflow
// and digests fsd did not write for this run, or that has no digests
// (Options.Force resumes anyway).
var ErrUnsealed = errors.New("resume refused: run.json does not say, sealed by fsd, what the run was made from")

// Sealed checks that the record says what the run was made from, sealed
// by fsd for this run under key (the user's: runrecord.UserKey), else an
// error wrapping ErrUnsealed: without digests nothing tells the workflow
// run.json names from another, and without fsd's seal on them (edited,
// copied from another run or user, or written by an older fsd) the name
// and the digests are anyone's. A resume checks it before it runs
// anything; a caller checks it before it loads the workflow run.json
// names.
//
// R11: a resume runs only the workflow fsd sealed into run.json.
func (j *Replay) Sealed(key runrecord.Key) error {
	var why string
	switch s := j.Summary; {
	case len(s.Digests) == 0:
		why = "it has no digests"
	case !runrecord.VerifySummary(key, s):
		why = "its seal does not verify (edited, copied from another run or user, or written by an older fsd)"
	default:
		return nil
	}
	return fmt.Errorf("%w: %s; it names workflow %q; resume with --force to run that workflow as it is now", ErrUnsealed, why, j.Summary.Workflow)
}

// Close releases the run's lock when the journal will not be resumed;
// Execute releases it itself.
func (j *Replay) Close() error {
	if j == nil {
		return nil
	}
	return j.lock.Unlock()
}

// transcriptName names a generator in the record and its journal (see
// runrecord.GenName): the host's, or a task attempt's (attempts after the
// first are generators of their own, so a retry never mixes with the
// attempt before it).
func transcriptName(task string, attempt int) string {
	return runrecord.GenName(journal.Gen{Task: task, Attempt: attempt})
}

// gen returns the journal of a generator, or nil.
func (j *Replay) gen(name string) *genReplay {
	if j == nil {
		return nil
	}
	return j.gens[name]
}

// cursor is a generator's cursor over its journal. Results are matched to
// calls by position (step, index), not by call id: some OpenAI-compatible
// servers reuse ids across responses.
type cursor struct {
	msgs  []model.Message // the journal's messages from the loop's start
	steps []int           // indices in msgs of assistant messages, one per step
}

// newCursor positions a journal at a generator's loop: the first prefix
// messages (history, inherited turns, the task message) precede the steps.
func newCursor(g *genReplay, prefix int) *cursor {
	if g == nil || prefix > len(g.msgs) {
		return nil
	}
	rp := &cursor{msgs: g.msgs[prefix:]}
	for i, m := range rp.msgs {
		if m.Role == model.Assistant {
			rp.steps = append(rp.steps, i)
		}
	}
	return rp
}

// response returns the journaled response of a step.
//
// R2: a journaled response is replayed, never asked for again.
// M10: with the provider state it came with, so the steps after it send
// that state as the first run's did.
// M22: and the model that answered it, so the steps after it start from
// that model of a fallback chain as the first run's did.
func (rp *cursor) response(step int) (*model.Response, bool) {
	if rp == nil || step >= len(rp.steps) {
		return nil, false
	}
	m := rp.msgs[rp.steps[step]]
	return &model.Response{Text: m.Text, Calls: m.Calls, State: m.State, Model: m.Model}, true
}

// result returns the journaled result of the i-th call of a step.
//
// R2: a journaled result is replayed, never run again.
func (rp *cursor) result(step, i int) (model.Message, bool) {
	if rp == nil || step >= len(rp.steps) {
		return model.Message{}, false
	}
	j := rp.steps[step] + 1 + i
	if j >= len(rp.msgs) || rp.msgs[j].Role != model.Tool {
		return model.Message{}, false
	}
	return rp.msgs[j], true
}
