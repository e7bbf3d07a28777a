package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormatVersion(t *testing.T) {
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"released", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "6dad566a8a1e0a2f3b3c9d9e1f2a3b4c5d6e7f80"}, {Key: "vcs.time", Value: "2026-11-30T17:40:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			"fsd v0.4.0, commit 6dad566a8a1e (2026-11-30T17:40:00Z), go1.26.8 linux/amd64"},
		{"checkout with changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "6dad566"}, {Key: "vcs.modified", Value: "true"}}},
			"fsd (devel), commit 6dad566, modified, go1.26.8 linux/amd64"},
		// -buildvcs=false, a tarball, or a test binary: no VCS settings.
		{"no vcs", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"fsd (devel), commit unknown, go1.26.8 linux/amd64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatVersion(tt.info, "linux/amd64"); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	// No build info at all still names the Go version.
	if got := formatVersion(nil, "linux/amd64"); !strings.HasPrefix(got, "fsd (unknown), commit unknown, go") {
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
