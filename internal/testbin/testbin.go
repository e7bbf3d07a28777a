package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Build builds the package in folder pkg with go build and flags into a
// file called name and returns its path; env is added to the environment.
// The file is in a folder of the user's cache that is pkg's own, so
// checkouts of fsd never share a binary, and a lock keeps two test runs of
// one checkout from writing it at once. Callers give different builds of a
// package different names.
func Build(pkg, name string, env []string, flags ...string) (string, error) {
	pkg, err := filepath.Abs(pkg)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256([]byte(pkg))
	dir := filepath.Join(cache, "fsd-tests", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close() // and so unlocked
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	build := exec.Command("go", append(append([]string{"build", "-o", bin}, flags...), ".")...)
	build.Dir = pkg
	build.Env = append(os.Environ(), env...)
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %v\n%s", strings.Join(flags, " "), pkg, err, out)
	}
	return bin, nil
}
