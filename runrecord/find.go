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
