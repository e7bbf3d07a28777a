package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/golden"
)

func TestGraph(t *testing.T) {
	wf := filepath.Join("testdata", "graph", "weekly.workflow.yaml")
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string // stdout, compared with testdata/graph/NAME
		stderr string // substring
	}{
		{name: "mermaid by default", args: []string{"graph", wf}, code: exitOK, golden: "weekly.mmd"},
		{name: "dot", args: []string{"graph", wf, "--format", "dot"}, code: exitOK, golden: "weekly.dot"},
		{name: "bad format", args: []string{"graph", wf, "--format", "png"}, code: exitUsage, stderr: `unknown --format "png"`},
		{name: "no workflow", args: []string{"graph"}, code: exitUsage, stderr: "fsd: graph takes WORKFLOW; got none (see fsd graph --help)"},
		// An invalid workflow is refused with validate's diagnostics;
		// nothing is drawn (no invented nodes for unknown tasks).
		{name: "cycle and unknown assignee", args: []string{"graph", filepath.Join("testdata", "graph", "invalid.workflow.yaml")}, code: exitProblems,
			stderr: `invalid.workflow.yaml:6:10: dependency cycle: "a" -> "b" -> "a"`},
		{name: "no static tasks", args: []string{"graph", filepath.Join("testdata", "graph", "host.workflow.yaml")}, code: exitOK,
			stderr: "has no static tasks: nothing to draw"},
		{name: "missing file", args: []string{"graph", "testdata/graph/nope.workflow.yaml"}, code: exitUsage, stderr: "fsd: testdata/graph/nope.workflow.yaml: no such file or folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.stderr)
			}
			if tt.golden == "" {
				return
			}
			golden.Check(t, filepath.Join("testdata", "graph", tt.golden), stdout.Bytes())
		})
	}
}
