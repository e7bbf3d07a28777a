package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/mcpserve"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/workspace"
)

type mcpFlags struct {
	runFlags
	http  string   // listen address for Streamable HTTP; "" serves stdio
	allow []string // --allow-host names for HTTP
	tool  string   // the tool's name; "" derives it from the workflow's name
}

func newMCPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Model Context Protocol: serve a workflow as an MCP tool",
		Example: `  fsd mcp serve examples/fanout/fanout.workflow.yaml
  fsd mcp serve --http :8931 weekly.workflow.yaml`,
	}
	cmd.AddCommand(newMCPServeCmd())
	return cmd
}

func newMCPServeCmd() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "serve WORKFLOW",
		Short: "Serve a workflow as an MCP server (stdio, or --http) with one tool that runs it",
		Long: `Serve a workflow as a Model Context Protocol server with one tool: it takes
{"input": "..."} (omit for the workflow's own input) and answers with the run's
final answer. Each call is a normal run with its record in --runs-dir; the board's
progress (tasks finished of tasks known) goes to the client as progress
notifications, and a call waiting for approval is put to the client as an
elicitation (else a progress message names the fsd approve line). The answer
also comes as structuredContent (answer, run id, typed task results) matching
the tool's outputSchema. Over stdio, stdout carries the protocol and nothing else; logs go to
stderr. --http ADDR serves Streamable HTTP at http://ADDR/mcp instead; an address
without a host (":8080") listens on 127.0.0.1 only, and 0.0.0.0:PORT on every
interface, with a warning. Over HTTP the server answers only requests whose Host
(and Origin, from a browser) is localhost, 127.0.0.1 or [::1] at its port, the
listening address, or an --allow-host name; others get 403.`,
		Example: `  fsd mcp serve examples/fanout/fanout.workflow.yaml
  claude mcp add fanout -- fsd mcp serve /path/to/fanout.workflow.yaml
  fsd mcp serve --http :8931 weekly.workflow.yaml`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := workflowArg(args[0])
			if err != nil {
				return err
			}
			return serveMCP(cmd.Context(), path, f, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&f.http, "http", "", "serve Streamable HTTP on ADDR (e.g. :8931, loopback unless a host is given) instead of stdio")
	addAllowHostFlag(cmd, &f.allow)
	cmd.Flags().StringVar(&f.tool, "tool", "", "the tool's name (default: the workflow's name)")
	cmd.Flags().StringVar(&f.model, "model", "", "model for every generator: scripted, openai/<model>, openai-responses/<model>, anthropic/<model>, gemini/<model>")
	cmd.Flags().StringVar(&f.runsDir, "runs-dir", "", runsDirRunUsage)
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "debug logs on stderr")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "fail a call's run after this long, e.g. 5m (default: no limit)")
	cmd.Flags().BoolVar(&f.otelContent, "otel-content", false, otelContentUsage)
	addTrustFlag(cmd, &f.runFlags)
	return cmd
}

// serveMCP serves until stdin ends (stdio) or a stop signal (HTTP).
func serveMCP(ctx context.Context, path string, f mcpFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	if f.timeout < 0 {
		return fail(exitUsage, "--timeout: %s is negative", f.timeout)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	logger := consoleLogger(stderr, false).Level(zerolog.WarnLevel)
	if f.verbose {
		logger = logger.Level(zerolog.DebugLevel)
	}
	// Load once before serving: a broken workflow is one line and exit 1,
	// not an error on every call.
	pr, err := prepare(path, f.runFlags, engine.Options{Logger: logger}, stderr)
	if err != nil {
		return err
	}
	wf := pr.project.Workflow
	name := f.tool
	if name == "" {
		name = mcpserve.ToolName(wf.Name)
	}
	desc := fmt.Sprintf("Runs the fsd workflow %q and answers with its result.", wf.Name)
	if in := strings.TrimSpace(wf.Input); in != "" {
		desc += " Its default input: " + oneLineClip(in, 300)
	}
	// A call's run goes on with its request; over HTTP the SDK does not
	// end the requests in flight when the server stops, so the stop
	// cancels their runs itself: each ends as interrupted, with its
	// record, and its call answers so before the server goes.
	stopped, stopRuns := context.WithCancelCause(context.Background())
	defer stopRuns(nil)
	var running sync.WaitGroup // the calls' runs, waited for at a stop
	srv := mcpserve.NewServer(mcpserve.Options{Tool: name, Description: desc, Version: versionLine(),
		Annotations: toolHints(pr.project), Tasks: typedTasks(pr.project), Run: func(ctx context.Context, input string, sink event.Sink) (string, error) {
			running.Add(1)
			defer running.Done()
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			defer context.AfterFunc(stopped, func() { cancel(context.Cause(stopped)) })()
			return runForMCP(ctx, path, f, input, sink, logger, stderr)
		}})
	if f.http == "" {
		// A stop signal, like the end of stdin, ends the session; the
		// runs of calls in flight are cancelled and waited for (a few
		// seconds at most), so their records end as interrupted rather
		// than the process exiting under them.
		ctx, stop := withSignals(ctx)
		defer stop()
		// The session waits for its calls' handlers: their runs are
		// cancelled first.
		defer context.AfterFunc(ctx, func() { stopRuns(errors.New("fsd mcp serve is stopping")) })()
		t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
		err := srv.Run(ctx, t)
		stopRuns(errors.New("fsd mcp serve is stopping"))
		waitAtMost(&running, stdioGrace)
		if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
			return fail(exitProblems, "mcp serve: %v", err)
		}
		return nil
	}
	g := guardedHTTP{flag: "--http", addr: f.http, allow: f.allow}
	g.stopping = func(context.Context) { stopRuns(errors.New("fsd mcp serve is stopping")) }
	return serveHTTP(ctx, srv, g, path, name, stderr)
}

// runForMCP is one call: a normal run, with its record.
func runForMCP(ctx context.Context, path string, f mcpFlags, input string, sink event.Sink, logger zerolog.Logger, stderr io.Writer) (string, error) {
	ctx, cancel := withRunTimeout(ctx, f.timeout)
	defer cancel()
	rf := f.runFlags
	rf.input = input
	meta := map[string]string{"model": f.model, "trust": strings.Join(f.trust, string(os.PathListSeparator)), "via": "mcp"}
	pr, err := prepare(path, rf, engine.Options{Sink: sink, RunsDir: runsDirOr(f.runsDir, filepath.Dir(path)), Logger: logger, Meta: meta}, stderr)
	if err != nil {
		return "", err
	}
	mcpserve.BindAnswer(ctx, pr.run.Answer)
	res, err := pr.run.Execute(ctx, input)
	err = pr.finish(err)
	if err != nil {
		where := ""
		if res != nil && res.Dir != "" {
			where = " (record: " + res.Dir + ")"
		}
		if timedOut(ctx, err) {
			return "", fmt.Errorf("run timed out after %s%s", shortDuration(f.timeout), where)
		}
		return "", fmt.Errorf("run failed: %v%s", err, where)
	}
	return res.Answer, nil
}

// serveHTTP serves Streamable HTTP at /mcp until a stop signal.
func serveHTTP(ctx context.Context, srv *mcp.Server, g guardedHTTP, path, tool string, stderr io.Writer) error {
	g.grace = 5 * time.Second
	g.exposed = "anyone on the network can run the workflow and read its answers"
	g.started = func(a net.Addr) {
		fmt.Fprintf(stderr, "fsd: serving %s as MCP tool %s at http://%s/mcp\n", path, tool, a)
	}
	// The guard checks Host and Origin against the server's names. The SDK's
	// own Host check (loopback names only, on a loopback listener) stays on
	// unless other names are allowed, which it would refuse.
	opts := &mcp.StreamableHTTPOptions{DisableLocalhostProtection: len(g.allow) > 0}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts))
	return g.serve(ctx, mux, stderr)
}

// stdioGrace bounds how long a stopping stdio server waits for the runs
// it cancelled to write their records.
const stdioGrace = 5 * time.Second

// waitAtMost waits for wg, or d.
func waitAtMost(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func oneLineClip(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}

// toolHints are the served tool's annotations, from what the workflow's
// tools may do: read-only when no skill brings a program (command tool,
// script, MCP server) and the workflow offers no built-in that changes
// files; destructive when one of those runs without asking anybody (its
// approve: policy, else its skill's, else the workflow's, is never).
//
// P7: the hints follow the workflow's tools and their approve:.
func toolHints(p *spec.Project) *mcp.ToolAnnotations {
	wf := p.Workflow
	acts, unasked := false, false
	act := func(policy spec.Approve) {
		acts = true
		unasked = unasked || policy.Or(spec.ApproveNever) == spec.ApproveNever
	}
	for _, s := range p.Skills {
		for _, t := range s.Tools {
			if t.Run.Kind == spec.RunCommand {
				act(t.Approve.Or(s.Approve).Or(wf.Approve))
			}
		}
		for _, m := range s.MCP {
			act(m.Approve.Or(s.Approve).Or(wf.Approve))
		}
		if fi, err := os.Stat(filepath.Join(s.Dir, "scripts")); err == nil && fi.IsDir() {
			act(s.Approve.Or(wf.Approve))
		}
	}
	for _, name := range wf.Tools {
		if workspace.Effect(name) {
			act(wf.Approve)
		}
	}
	destructive := acts && unasked
	return &mcp.ToolAnnotations{Title: wf.Name, ReadOnlyHint: !acts, DestructiveHint: &destructive, OpenWorldHint: &acts}
}

// typedTasks are the output schemas of the workflow's static tasks whose
// agents declare output:, by task id.
func typedTasks(p *spec.Project) map[string]any {
	out := map[string]any{}
	for _, t := range p.Workflow.Tasks {
		skill, agent, ok := strings.Cut(t.Assignee, "/")
		if !ok {
			continue
		}
		for _, s := range p.Skills {
			if s.ID != skill {
				continue
			}
			for _, a := range s.Agents {
				if a.Name == agent && a.Output != nil {
					out[t.ID] = a.Output
				}
			}
		}
	}
	return out
}
