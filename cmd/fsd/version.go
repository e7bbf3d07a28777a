package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// A release build stamps these with the linker, so `fsd version` names the
// release even where the toolchain records no VCS information (-trimpath,
// -buildvcs=false, a source tarball):
//
//	go build -ldflags "-X main.version=v0.1.0 -X main.commit=$(git rev-parse HEAD) -X main.date=2026-12-01T00:00:00Z" ./cmd/fsd
//
// .goreleaser.yaml and scripts/release-build set them; an empty value falls
// back to the build information.
var (
	version string
	commit  string
	date    string
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print fsd's version, the commit it was built from, and the Go version",
		Example: `  fsd version
  fsd --version`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return nil
		},
	}
}

// stamp is what the linker set; each non-empty field wins over the build
// information's.
type stamp struct{ version, commit, date string }

// versionLine describes this binary from the linker's stamp and, for what
// it leaves empty, the build information the Go toolchain embeds: the
// module version (a tag for `go install …@v1.2.3`, "(devel)" or a
// pseudo-version for a build from a checkout), the VCS commit and whether
// the tree had local changes (absent with -buildvcs=false or outside a
// repository), and the Go version and platform.
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return formatVersion(info, stamp{version, commit, date}, runtime.GOOS+"/"+runtime.GOARCH)
}

func formatVersion(info *debug.BuildInfo, s stamp, platform string) string {
	version, goVersion := "(unknown)", runtime.Version()
	var commit, when string
	modified := false
	if info != nil {
		if v := info.Main.Version; v != "" {
			version = v
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if s.version != "" {
		version = s.version
	}
	if s.commit != "" {
		// A stamped commit describes the tree that was released, not the
		// build information's: its time and local changes go with it.
		commit, when, modified = s.commit, s.date, false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fsd %s", version)
	switch {
	case commit != "":
		if len(commit) > 12 {
			commit = commit[:12]
		}
		fmt.Fprintf(&b, ", commit %s", commit)
		if when != "" {
			fmt.Fprintf(&b, " (%s)", when)
		}
		if modified {
			b.WriteString(", modified")
		}
	default:
		b.WriteString(", commit unknown")
	}
	fmt.Fprintf(&b, ", %s %s", goVersion, platform)
	return b.String()
}
