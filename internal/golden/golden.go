package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Update rewrites golden files instead of comparing with them. It is the
// only -update flag in the module: a test binary that declared its own would
// panic at start-up, which keeps the flag's meaning the same everywhere.
var Update = flag.Bool("update", false, "rewrite golden files")

// Check compares got with the file at path, relative to the test's package
// folder. With -update it writes got there instead, creating parent folders,
// so a new golden file needs no manual step.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (%s creates it)", err, command(t))
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s\nIf the change is meant, %s rewrites it.", path, diff, command(t))
	}
}

// command is the go test command that rewrites t's golden files: its
// package, its top-level test, -update.
func command(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return fmt.Sprintf("go test %s -run '^%s$' -update", pkgArg(), name)
}

// CheckString is Check for text output.
func CheckString(t testing.TB, path, got string) {
	t.Helper()
	Check(t, path, []byte(got))
}

// pkgArg names the current package as `go test` wants it (./spec), found by
// walking up from the test's working folder to go.mod; "." if there is none.
func pkgArg() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		if filepath.Dir(dir) == dir {
			return "."
		}
	}
}
