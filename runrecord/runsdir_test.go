package runrecord

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRunsDirFor(t *testing.T) {
	root := t.TempDir()
	// The walk stops at the home folder: a .fsd or .git above the test's
	// folder (in /tmp, say) is not this test's.
	t.Setenv("HOME", root)
	mk := func(parts ...string) string {
		p := filepath.Join(append([]string{root}, parts...)...)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// proj holds .fsd; proj/a/b is a workflow's folder below it.
	mk("proj", ".fsd")
	deep := mk("proj", "a", "b")
	// repo is a repository whose root holds no .fsd, inside a folder
	// that does: the walk stops at the repository root.
	mk("outer", ".fsd")
	mk("outer", "repo", ".git")
	inRepo := mk("outer", "repo", "sub")
	// bare has no .fsd anywhere up to a repository root.
	mk("bare", ".git")
	bare := mk("bare", "x")
	// loose is in no repository and under no .fsd.
	loose := mk("loose", "y")
	for _, tc := range []struct{ name, dir, want string }{
		{"nearest .fsd above", deep, filepath.Join(root, "proj", ".fsd", "runs")},
		{"the folder holding .fsd", filepath.Join(root, "proj"), filepath.Join(root, "proj", ".fsd", "runs")},
		{"not past a repository root, which is the project", inRepo, filepath.Join(root, "outer", "repo", ".fsd", "runs")},
		{"none: the repository root", bare, filepath.Join(root, "bare", ".fsd", "runs")},
		{"no repository: the folder itself", loose, filepath.Join(loose, ".fsd", "runs")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RunsDirFor(tc.dir); got != tc.want {
				t.Errorf("RunsDirFor(%s) = %s, want %s", tc.dir, got, tc.want)
			}
		})
	}
}

func TestRunsDirForStopsAtHome(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	proj := filepath.Join(home, "proj")
	for _, d := range []string{filepath.Join(root, ".fsd"), proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	if got, want := RunsDirFor(proj), filepath.Join(proj, ".fsd", "runs"); got != want {
		t.Errorf("RunsDirFor(%s) = %s, want %s: a .fsd above the home folder is not this project's", proj, got, want)
	}
}
