package scaffold

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

//go:embed templates
var templates embed.FS

// Names are the templates, the default first.
var Names = []string{"hello", "pipeline", "agent-skills"}

// about says in a line what each template shows.
var about = map[string]string{
	"hello":        "a host that reads a skill, calls its tool and delegates a note to its agent",
	"pipeline":     "two tasks in a dependency graph, run by a skill's agents without a host",
	"agent-skills": "an Agent Skills folder (SKILL.md and a resource) read through a handle",
}

// About describes a template in one line.
func About(name string) string { return about[name] }

// ExistsError says which files are already there; nothing was written.
type ExistsError struct {
	Paths []string
}

func (e *ExistsError) Error() string {
	if len(e.Paths) == 1 {
		return e.Paths[0] + " already exists"
	}
	return fmt.Sprintf("%s and %d more files already exist", e.Paths[0], len(e.Paths)-1)
}

// Files lists a template's files, slash-separated and relative to the
// project folder, in a fixed order.
func Files(name string) ([]string, error) {
	if _, ok := about[name]; !ok {
		return nil, fmt.Errorf("unknown template %q", name)
	}
	root := path.Join("templates", name)
	var out []string
	err := fs.WalkDir(templates, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		out = append(out, strings.TrimPrefix(p, root+"/"))
		return nil
	})
	// The workflow first: it is the file to open.
	sort.SliceStable(out, func(i, j int) bool {
		return strings.HasSuffix(out[i], ".workflow.yaml") && !strings.HasSuffix(out[j], ".workflow.yaml")
	})
	return out, err
}

// Workflow is the template's workflow file, relative to the project folder.
func Workflow(name string) string {
	files, _ := Files(name)
	for _, f := range files {
		if strings.HasSuffix(f, ".workflow.yaml") {
			return f
		}
	}
	return ""
}

// Write writes template name into dir, creating dir if needed, and returns
// the paths written. If any of its files exists, it writes nothing and
// returns an *ExistsError; if writing fails half-way, it removes what it
// wrote.
func Write(dir, name string) ([]string, error) {
	files, err := Files(name)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s is a file, not a folder", dir)
	}
	var exists []string
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if _, err := os.Lstat(p); err == nil {
			exists = append(exists, p)
		}
	}
	if len(exists) > 0 {
		return nil, &ExistsError{Paths: exists}
	}
	var written []string
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := writeNew(p, path.Join("templates", name, f)); err != nil {
			for _, w := range written {
				_ = os.Remove(w)
			}
			return nil, err
		}
		written = append(written, p)
	}
	return written, nil
}

// writeNew copies an embedded file to p, failing if p exists (O_EXCL: no
// race between the check above and the write).
func writeNew(p, src string) error {
	data, err := templates.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return &ExistsError{Paths: []string{p}}
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Next is the three commands to try after writing template name into dir,
// as typed from the folder fsd init ran in: validate the project, look at
// it (the model's first request, or a pipeline's graph), run it.
func Next(dir, name string) []string {
	wf := shellQuote(filepath.Join(dir, filepath.FromSlash(Workflow(name))))
	look := "fsd context " + wf
	if name == "pipeline" {
		look = "fsd graph " + wf
	}
	return []string{"fsd validate " + shellQuote(dir), look, "fsd run " + wf}
}

// shellQuote quotes p for a POSIX shell when it needs it.
func shellQuote(p string) string {
	if p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:,@") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
