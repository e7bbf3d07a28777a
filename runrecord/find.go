package runrecord

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoRun is wrapped when no run under the runs folder matches a RUN.
var ErrNoRun = errors.New("no such run")

// AmbiguousError says a RUN matches several runs; Matches are their ids,
// sorted.
type AmbiguousError struct {
	Run, RunsDir string
	Matches      []string
}

// shownMatches bounds the ids an ambiguous RUN lists: enough to see which
// part of the id tells them apart.
const shownMatches = 5

func (e *AmbiguousError) Error() string {
	list := strings.Join(e.Matches[:min(len(e.Matches), shownMatches)], ", ")
	if n := len(e.Matches) - shownMatches; n > 0 {
		list += fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("%q matches %d runs in %s: %s; give more of the id", e.Run, len(e.Matches), e.RunsDir, list)
}

// Find resolves RUN as every command that takes one does: the path of a
// record folder, or else an id as FindID takes it.
func Find(runsDir, run string) (string, error) {
	if run != "" && isRun(run) {
		return run, nil
	}
	return FindID(runsDir, run)
}

// FindID finds the run under runsDir that id names: the run of that id,
// the unique run whose id starts with it, or else the unique run whose id
// contains it (the random tail of an id is enough). A folder is a run
// when it holds run.json. Several matches are an *AmbiguousError; none,
// or an id that is a path, wraps ErrNoRun: FindID never leaves runsDir,
// so a web view may pass it what a URL says. A runs folder that is not
// there holds no run; one that cannot be read is that error.
//
// R10: an id that is a path is no run.
func FindID(runsDir, id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%w: the run id is empty", ErrNoRun)
	}
	if strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return "", fmt.Errorf("%w: %s is not a record folder, nor a run id", ErrNoRun, id)
	}
	if dir := filepath.Join(runsDir, id); isRun(dir) {
		return dir, nil
	}
	entries, err := os.ReadDir(runsDir) // sorted by name
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Not "no such run": the runs folder itself cannot be read.
		return "", fmt.Errorf("find run %s: %w", id, err)
	}
	var prefixed, containing []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.Contains(name, id) || !isRun(filepath.Join(runsDir, name)) {
			continue
		}
		containing = append(containing, name)
		if strings.HasPrefix(name, id) {
			prefixed = append(prefixed, name)
		}
	}
	hits := prefixed
	if len(hits) == 0 {
		hits = containing
	}
	switch len(hits) {
	case 0:
		return "", fmt.Errorf("%w: no run %s in %s", ErrNoRun, id, runsDir)
	case 1:
		return filepath.Join(runsDir, hits[0]), nil
	}
	return "", &AmbiguousError{Run: id, RunsDir: runsDir, Matches: hits}
}

func isRun(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, RunFile))
	return err == nil && st.Mode().IsRegular()
}

// ProjectFolder is the folder, in a project, that holds fsd's records:
// RunsFolder below it holds the runs.
const (
	ProjectFolder = ".fsd"
	RunsFolder    = "runs"
)

// RunsDirFor is where a project's run records are, for a workflow in (or
// a command started in) dir: RunsFolder under the nearest folder at or
// above dir that holds ProjectFolder; else under the repository root (the
// nearest folder holding .git), which is the project; else under dir
// itself. The walk stops at the repository root and at the home folder,
// so one project's records never land in an unrelated .fsd further up. A
// run started from anywhere is then found by `fsd runs` anywhere in its
// project.
//
// R13: records go under the project, not wherever fsd was started.
func RunsDirFor(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Join(dir, ProjectFolder, RunsFolder)
	}
	home, _ := os.UserHomeDir()
	for d := abs; ; {
		if isDir(filepath.Join(d, ProjectFolder)) {
			return filepath.Join(d, ProjectFolder, RunsFolder)
		}
		if exists(filepath.Join(d, ".git")) {
			return filepath.Join(d, ProjectFolder, RunsFolder)
		}
		parent := filepath.Dir(d)
		if parent == d || d == home {
			break
		}
		d = parent
	}
	return filepath.Join(abs, ProjectFolder, RunsFolder)
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
