package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
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

// versionLine describes this binary from the build information the Go
// toolchain embeds: the module version (a tag for `go install …@v1.2.3`,
// "(devel)" for a build from a checkout), the VCS commit and whether the
// tree had local changes (absent with -buildvcs=false or outside a
// repository), and the Go version and platform.
func versionLine() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return formatVersion(info, runtime.GOOS+"/"+runtime.GOARCH)
}

func formatVersion(info *debug.BuildInfo, platform string) string {
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
