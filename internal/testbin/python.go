package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// PythonFirst puts the folder of the interpreter that PATH's python3
// starts on PATH just before the folder python3 was found in, where PATH finds a version manager's launcher
// (pyenv's or asdf's shim: a shell script that works out the version on
// every start, a few hundred milliseconds each and seconds on a loaded
// machine) instead of the interpreter. A test that starts python3, or
// has fsd start it, then starts that same interpreter directly. Where
// python3 is absent, or is the interpreter itself, PATH is left as it
// is. The launcher is asked once per test process; call it at the start
// of each test that starts python3 (it is safe from parallel tests).
func PythonFirst() { pythonOnce.Do(pythonFirst) }

var pythonOnce sync.Once

func pythonFirst() {
	found, err := exec.LookPath("python3")
	if err != nil {
		return
	}
	out, err := exec.Command(found, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		return
	}
	dir := filepath.Dir(strings.TrimSpace(string(out)))
	if !filepath.IsAbs(dir) || sameFile(dir, filepath.Dir(found)) {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, "python3")); err != nil {
		return // no python3 there to start directly: keep the launcher
	}
	os.Setenv("PATH", insertBefore(os.Getenv("PATH"), filepath.Dir(found), dir))
}

// insertBefore puts dir into the PATH list path just before the entry
// launcher (the launcher's folder), so the interpreter is found before
// the launcher and every folder ahead of it (the go command's, which
// go test puts first) stays ahead.
func insertBefore(path, launcher, dir string) string {
	entries := filepath.SplitList(path)
	for i, e := range entries {
		if e == launcher || sameFile(e, launcher) {
			entries = append(entries[:i], append([]string{dir}, entries[i:]...)...)
			return strings.Join(entries, string(os.PathListSeparator))
		}
	}
	return dir + string(os.PathListSeparator) + path
}

func sameFile(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}
