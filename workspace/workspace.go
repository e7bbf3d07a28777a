package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Workspace is a run's workspace folder.
type Workspace struct {
	dir string // absolute and clean
	// real is dir with its symlinks resolved (/tmp → /private/tmp): an
	// absolute path a program printed may name either.
	real string
	// hidden are the folders inside the workspace the tools may not
	// reach, symlinks resolved: the run records.
	hidden []string
}

// Open returns the workspace at dir, creating the folder when it does
// not exist. dir is made absolute. hide are folders no tool may read or
// change even when they lie inside the workspace — the run records, whose
// journal and approvals a Write could forge; one that holds the workspace
// hides nothing (the tools cannot leave the workspace anyway).
func Open(dir string, hide ...string) (*Workspace, error) {
	if dir == "" {
		return nil, errors.New("workspace: no folder given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	if err := notFolder(abs); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		real = abs
	}
	if isRoot(abs) || isRoot(real) {
		// Every file would be the run's to change, the sandbox's "writes
		// only in the workspace" included.
		return nil, fmt.Errorf("workspace %s is the whole file system; name a folder of its own (or omit workspace: for a fresh one in the run record)", dir)
	}
	w := &Workspace{dir: abs, real: real}
	for _, h := range hide {
		if h = resolved(h); h != "" {
			if _, holds := within(h, real); !holds {
				w.hidden = append(w.hidden, h)
			}
		}
	}
	return w, nil
}

// resolved is the absolute path p with the symlinks of its longest
// existing part resolved: where a file there is, or would be made.
func resolved(p string) string {
	p, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		if isRoot(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// hiddenIn names the hidden folder that the file at name under root
// lies in, symlinks resolved, or is "".
func (w *Workspace) hiddenIn(root, name string) string {
	if len(w.hidden) == 0 {
		return ""
	}
	at := resolved(filepath.Join(root, filepath.FromSlash(name)))
	for _, h := range w.hidden {
		if _, ok := within(h, at); ok {
			return h
		}
	}
	return ""
}

// heldIn is the error of an open file f (at name) that lies in a hidden
// folder by where the kernel says it is, or nil. hiddenIn's check of
// the path before the open races a program of the run that swaps a
// folder on the way for a symlink into the records between the check and
// the open; the open file cannot be swapped. Where the kernel does not
// say (no /proc), the path check stands alone.
//
// T12: the check that holds is of the file opened, not its path.
func (w *Workspace) heldIn(f *os.File, name string) error {
	if len(w.hidden) == 0 {
		return nil
	}
	at, ok := openedAt(f)
	if !ok {
		return nil
	}
	for _, h := range w.hidden {
		if _, in := within(h, at); in {
			return &fs.PathError{Op: "open", Path: name, Err: &hiddenError{dir: h}}
		}
	}
	return nil
}

// openedAt is where the open file f is, by /proc/self/fd.
func openedAt(f *os.File) (string, bool) {
	c, err := f.SyscallConn()
	if err != nil {
		return "", false
	}
	var at string
	var rerr error
	if err := c.Control(func(fd uintptr) { // not f.Fd(), which would make f blocking
		at, rerr = os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10))
	}); err != nil {
		return "", false
	}
	return at, rerr == nil && filepath.IsAbs(at)
}

// hiddenError is the error of a file opened inside the hidden folder dir.
type hiddenError struct{ dir string }

func (e *hiddenError) Error() string { return "inside " + e.dir + ", the run records" }

// refuseHidden is the error of a path inside a hidden folder.
func refuseHidden(path, h string) error {
	return fmt.Errorf("%q is inside %s, the run records: the built-in tools may not read or change them", path, h)
}

// notFolder names the file that dir, or a folder on its way, is: the
// error MkdirAll would give says only "not a directory".
func notFolder(dir string) error {
	for p := dir; ; p = filepath.Dir(p) {
		if st, err := os.Stat(p); err == nil {
			if !st.IsDir() && p == dir {
				return fmt.Errorf("workspace %s is not a folder", dir)
			}
			if !st.IsDir() {
				return fmt.Errorf("workspace %s: %s is not a folder", dir, p)
			}
			return nil
		}
		if isRoot(p) {
			return nil
		}
	}
}

func isRoot(p string) bool { return filepath.Dir(p) == p }

// Dir is the workspace folder, absolute.
func (w *Workspace) Dir() string { return w.dir }

// place is where a path given to a tool lies: the folder (workspace or a
// read-only one) and the name inside it, slash-separated, "." for the
// folder itself.
type place struct {
	root     string
	name     string
	readOnly bool
}

// shown is the path as the tool's answers name it: relative for the
// workspace, absolute for a read-only folder.
func (p place) shown() string {
	if !p.readOnly {
		return p.name
	}
	return filepath.Join(p.root, filepath.FromSlash(p.name))
}

// resolve places path for a tool: relative to the workspace, or
// absolute inside the workspace or (when the tool only reads) inside one
// of readOnly. What it returns is checked only lexically; the os.Root the
// caller opens the place with refuses symlinks that lead out.
//
// T7: paths are the workspace's, read-only the skills' folders.
func (w *Workspace) resolve(path string, readOnly []string, reading bool) (place, error) {
	if path == "" {
		return place{}, errors.New("the path is empty; give a path relative to the workspace, such as notes.txt")
	}
	if !filepath.IsAbs(path) {
		clean := filepath.Clean(filepath.FromSlash(path))
		if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return place{}, w.outside(path, reading)
		}
		return w.unhidden(path, place{root: w.dir, name: filepath.ToSlash(clean)})
	}
	for _, base := range []string{w.dir, w.real} {
		if rel, ok := within(base, path); ok {
			return w.unhidden(path, place{root: base, name: rel})
		}
	}
	if reading {
		for _, ro := range readOnly {
			real, err := filepath.EvalSymlinks(ro)
			if err != nil {
				real = ro
			}
			for _, base := range []string{ro, real} {
				if rel, ok := within(base, path); ok {
					return place{root: base, name: rel, readOnly: true}, nil
				}
			}
		}
	}
	return place{}, w.outside(path, reading)
}

// unhidden is p, or the error of path when p lies in a hidden folder.
//
// T12: the built-in tools never reach the run records inside the workspace.
func (w *Workspace) unhidden(path string, p place) (place, error) {
	if h := w.hiddenIn(p.root, p.name); h != "" {
		return place{}, refuseHidden(path, h)
	}
	return p, nil
}

// within reports whether path (absolute) lies in base and where.
func within(base, path string) (string, bool) {
	rel, err := filepath.Rel(base, filepath.Clean(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// outside is the error of a path that leaves the workspace.
func (w *Workspace) outside(path string, reading bool) error {
	also := ""
	if reading {
		also = " (or, to read, inside a loaded skill's folder)"
	}
	return fmt.Errorf("%q is outside the workspace %s: give a path relative to the workspace, or an absolute path inside it%s", path, w.dir, also)
}

// open opens p's folder as an os.Root: every file of a call is reached
// through it, so a symlink cannot lead out.
func (p place) open() (*os.Root, error) {
	return os.OpenRoot(p.root)
}

// explain turns an error of a file operation into words the model can
// act on: an escape through a symlink names the workspace.
func (w *Workspace) explain(p place, err error) error {
	var pe *fs.PathError
	var he *hiddenError
	switch {
	case errors.As(err, &he):
		return refuseHidden(p.shown(), he.dir)
	case strings.HasSuffix(err.Error(), "path escapes from parent"):
		// os.Root's refusal (its error value is not exported), however
		// deep in the operation it came.
		if p.readOnly {
			return fmt.Errorf("%s leads outside the folder %s (a symlink or ..); it cannot be read", p.shown(), p.root)
		}
		return fmt.Errorf("%s leads outside the workspace %s (a symlink or ..): only files inside it can be used", p.shown(), w.dir)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", p.shown())
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", p.shown())
	}
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", p.shown(), pe.Err)
	}
	return err
}
