package runrecord

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/fsdrun/fsd/spec"
)

// Redact takes the secrets a workflow's transport settings may carry
// (`board:`) out of what a run record keeps of it: the workflow as
// resolved.json holds it, and its file's text (nil: the record keeps no
// copy of the file). The transport that reads the settings knows its
// secrets (natsboard.Redact); the record knows none.
type Redact func(wf *spec.Workflow, src []byte) (*spec.Workflow, []byte)

// recordable is what the record may hold of wf and of its file's text
// src: redact's view of them; without one, a workflow with board:
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

// resolvedWorkflow is what resolved.json holds.
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

// ResolvedJSON is resolved.json's content for p (its transport settings
// as redact leaves them), and what a run's workflow digest is taken of.
// It is JSON, not YAML written back: serialising YAML cost a large share
// of a big run's time and most of its memory peak.
func ResolvedJSON(p *spec.Project, redact Redact) ([]byte, error) {
	j, err := json.Marshal(resolved(p, redact))
	if err != nil {
		return nil, fmt.Errorf("run record %s: %w", ResolvedFile, err)
	}
	return append(j, '\n'), nil
}

// writeWorkflow writes the workflow into the record: the file's bytes as
// read (a person reads those best) and the resolved values as JSON.
//
// S5: without a Redact no board setting is kept.
func (w *Writer) writeWorkflow(p *spec.Project, redact Redact) error {
	j, err := ResolvedJSON(p, redact)
	if err != nil {
		return err
	}
	if err := w.replace(ResolvedFile, j); err != nil {
		return err
	}
	if p.Workflow.File == "" {
		return nil // built in code: resolved.json is all there is
	}
	src, err := os.ReadFile(p.Workflow.File)
	if err != nil {
		return fmt.Errorf("run record %s: %w", WorkflowFile, err)
	}
	if _, src = recordable(p.Workflow, src, redact); src == nil {
		return nil // resolved.json holds the workflow, its secrets dropped
	}
	return w.replace(WorkflowFile, src)
}
