package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/spec"
)

// record is a run's folder under the runs dir:
//
//	workflow.yaml      the workflow as resolved (defaults filled, skills found)
//	events.jsonl       every event, one JSON object a line
//	transcript.jsonl   the host's transcript
//	tasks/<id>.jsonl   each worker's transcript (<id>.attempt-N.jsonl for retries)
//	board.json         every task with status and result (after each board run)
//	run.json           status, times, answer or error (rewritten at the end)
//
// JSONL files are appended a line at a time and summary files are replaced
// atomically, so a crash never leaves a half-written file.
type record struct {
	dir    string
	mu     sync.Mutex
	events *os.File
	files  []*os.File
}

func openRecord(runsDir, id string, p *spec.Project) (*record, error) {
	dir := filepath.Join(runsDir, id)
	if err := os.MkdirAll(filepath.Join(dir, "tasks"), 0o755); err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	rec := &record{dir: dir}
	if err := rec.writeYAML("workflow.yaml", resolved(p)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run record: %w", err)
	}
	rec.events = f
	return rec, nil
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
		if err != nil {
			return
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if rec.events != nil {
			_, _ = rec.events.Write(append(b, '\n'))
		}
	})
}

// transcriptFile opens (for appending) the JSONL file of one generator's
// transcript, named by transcriptName.
func (rec *record) transcriptFile(name string) (*os.File, error) {
	if rec == nil {
		return nil, nil
	}
	f, err := os.OpenFile(filepath.Join(rec.dir, filepath.FromSlash(name)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run record: %w", err)
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

func (rec *record) writeYAML(name string, v any) error {
	// Through JSON first so the kebab-case json tags name the keys.
	j, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("run record %s: %w", name, err)
	}
	var generic any
	if err := json.Unmarshal(j, &generic); err != nil {
		return fmt.Errorf("run record %s: %w", name, err)
	}
	y, err := yaml.Marshal(generic)
	if err != nil {
		return fmt.Errorf("run record %s: %w", name, err)
	}
	return rec.replace(name, y)
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
	for _, f := range append(rec.files, rec.events) {
		if f == nil {
			continue
		}
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	rec.files, rec.events = nil, nil
	return first
}

// safeName keeps a task id usable as a file name.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c == '-' || c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		return "_" + string(b)
	}
	return string(b)
}
