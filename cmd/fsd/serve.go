package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/serve"
	"github.com/fsdrun/fsd/serve/a2a"
	"github.com/fsdrun/fsd/serve/agui"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/ui"
)

// defaultMaxBody caps a request's body: a message, an answer, an AG-UI
// or A2A request.
const defaultMaxBody = 1 << 20

type serveFlags struct {
	run       runFlags
	addr      string
	allow     []string
	tokenFile string
	maxBody   int64
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve WORKFLOW|DIR",
		Short: "Serve a workflow over HTTP: sessions, turns, approvals and their events (REST, SSE), and the web view",
		Long: "Serve the workflow's sessions over HTTP: create a session, post a message (a turn), list and\n" +
			"answer approvals, cancel, and stream each session's events as Server-Sent Events that a client\n" +
			"resumes with Last-Event-ID. The API is described at /openapi.json; the web view's pages, with a\n" +
			"chat box on a session's page, are at /. A DIR means the one workflow in it, as for fsd run.\n\n" +
			"Sessions are run records in --sessions-dir: a server stopped mid-turn (even killed) resumes the\n" +
			"interrupted turns when it starts again, without repeating completed calls.\n\n" +
			"An address without a host listens on 127.0.0.1 only. Another host needs --token-file: every\n" +
			"request then sends Authorization: Bearer TOKEN. Requests whose Host or Origin is not one of the\n" +
			"server's names get 403, bodies over --max-body get 413.",
		Example: `  fsd serve chat.workflow.yaml             # http://127.0.0.1:8480/
  curl -s localhost:8480/sessions -d '{"id":"notes","message":"Hello"}'
  curl -sN localhost:8480/sessions/notes/events
  fsd serve . --addr 0.0.0.0:8480 --token-file ~/.config/fsd/token --allow-host chat.example.com`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := workflowArg(args[0])
			if err != nil {
				return err
			}
			mounts := func(b serve.Backend) serve.Mounts { return protocolMounts(b, f.tokenFile != "") }
			return serveWorkflow(cmd.Context(), path, f, mounts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&f.addr, "addr", "127.0.0.1:8480", "address to listen on, HOST:PORT or :PORT (loopback); another host needs --token-file")
	cmd.Flags().StringVar(&f.tokenFile, "token-file", "", "require `FILE`'s content (trimmed) as a bearer token of every request; needed beyond loopback")
	cmd.Flags().Int64Var(&f.maxBody, "max-body", defaultMaxBody, "largest request body in `BYTES`; a larger one gets 413")
	addAllowHostFlag(cmd, &f.allow)
	cmd.Flags().StringVar(&f.run.sessionsDir, "sessions-dir", "", sessionsDirUsage)
	cmd.Flags().StringVar(&f.run.model, "model", "", "model for every generator: scripted, openai/<model>, openai-responses/<model>, anthropic/<model>, gemini/<model>")
	_ = cmd.RegisterFlagCompletionFunc("model", completeModels)
	cmd.Flags().StringVar(&f.run.approve, "approve", "ask", "who answers calls that need approval: ask (clients, through the API), auto (approve all), deny (reject all)")
	_ = cmd.RegisterFlagCompletionFunc("approve", cobra.FixedCompletions([]string{"ask", "auto", "deny"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().DurationVar(&f.run.approvalTimeout, "approval-timeout", 0, "reject a call that waited this long for approval, e.g. 10m (default: wait)")
	addTrustFlag(cmd, &f.run)
	addStrictFlag(cmd, &f.run)
	cmd.Flags().BoolVarP(&f.run.verbose, "verbose", "v", false, "debug logs on stderr")
	return cmd
}

// protocolMounts are the protocol adapters fsd serve mounts beside its
// API, each driving the server through serve.Backend behind the same
// guard. token says the guard requires a bearer token (the A2A card
// declares it).
//
// Y23: AG-UI at /agui, as @ag-ui/client's HttpAgent speaks it.
// Y36: A2A's card at /.well-known/agent-card.json and its JSON-RPC at
// /a2a, as @a2a-js/sdk's client speaks them.
func protocolMounts(b serve.Backend, token bool) serve.Mounts {
	return serve.Mounts{AGUI: agui.Handler(b, agui.Options{}), A2A: a2a.Handler(b, a2a.Options{Token: token})}
}

// serveWorkflow serves the workflow at path until ctx ends or a stop
// signal; its first line on out is the URL. mounts, when not nil, adds
// the protocol adapters.
//
// Y9: the web view is package ui's, served by the same code as fsd ui.
func serveWorkflow(ctx context.Context, path string, f serveFlags, mounts func(serve.Backend) serve.Mounts, out, stderr io.Writer) error {
	var token []byte
	if f.tokenFile != "" {
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return usage("--token-file: %s: %s", f.tokenFile, fsMessage(err))
		}
		if token = bytes.TrimSpace(b); len(token) == 0 {
			return usage("--token-file: %s is empty; put the token in it", f.tokenFile)
		}
	}
	if f.maxBody <= 0 {
		return usage("--max-body: %d is not a size; give the largest body in bytes", f.maxBody)
	}
	mode := approval.Ask
	switch f.run.approve {
	case "", "ask":
	case "auto", "deny":
		mode = approval.Mode(f.run.approve)
	default:
		return usage("unknown --approve %q; want ask, auto or deny", f.run.approve)
	}
	if f.run.approvalTimeout < 0 {
		return usage("--approval-timeout: %s is negative", f.run.approvalTimeout)
	}
	// The workflow is checked once now, so a broken one fails at start;
	// each turn loads it again (skills edited between turns are seen).
	p, err := prepareProject(path)
	if err != nil {
		return err
	}
	logger := consoleLogger(stderr, false).Level(zerolog.InfoLevel)
	if f.run.verbose {
		logger = logger.Level(zerolog.DebugLevel)
	}
	sessionsDir := sessionsDirOr(f.run.sessionsDir, filepath.Dir(path))
	srv := serve.New(serve.Config{
		SessionsDir: sessionsDir,
		Workflow:    workflowInfo(p),
		Logger:      logger,
		Start: func(s *engine.Session, sink event.Sink) (*engine.Run, func(error) error, error) {
			rf := f.run
			rf.sess = s
			pr, err := prepare(path, rf, engine.Options{Sink: sink, Logger: logger.Level(zerolog.WarnLevel), Approve: mode,
				ApprovalTimeout: rf.approvalTimeout, Strict: rf.strict, Meta: map[string]string{"model": rf.model}}, nil)
			if err != nil {
				return nil, nil, err
			}
			return pr.run, pr.finish, nil
		},
	})
	for _, r := range srv.RecoverAll() {
		if r.Err != nil {
			fmt.Fprintf(stderr, "fsd serve: session %s: turn %d was interrupted and is not resumed: %v (resume or abandon it: POST /sessions/%s/resume or /abandon)\n", r.Session, r.Turn, r.Err, r.Session)
			continue
		}
		fmt.Fprintf(stderr, "fsd serve: session %s: resuming interrupted turn %d\n", r.Session, r.Turn)
	}
	var m serve.Mounts
	if mounts != nil {
		m = mounts(srv)
	}
	web := ui.NewServer(sessionsDir, redact.FromEnv(os.Environ()))
	defer web.Close()
	web.Chat = true
	m.Web = web.Handler()
	g := guardedHTTP{flag: "--addr", addr: f.addr, allow: f.allow, grace: 10 * time.Second, token: token, needToken: true, maxBody: f.maxBody,
		exposed: "sessions can be run and read by whoever holds the token and reaches an allowed name"}
	g.started = func(a net.Addr) {
		fmt.Fprintf(out, "fsd serve: http://%s/ (%s; sessions in %s; Ctrl-C to stop)\n", a, p.Workflow.Name, sessionsDir)
	}
	g.stopping = func(ctx context.Context) {
		// Turns stop where a resume goes on from.
		if err := srv.Close(ctx); err != nil {
			logger.Warn().Err(err).Msg("turns still running at shutdown; they resume when fsd serve starts again")
		}
	}
	return g.serve(ctx, srv.Handler(m), stderr)
}

// prepareProject loads and checks the workflow, as fsd run does, and
// requires a host: a session is a conversation with it.
func prepareProject(path string) (*spec.Project, error) {
	p, diags := spec.LoadProjectLenient(path)
	if errs := diags.Errors(false); len(errs) > 0 {
		return nil, fail(exitProblems, "%s (run fsd validate %s)", errs[0].String(), path)
	}
	if p.Workflow.Host == nil {
		return nil, fail(exitProblems, "%s: workflow %s has no host: fsd serve runs sessions, conversations with a workflow's host", path, p.Workflow.Name)
	}
	return p, nil
}

// workflowInfo describes the workflow and its enabled skills.
func workflowInfo(p *spec.Project) serve.WorkflowInfo {
	info := serve.WorkflowInfo{Name: p.Workflow.Name}
	enabled := map[string]bool{}
	for _, id := range p.Workflow.Enabled {
		enabled[id] = true
	}
	for _, s := range p.Skills {
		if p.Workflow.EnabledSet && !enabled[s.ID] || s.DisableModelInvocation {
			continue
		}
		info.Skills = append(info.Skills, serve.SkillInfo{ID: s.ID, Name: s.Name, Description: s.Description})
	}
	return info
}
