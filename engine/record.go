package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/journal"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
)

// record is a run's folder under the runs dir:
//
//	workflow.yaml      the workflow file's bytes as read (when it came from a file)
//	resolved.json      the workflow as resolved (defaults filled, skills found)
//	journal.jsonl      every generator's transcript, one entry a line, each
//	                   line naming its generator (runrecord.JournalLine)
//	events.jsonl       every event, one JSON object a line
//	requests.jsonl     what each model call was sent, by reference (runrecord.Line)
//	board.json         every task with status and result (after each board run)
//	run.json           status, times, answer or error (rewritten at the end)
//
// The journal is written by one goroutine with group commit
// (journal.Writer); events.jsonl and requests.jsonl are buffered and go
// out with it. JSONL files are only appended and summary files are
// replaced atomically, so a crash leaves at most a torn last line, which
// a resume repairs before appending. One process writes a record at a
// time: it holds the folder's lock (journal.Lock) from start to end.
type record struct {
	dir  string
	lock *journal.Locked
	// files are the JSONL files, closed after the writer.
	files []*os.File
	log   *journal.Writer
	// events and requests are events.jsonl and requests.jsonl.
	events, requests *journal.Stream

	mu sync.Mutex
	// blobs are the hashes written to requests.jsonl; ctxHash remembers
	// the hashes of context blocks.
	blobs   map[string]bool
	ctxHash map[string]string
	// err is the first failed write of the record; the run fails with it
	// (nothing reports success over a cut record).
	err error
	// onErr is told about the first failure, to stop the run early.
	onErr func(error)
}

// openRecord creates (or, on resume, reopens) a run's folder and takes its
// lock; lock is the one a resume already holds, or nil.
func openRecord(runsDir, id string, p *spec.Project, redact Redact, lock *journal.Locked, flushDelay time.Duration) (rec *record, err error) {
	dir := filepath.Join(runsDir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	if lock == nil {
		if lock, err = journal.Lock(dir); err != nil {
			return nil, fmt.Errorf("run record: %w", err)
		}
	}
	rec = &record{dir: dir, lock: lock, blobs: map[string]bool{}, ctxHash: map[string]string{}}
	defer func() {
		if err != nil {
			for _, f := range rec.files {
				f.Close()
			}
			lock.Unlock()
		}
	}()
	if err := rec.writeWorkflow(p, redact); err != nil {
		return nil, err
	}
	var jf, ef, qf *os.File
	for _, o := range []struct {
		name string
		f    **os.File
	}{{runrecord.JournalFile, &jf}, {runrecord.EventsFile, &ef}, {runrecord.RequestsFile, &qf}} {
		if *o.f, err = rec.openJournal(o.name); err != nil {
			return nil, err
		}
		rec.files = append(rec.files, *o.f)
	}
	// The journal's name must survive a machine crash as its lines do.
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	opts := []journal.WriterOption{journal.OnError(func(err error) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.fail(fmt.Errorf("run record: %w", err))
	})}
	if flushDelay > 0 {
		opts = append(opts, journal.WithFlushDelay(flushDelay))
	}
	rec.log = journal.NewWriter(jf, opts...)
	rec.events = rec.log.Stream(runrecord.EventsFile, ef)
	rec.requests = rec.log.Stream(runrecord.RequestsFile, qf)
	return rec, nil
}

// syncDir makes the names in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// openJournal opens a JSONL file of the record for appending, after
// making sure it ends in a whole line.
func (rec *record) openJournal(name string) (*os.File, error) {
	path := filepath.Join(rec.dir, filepath.FromSlash(name))
	if _, err := journal.RepairTail(path); err != nil {
		return nil, fmt.Errorf("run record: repair %s: %w", name, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	return f, nil
}

// fail keeps the first write error of the record. rec.mu is held.
func (rec *record) fail(err error) {
	if rec.err != nil {
		return
	}
	rec.err = err
	if rec.onErr != nil {
		go rec.onErr(err) // not under rec.mu: stopping the run emits events
	}
}

// writeErr is the first failed write, if any.
func (rec *record) writeErr() error {
	if rec == nil {
		return nil
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.err
}

// resolvedWorkflow is what workflow.yaml in a run record holds.
type resolvedWorkflow struct {
	Workflow *spec.Workflow `json:"workflow"`
	Limits   spec.Limits    `json:"limits"`
	Skills   []skillRef     `json:"skills-found"`
}

type skillRef struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	File    string `json:"file"`
}

func resolved(p *spec.Project, redact Redact) resolvedWorkflow {
	wf, _ := recordable(p.Workflow, nil, redact)
	out := resolvedWorkflow{Workflow: wf, Limits: p.Workflow.Limits.WithDefaults()}
	for _, s := range p.Skills {
		out.Skills = append(out.Skills, skillRef{ID: s.ID, Version: s.Version, File: s.File})
	}
	return out
}

// Redact takes the secrets a workflow's transport settings may carry
// (`board:`) out of what a run record keeps of it: the workflow as
// resolved.json holds it, and its file's text (nil: the record keeps no
// copy of the file). The transport that reads the settings knows its
// secrets (natsboard.Redact); the engine knows none.
type Redact func(wf *spec.Workflow, src []byte) (*spec.Workflow, []byte)

// recordable is what the run record may hold of wf and of its file's
// text src: redact's view of them; without one, a workflow with board:
// settings loses them and its file is not copied.
func recordable(wf *spec.Workflow, src []byte, redact Redact) (*spec.Workflow, []byte) {
	if redact != nil {
		return redact(wf, src)
	}
	if wf.Board == nil {
		return wf, src
	}
	w := *wf
	w.Board = nil
	return &w, nil
}

// sink returns the events.jsonl writer; nil record, nil sink. Events
// are buffered and written with the journal's next flush.
func (rec *record) sink() event.Sink {
	if rec == nil {
		return nil
	}
	return event.SinkFunc(func(e event.Event) {
		b, err := json.Marshal(e)
		if err != nil {
			rec.mu.Lock()
			rec.fail(fmt.Errorf("run record: events.jsonl: %s event: %w", e.Type, err))
			rec.mu.Unlock()
			return
		}
		// After a failed write the file may end mid-line; the stream
		// takes nothing more, and the writer reported the failure.
		_ = rec.events.WriteLine(b)
	})
}

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

// writeJSON replaces name atomically.
func (rec *record) writeJSON(name string, v any) error {
	if rec == nil {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("run record %s: %w", name, err)
	}
	return rec.replace(name, append(b, '\n'))
}

// resolvedJSON is resolved.json's content, and what the workflow's
// digest is taken of. It is JSON, not YAML written back: serialising YAML
// cost a large share of a big run's time and most of its memory peak.
func resolvedJSON(p *spec.Project, redact Redact) ([]byte, error) {
	j, err := json.Marshal(resolved(p, redact))
	if err != nil {
		return nil, fmt.Errorf("run record resolved.json: %w", err)
	}
	return append(j, '\n'), nil
}

// writeWorkflow writes the workflow into the record: the file's bytes as
// read (a person reads those best) and the resolved values as JSON.
func (rec *record) writeWorkflow(p *spec.Project, redact Redact) error {
	j, err := resolvedJSON(p, redact)
	if err != nil {
		return err
	}
	if err := rec.replace("resolved.json", j); err != nil {
		return err
	}
	if p.Workflow.File == "" {
		return nil // built in code: resolved.json is all there is
	}
	src, err := os.ReadFile(p.Workflow.File)
	if err != nil {
		return fmt.Errorf("run record workflow.yaml: %w", err)
	}
	if _, src = recordable(p.Workflow, src, redact); src == nil {
		return nil // resolved.json holds the workflow, its secrets dropped
	}
	return rec.replace("workflow.yaml", src)
}

func (rec *record) replace(name string, data []byte) error {
	path := filepath.Join(rec.dir, name)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("run record: %w", err)
	}
	return nil
}

// close commits and flushes everything, syncs the record's files, and
// lets go of the folder.
func (rec *record) close() error {
	if rec == nil {
		return nil
	}
	first := rec.log.Close()
	if first != nil {
		first = fmt.Errorf("run record: %w", first)
	}
	for _, f := range rec.files {
		if err := f.Close(); err != nil && first == nil {
			first = fmt.Errorf("run record: %w", err)
		}
	}
	rec.files = nil
	if err := rec.lock.Unlock(); err != nil && first == nil {
		first = err
	}
	return first
}

// RunSummary is run.json in the run record: what `fsd runs` lists and
// what `fsd resume` starts from. runrecord owns the format, so the engine
// that writes it and the readers (show, ui, report) share one type.
type RunSummary = runrecord.Summary

// AgentUsage is what one agent used, in run.json.
type AgentUsage = runrecord.AgentUsage

// newTranscript opens a generator's transcript, journaled when the run
// keeps a record. A resumed run appends after what the journal holds, and
// returns that generator's journal.
func (r *Run) newTranscript(task string, attempt int) (*transcript.Transcript, *genJournal, error) {
	j := r.opts.Resume.gen(transcriptName(task, attempt))
	var log journal.Log
	if r.rec != nil {
		log = r.rec.log
	}
	return journaledTranscript(log, journal.Gen{Task: task, Attempt: attempt}, j), j, nil
}

// journaledTranscript opens generator gen's transcript on log (nil: kept
// in memory only), whose steps wait for their commits (WithStepSync);
// after j's entries, which log already holds and are not written again.
// A worker process (Work) opens its task's the same way on its own log.
func journaledTranscript(log journal.Log, gen journal.Gen, j *genJournal) *transcript.Transcript {
	opts := []transcript.Option{transcript.WithStepSync()}
	if j != nil {
		opts = append(opts, transcript.WithJournal(j.entries))
	}
	if log == nil {
		return transcript.New(nil, opts...)
	}
	return transcript.New(&genLog{log: log, gen: gen}, opts...)
}
