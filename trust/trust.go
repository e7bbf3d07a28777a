package trust

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsdrun/fsd/spec"
)

// Roots is a set of trusted folders. It is safe for concurrent use.
type Roots struct {
	roots []string // absolute, symlinks resolved, cleaned

	mu sync.Mutex
	// seen caches each path's answer, so the trust shown in a request and
	// the trust a tool was compiled with stay the same for the whole run
	// even if a symlink changes under it.
	seen map[string]bool
}

// New resolves each root with filepath.Abs and filepath.EvalSymlinks. A
// root must exist and be a folder: trusting a path that is not there yet
// would trust whatever appears at it later.
//
// T2: a root that is not a folder is refused.
func New(roots []string) (*Roots, error) {
	r := &Roots{seen: map[string]bool{}}
	for _, root := range roots {
		if root == "" {
			return nil, errors.New("empty path: name a folder to trust")
		}
		real, err := resolve(root)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", root, unwrapPath(err))
		}
		st, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", root, unwrapPath(err))
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%s: not a folder; trust the folder that holds it", root)
		}
		r.roots = append(r.roots, real)
	}
	return r, nil
}

// Roots lists the resolved roots, in the order given.
func (r *Roots) Roots() []string { return append([]string(nil), r.roots...) }

// Contains reports whether path, resolved like the roots, is one of them
// or lies inside one. A path that does not resolve is not contained.
func (r *Roots) Contains(path string) bool {
	if r == nil || path == "" {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok, hit := r.seen[path]; hit {
		return ok
	}
	ok := false
	if real, err := resolve(path); err == nil {
		for _, root := range r.roots {
			if within(root, real) {
				ok = true
				break
			}
		}
	}
	r.seen[path] = ok
	return ok
}

// Skill reports whether s may run commands: both its folder (a command's
// working directory and the base of ./scripts) and its manifest (which
// says what the commands are) must be inside a root. A skill built in code
// with no folder is not trusted.
//
// T1: folder and manifest both under a root, symlinks resolved.
func (r *Roots) Skill(s *spec.Skill) bool {
	if s == nil || !r.Contains(s.Dir) {
		return false
	}
	return s.File == "" || r.Contains(s.File)
}

// T2: a path that cannot be resolved is untrusted.
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// within reports whether path is root or below it. Both are clean and
// absolute, so a prefix test on whole path elements is exact.
func within(root, path string) bool {
	if path == root {
		return true
	}
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator) // "/a/b" must not contain "/a/bc"
	}
	return strings.HasPrefix(path, root)
}

// unwrapPath drops the *fs.PathError wrapper, whose path is the resolved
// one, so the message names what the user typed.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
