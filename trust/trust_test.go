package trust_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/trust"
)

// tree builds:
//
//	base/wf/                 the trusted root
//	base/wf/skills/a/        a skill folder inside it
//	base/wf/skills/out  ->   base/other/b  (a symlink leading out)
//	base/wf-evil/            a sibling sharing the root's name as a prefix
//	base/other/b/            an untrusted folder
//	base/link-in  ->         base/wf/skills/a (a symlink leading in)
func tree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{"wf/skills/a", "wf-evil", "other/b"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	symlink(t, filepath.Join(base, "other", "b"), filepath.Join(base, "wf", "skills", "out"))
	symlink(t, filepath.Join(base, "wf", "skills", "a"), filepath.Join(base, "link-in"))
	write(t, filepath.Join(base, "wf", "skills", "a", "a.skill.yaml"))
	write(t, filepath.Join(base, "other", "b", "b.skill.yaml"))
	symlink(t, filepath.Join(base, "other", "b", "b.skill.yaml"), filepath.Join(base, "wf", "skills", "a", "evil.skill.yaml"))
	return base
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
}

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("id: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestContains(t *testing.T) {
	base := tree(t)
	r, err := trust.New([]string{filepath.Join(base, "wf")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string
		want bool
	}{
		{"the root itself", "wf", true},
		{"a folder inside", "wf/skills/a", true},
		{"a file inside", "wf/skills/a/a.skill.yaml", true},
		{"dot-dot climbing out", "wf/skills/../../other/b", false},
		{"dot-dot staying in", "wf/skills/a/../a", true},
		{"a symlink inside leading out", "wf/skills/out", false},
		{"a path through that symlink", "wf/skills/out/b.skill.yaml", false},
		{"a symlinked file leading out", "wf/skills/a/evil.skill.yaml", false},
		{"a symlink outside leading in", "link-in", true},
		{"a sibling with the root as prefix", "wf-evil", false},
		{"the parent", ".", false},
		{"a path that does not exist", "wf/skills/nope", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.Contains(filepath.Join(base, filepath.FromSlash(tc.path))); got != tc.want {
				t.Errorf("Contains(%s) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
	if r.Contains("") {
		t.Error("the empty path is trusted")
	}
}

// A relative path resolves against the working directory, as the roots do.
func TestContainsRelative(t *testing.T) {
	base := tree(t)
	t.Chdir(base)
	r, err := trust.New([]string{"wf"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Contains("wf/skills/a") || r.Contains("other/b") || r.Contains("wf/../other/b") {
		t.Error("relative paths resolve wrongly")
	}
}

// A root given through a symlink trusts what it points at.
func TestRootThroughSymlink(t *testing.T) {
	base := tree(t)
	r, err := trust.New([]string{filepath.Join(base, "wf", "skills", "out")})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Contains(filepath.Join(base, "other", "b")) {
		t.Error("the symlink's target is not trusted")
	}
	if r.Contains(filepath.Join(base, "wf")) {
		t.Error("the symlink's folder is trusted")
	}
}

func TestSkill(t *testing.T) {
	base := tree(t)
	r, err := trust.New([]string{filepath.Join(base, "wf")})
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(base, "wf", "skills", "a")
	for _, tc := range []struct {
		name string
		s    *spec.Skill
		want bool
	}{
		{"inside", &spec.Skill{Dir: a, File: filepath.Join(a, "a.skill.yaml")}, true},
		{"folder only", &spec.Skill{Dir: a}, true},
		{"manifest symlinked from outside", &spec.Skill{Dir: a, File: filepath.Join(a, "evil.skill.yaml")}, false},
		{"folder symlinked to outside", &spec.Skill{Dir: filepath.Join(base, "wf", "skills", "out"), File: filepath.Join(base, "wf", "skills", "out", "b.skill.yaml")}, false},
		{"outside", &spec.Skill{Dir: filepath.Join(base, "other", "b")}, false},
		{"no folder", &spec.Skill{}, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.Skill(tc.s); got != tc.want {
				t.Errorf("Skill = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	base := tree(t)
	for _, tc := range []struct {
		name, root, want string
	}{
		{"missing", filepath.Join(base, "nope"), "no such file or directory"},
		{"a file", filepath.Join(base, "wf", "skills", "a", "a.skill.yaml"), "not a folder"},
		{"empty", "", "empty path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trust.New([]string{tc.root})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
			if err != nil && tc.root != "" && !strings.Contains(err.Error(), tc.root) {
				t.Errorf("err %q does not name the root", err)
			}
		})
	}
}

func TestNoRootsTrustNothing(t *testing.T) {
	r, err := trust.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Contains(t.TempDir()) || r.Contains("/") {
		t.Error("an empty set trusts something")
	}
	var nilRoots *trust.Roots
	if nilRoots.Contains("/") {
		t.Error("nil Roots trust something")
	}
}
