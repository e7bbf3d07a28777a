package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/fsdrun/fsd/runrecord"
)

// The --runs-dir help: the default is found, not fixed, so that a run
// started from anywhere is listed in its project.
const (
	runsDirUsage    = "where run records are (default: .fsd/runs in the nearest folder holding .fsd, else at the repository root, else in the current folder)"
	runsDirRunUsage = "where run records go (default: .fsd/runs in the nearest folder at or above the workflow's holding .fsd, else at its repository root, else beside the workflow)"
)

// otelContentUsage is the --otel-content help of every command that runs
// a workflow: one opt-in, one meaning.
const otelContentUsage = "put prompts, responses, tool arguments and results in trace spans (traces are on when OTEL_EXPORTER_OTLP_ENDPOINT is set)"

// runsDirOr is dir when --runs-dir gave one, else the runs folder of the
// project that from (a workflow's folder, or "." for commands that read
// records) belongs to.
func runsDirOr(dir, from string) string {
	if dir != "" {
		return dir
	}
	return shortPath(runrecord.RunsDirFor(from))
}

// shortPath is path relative to the current folder when it is inside it
// (".fsd/runs" reads better in a message than its absolute path).
func shortPath(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

// handleKeyFor is the handle key of the project the workflow at path
// belongs to: in the .fsd folder that holds (or would hold) its runs by
// default, whatever --runs-dir says, so every run of the project, its
// resumes and fsd context derive the same handles.
func handleKeyFor(path string) ([]byte, error) {
	return runrecord.HandleKey(filepath.Dir(runrecord.RunsDirFor(filepath.Dir(path))))
}
