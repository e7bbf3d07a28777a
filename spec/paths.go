package spec

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/internal/proc"
)

func quote(s string) string { return strconv.Quote(s) }

// inside resolves rel against dir and makes sure the result stays in dir:
// no absolute paths, no "..", and no symlink that leads out. It returns
// the path to open, or a message saying what is wrong.
func inside(dir, rel string) (string, string) {
	if rel == "" {
		return "", "path is empty"
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") || filepath.VolumeName(rel) != "" {
		return "", fmt.Sprintf("%q is absolute; give a path relative to the skill's folder", rel)
	}
	clean := filepath.Clean(filepath.FromSlash(rel))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Sprintf("%q leaves the skill's folder", rel)
	}
	full := filepath.Join(dir, clean)
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", fmt.Sprintf("cannot open %q: %s", rel, ioMessage(err))
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Sprintf("cannot resolve the skill's folder: %s", ioMessage(err))
	}
	if r, err := filepath.Rel(root, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Sprintf("%q is a symlink that leads outside the skill's folder", rel)
	}
	return full, ""
}

// readInside reads an instructions file that must stay inside dir.
func readInside(d *decoder, dir, rel string, at diag.Pos) (string, bool) {
	full, problem := inside(dir, rel)
	if problem != "" {
		d.diags = append(d.diags, diag.Errorf(at, "path", "instructions-file: %s", problem))
		return "", false
	}
	data, diags := readFile(full)
	if diags == nil {
		diags = checkText(full, data)
	}
	if diags != nil {
		d.diags = append(d.diags, diag.Errorf(at, "path", "instructions-file %q: %s", rel, diags[0].Message))
		return "", false
	}
	return string(data), true
}

// listResources lists the files in a skill folder other than its manifest:
// relative, slash-separated, sorted, hidden files and folders left out.
// A symlink leading outside the folder is an error (at the manifest):
// the readers must never serve a file from outside the skill.
func listResources(dir, manifest string) ([]string, diag.List) {
	at := diag.Pos{File: manifest, Line: 1, Col: 1}
	var out []string
	var diags diag.List
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, nil
	}
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are not resources
		}
		name := e.Name()
		if p != dir && strings.HasPrefix(name, ".") {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.IsDir() || p == manifest || filepath.Clean(p) == filepath.Clean(manifest) {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if e.Type()&fs.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				diags = append(diags, diag.Errorf(at, "path", "resource %q is a broken symlink", rel))
				return nil
			}
			if r, err := filepath.Rel(root, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				diags = append(diags, diag.Errorf(at, "path", "resource %q is a symlink that leads outside the skill's folder", rel))
				return nil
			}
			// Like an entry that is not a symlink: only a regular file
			// is a resource. A pipe would hang whoever opens it (validate
			// reading a script's #! line, a run reading the resource).
			if st, err := os.Stat(real); err != nil || !st.Mode().IsRegular() {
				return nil
			}
		} else if !e.Type().IsRegular() {
			return nil
		}
		if len(out) == MaxResources {
			diags = append(diags, diag.Warnf(at, "limit", "more than %d resource files; the rest are not readable", MaxResources))
			return filepath.SkipAll
		}
		out = append(out, rel)
		if d, ok := unstartable(p, rel); ok {
			diags = append(diags, d)
		}
		return nil
	})
	sort.Strings(out)
	return out, diags
}

// unstartable is the warning for an executable file under scripts/ that
// run_skill_script could not start: no #! line, not a native program, and
// an extension that names no interpreter. A file that is not executable is
// taken for data (a schema, a template) and not looked at. Whether an
// interpreter is installed is not checked: that is a fact of the machine
// running fsd, not of the skill, and validate gives the same answer in CI
// as on a laptop.
func unstartable(path, rel string) (diag.Diagnostic, bool) {
	if !strings.HasPrefix(rel, "scripts/") {
		return diag.Diagnostic{}, false
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o111 == 0 {
		return diag.Diagnostic{}, false
	}
	if _, problem := proc.ScriptArgv(path); problem != "" {
		return diag.Warnf(diag.Pos{File: path, Line: 1, Col: 1}, "script", "%s", problem), true
	}
	return diag.Diagnostic{}, false
}
