package main

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/testbin"
	"github.com/fsdrun/fsd/internal/testpar"
)

func TestFormatVersion(t *testing.T) {
	tests := []struct {
		name  string
		info  *debug.BuildInfo
		stamp stamp
		want  string
	}{
		{"released", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "6dad566a8a1e0a2f3b3c9d9e1f2a3b4c5d6e7f80"}, {Key: "vcs.time", Value: "2026-11-30T17:40:00Z"}, {Key: "vcs.modified", Value: "false"}}}, stamp{},
			"fsd v0.4.0, commit 6dad566a8a1e (2026-11-30T17:40:00Z), go1.26.8 linux/amd64"},
		{"checkout with changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "6dad566"}, {Key: "vcs.modified", Value: "true"}}}, stamp{},
			"fsd (devel), commit 6dad566, modified, go1.26.8 linux/amd64"},
		// -buildvcs=false, a tarball, or a test binary: no VCS settings.
		{"no vcs", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, stamp{},
			"fsd (devel), commit unknown, go1.26.8 linux/amd64"},
		// A release build: the linker's stamp wins over what the toolchain
		// recorded, including a checkout's local changes.
		{"stamped", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "6dad566"}, {Key: "vcs.modified", Value: "true"}}},
			stamp{"v0.1.0", "0123456789abcdef0123", "2026-12-01T00:00:00Z"},
			"fsd v0.1.0, commit 0123456789ab (2026-12-01T00:00:00Z), go1.26.8 linux/amd64"},
		{"stamped version only", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "6dad566"}}}, stamp{version: "v0.1.0"},
			"fsd v0.1.0, commit 6dad566, go1.26.8 linux/amd64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatVersion(tt.info, tt.stamp, "linux/amd64"); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	// No build info at all still names the Go version.
	if got := formatVersion(nil, stamp{}, "linux/amd64"); !strings.HasPrefix(got, "fsd (unknown), commit unknown, go") {
		t.Errorf("without build info: %q", got)
	}
}

func TestVersionCommandAndFlag(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := fsd(t, args...)
		if code != exitOK || !strings.HasPrefix(out, "fsd ") || !strings.Contains(out, ", go1.") || errs != "" {
			t.Errorf("fsd %v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
		if strings.Count(out, "\n") != 1 {
			t.Errorf("fsd %v: want one line, got %q", args, out)
		}
	}
	if code, _, errs := fsd(t, "version", "extra"); code != exitUsage || !strings.HasPrefix(errs, "fsd: ") {
		t.Errorf("fsd version extra: exit %d, %q", code, errs)
	}
}

// A binary built the way a release is, with -ldflags -X and no VCS
// information, prints the stamped version and commit.
func TestVersionStampedByLinker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fsd; skipped with -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	pkg, err := os.Getwd() // before Parallel: no other test has moved it now
	if err != nil {
		t.Fatal(err)
	}
	t.Parallel() // it mostly waits for the linker
	values := map[string]string{"main.version": "v0.0.0-stamped", "main.commit": "0123456789abcdef", "main.date": "2026-12-01T00:00:00Z"}
	var ldflags []string
	for _, name := range stampVars {
		ldflags = append(ldflags, "-X", name+"="+values[name])
	}
	flags := []string{"-buildvcs=false", "-ldflags", strings.Join(ldflags, " ")}
	name := "fsd-stamped"
	if testpar.Race {
		// Built as this test binary was, the fsd binary shares its
		// compiled packages and only links.
		flags, name = append(flags, "-race"), name+"-race"
	}
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	// Where the last run left it: unchanged, it is not linked again.
	exe, err := testbin.Build(pkg, name, nil, flags...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "version").Output()
	if err != nil {
		t.Fatalf("fsd version: %v", err)
	}
	want := "fsd v0.0.0-stamped, commit 0123456789ab (2026-12-01T00:00:00Z), go"
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("fsd version printed %q, want it to start with %q", out, want)
	}
}

// -v is verbose in every command and never the version; -V and --version
// are the version.
func TestVersionAndVerboseFlags(t *testing.T) {
	for _, args := range [][]string{{"-V"}, {"--version"}} {
		code, out, _ := fsd(t, args...)
		if code != exitOK || !strings.HasPrefix(out, "fsd ") || strings.Count(out, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want the version line", args, code, out)
		}
	}
	if _, out, _ := fsd(t, "-v"); strings.HasPrefix(out, "fsd (") {
		t.Errorf("-v printed the version: %q", out)
	}
	for _, args := range [][]string{{"validate", "-v", "../../examples"}, {"runs", "-v", "--runs-dir", t.TempDir()}, {"schema", "-v", "skill"}} {
		if code, _, errs := fsd(t, args...); code != exitOK {
			t.Errorf("%v: exit %d: %s", args, code, errs)
		}
	}
}
