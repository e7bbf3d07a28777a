package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/ui"
)

func newUICmd() *cobra.Command {
	var runsDir, addr string
	var allow []string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a local web view of the runs: board, timeline, tokens, every request as sent",
		Long: "Serve the runs under --runs-dir on a local address (loopback by default): the list of runs and,\n" +
			"per run, the board as a graph, a timeline of tasks and calls, tokens per task and each transcript\n" +
			"with every request expandable as the model received it. A live run's page (running, or waiting\n" +
			"for an approval) updates as it goes.\n\n" +
			"An address without a host (\":9000\") listens on 127.0.0.1 only; 0.0.0.0:PORT listens on every\n" +
			"interface, with a warning. The server answers only requests whose Host (and Origin, from a\n" +
			"browser) is localhost, 127.0.0.1 or [::1] at its port, the listening address, or an --allow-host\n" +
			"name; others get 403, so a web page cannot read the records through a rebound DNS name.",
		Example: `  fsd ui                       # then open the URL it prints
  fsd ui --addr 127.0.0.1:9000 --runs-dir ci/.fsd/runs
  fsd ui --addr :8484 --allow-host runs.example.com   # behind a proxy that keeps Host`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveUI(cmd.Context(), runsDirOr(runsDir, "."), guardedHTTP{flag: "--addr", addr: addr, allow: allow}, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&runsDir, "runs-dir", "", runsDirUsage)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8484", "address to listen on, HOST:PORT or :PORT (loopback); records hold prompts and results")
	addAllowHostFlag(cmd, &allow)
	return cmd
}

// serveUI serves the web view until a stop signal; its first line on out
// is the URL.
func serveUI(ctx context.Context, runsDir string, g guardedHTTP, out, stderr io.Writer) error {
	g.grace = 2 * time.Second
	g.exposed = "the run records (prompts, answers, tool output) are readable from the network"
	g.started = func(a net.Addr) {
		fmt.Fprintf(out, "fsd ui: http://%s/ (runs in %s; Ctrl-C to stop)\n", a, runsDir)
	}
	web := ui.NewServer(runsDir, redact.FromEnv(os.Environ()))
	defer web.Close()
	return g.serve(ctx, web.Handler(), stderr)
}

func newReportCmd() *cobra.Command {
	var runsDir, out string
	cmd := &cobra.Command{
		Use:   "report RUN [-o FILE.html]",
		Short: "Write a run's page as one self-contained HTML file (for an issue or a CI artifact)",
		Long:  "Write a run's page as one self-contained HTML file (for an issue or a CI artifact).\n" + runArgHelp,
		Example: `  fsd report 3f2a                       # writes 20261130-174501-3f2a.html
  fsd report 20261130-174501-3f2a -o run.html
  fsd report .fsd/runs/20261130-174501-3f2a -o - > run.html`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := findRun(runsDir, args[0]) // not there: exit 2, as for show and resume
			if err != nil {
				return err
			}
			if out == "" {
				// The run's own name, in the current folder: what a
				// person attaching it to an issue wants.
				out = filepath.Base(dir) + ".html"
			}
			w := cmd.OutOrStdout()
			var f *lazyFile
			if out != "-" {
				f = &lazyFile{path: out}
				w = f
			}
			err = ui.WriteReport(w, dir, redact.FromEnv(os.Environ()))
			if f != nil {
				if cerr := f.close(err != nil); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return fail(exitProblems, "report: %v", err)
			}
			if f != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "fsd report: wrote %s\n", out)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runsDir, "runs-dir", "", runsDirUsage)
	cmd.Flags().StringVarP(&out, "output", "o", "", "the HTML file to write, - for stdout (default: RUN-ID.html in the current folder)")
	return cmd
}

// lazyFile creates its file at the first write: a report that fails
// before writing leaves no file, and one that fails part way is removed
// (close(true)), so a half page is never left to attach.
type lazyFile struct {
	path string
	f    *os.File
}

func (l *lazyFile) Write(p []byte) (int, error) {
	if l.f == nil {
		f, err := os.Create(l.path)
		if err != nil {
			return 0, err
		}
		l.f = f
	}
	return l.f.Write(p)
}

// close closes the file, and removes it when failed.
func (l *lazyFile) close(failed bool) error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	if failed {
		_ = os.Remove(l.path)
	}
	return err
}
