package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

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
//	events.jsonl       every event, one JSON object a line
//	transcript.jsonl   the host's transcript
//	tasks/<id>.jsonl   each worker's transcript (<id>.attempt-N.jsonl for retries)
//	board.json         every task with status and result (after each board run)
//	run.json           status, times, answer or error (rewritten at the end)
//	requests.jsonl     what each model call was sent, by reference (runrecord.Line)
//
// JSONL files are appended a line at a time and summary files are replaced
// atomically, so a crash leaves at most a torn last line, which a resume
// repairs before appending. One process writes a record at a time: it
// holds the folder's lock (journal.Lock) from start to end.
type record struct {
	dir    string
	lock   *journal.Locked
	mu     sync.Mutex
	events *os.File
	files  []*os.File
	// requests is requests.jsonl; blobs are the hashes written to it.
	requests *os.File
	blobs    map[string]bool
	// err is the first failed write of an event line or board.json; the
	// run fails with it (nothing reports success over a cut record).
	err error
	// onErr is told about the first failure, to stop the run early.
	onErr func(error)
}

// openRecord creates (or, on resume, reopens) a run's folder and takes its
// lock; lock is the one a resume already holds, or nil.
func openRecord(runsDir, id string, p *spec.Project, lock *journal.Locked) (*record, error) {
	dir := filepath.Join(runsDir, id)
	if err := os.MkdirAll(filepath.Join(dir, "tasks"), 0o755); err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	if lock == nil {
		var err error
		if lock, err = journal.Lock(dir); err != nil {
			return nil, fmt.Errorf("run record: %w", err)
		}
	}
	rec := &record{dir: dir, lock: lock}
	err := rec.writeWorkflow(p)
	if err != nil {
		lock.Unlock()
		return nil, err
	}
	f, err := rec.openJournal("events.jsonl")
	if err != nil {
		lock.Unlock()
		return nil, err
	}
	rec.events = f
	if rec.requests, err = rec.openJournal(runrecord.RequestsFile); err != nil {
		rec.events.Close()
		lock.Unlock()
		return nil, err
	}
	rec.blobs = map[string]bool{}
	return rec, nil
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

func resolved(p *spec.Project) resolvedWorkflow {
	out := resolvedWorkflow{Workflow: p.Workflow, Limits: p.Workflow.Limits.WithDefaults()}
	for _, s := range p.Skills {
		out.Skills = append(out.Skills, skillRef{ID: s.ID, Version: s.Version, File: s.File})
	}
	return out
}

// sink returns the events.jsonl writer; nil record, nil sink.
func (rec *record) sink() event.Sink {
	if rec == nil {
		return nil
	}
	return event.SinkFunc(func(e event.Event) {
		b, err := json.Marshal(e)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if err != nil {
			rec.fail(fmt.Errorf("run record: events.jsonl: %s event: %w", e.Type, err))
			return
		}
		if rec.events == nil || rec.err != nil {
			// After a failed write the file may end mid-line; appending
			// more would make a record no reader can trust.
			return
		}
		if _, err := rec.events.Write(append(b, '\n')); err != nil {
			rec.fail(fmt.Errorf("run record: events.jsonl: %w", err))
		}
	})
}

// transcriptFile opens (for appending) the JSONL file of one generator's
// transcript, named by transcriptName.
func (rec *record) transcriptFile(name string) (*os.File, error) {
	if rec == nil {
		return nil, nil
	}
	f, err := rec.openJournal(name)
	if err != nil {
		return nil, err
	}
	rec.mu.Lock()
	rec.files = append(rec.files, f)
	rec.mu.Unlock()
	return f, nil
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
func resolvedJSON(p *spec.Project) ([]byte, error) {
	j, err := json.Marshal(resolved(p))
	if err != nil {
		return nil, fmt.Errorf("run record resolved.json: %w", err)
	}
	return append(j, '\n'), nil
}

// writeWorkflow writes the workflow into the record: the file's bytes as
// read (a person reads those best) and the resolved values as JSON.
func (rec *record) writeWorkflow(p *spec.Project) error {
	j, err := resolvedJSON(p)
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

func (rec *record) close() error {
	if rec == nil {
		return nil
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var first error
	if rec.events != nil {
		// One fsync per run: the events are the client's view, the
		// transcripts (synced each step) are what a resume needs.
		if err := rec.events.Sync(); err != nil {
			first = fmt.Errorf("run record: events.jsonl: %w", err)
		}
	}
	for _, f := range append(rec.files, rec.events, rec.requests) {
		if f == nil {
			continue
		}
		if err := f.Close(); err != nil && first == nil {
			first = fmt.Errorf("run record: %w", err)
		}
	}
	rec.files, rec.events, rec.requests = nil, nil, nil
	if err := rec.lock.Unlock(); err != nil && first == nil {
		first = err
	}
	return first
}

// fileName encodes a task id as a file name, injectively, so two tasks
// never share a transcript: a-z, 0-9 and "-" stand for themselves and
// every other byte is "_" and two hex digits ("A" is "_41", "/" is "_2f",
// "_" is "_5f"). Upper case is encoded too, so the names stay distinct on
// case-insensitive file systems; "." never appears, so ".attempt-2" and
// ".jsonl" suffixes cannot be forged. A name over maxNameBytes keeps its
// head and ends in a hash of the whole id.
func fileName(id string) string {
	const hexDigits = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('_')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	name := b.String()
	if name == "" {
		return "_"
	}
	if len(name) > maxNameBytes {
		sum := sha256.Sum256([]byte(id))
		name = name[:maxNameBytes-33] + "~" + hex.EncodeToString(sum[:16])
	}
	return name
}

// maxNameBytes leaves room under the common 255-byte file-name limit for
// ".attempt-N.jsonl".
const maxNameBytes = 200

// RunSummary is run.json in the run record: what `fsd runs` lists and
// what `fsd resume` starts from. runrecord owns the format, so the engine
// that writes it and the readers (show, ui, report) share one type.
type RunSummary = runrecord.Summary

// newTranscript opens a generator's transcript, backed by its run-record
// file when the run keeps a record. A resumed run appends after what the
// journal holds, and returns that generator's journal.
func (r *Run) newTranscript(task string, attempt int) (*transcript.Transcript, *genJournal, error) {
	name := transcriptName(task, attempt)
	f, err := r.rec.transcriptFile(name)
	if err != nil {
		return nil, nil, err
	}
	var w io.Writer
	if f != nil {
		w = f
	}
	opts := []transcript.Option{transcript.WithStepSync()}
	j := r.opts.Resume.gen(name)
	if j != nil {
		opts = append(opts, transcript.WithJournal(j.entries))
	}
	return transcript.New(w, opts...), j, nil
}
