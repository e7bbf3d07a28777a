package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/provider"
	"github.com/fsdrun/fsd/natsboard"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/telemetry"
	"github.com/fsdrun/fsd/view"
	"github.com/fsdrun/fsd/workspace"
)

type runFlags struct {
	// edit changes the project once loaded, before the run starts (fsd
	// eval --vary: another description of a skill).
	edit    func(*spec.Project)
	offline bool // no model is called (fsd context): no credentials needed
	input   string
	model   string
	events  string
	runsDir string
	verbose bool
	color   bool // -v logs may carry ANSI colour (see useColor)
	// cassette is where --record-cassette saves the model's exchanges.
	cassette string
	replay   string
	trust    []string      // folders whose skills may run commands, beside the workflow's
	timeout  time.Duration // the run's wall-clock bound; 0: none
	force    bool          // resume: run even if the run's files changed
	// otelContent puts prompts and results in trace spans.
	otelContent bool
	// durability: step or commit-before-effects (spec.Durability).
	durability string
	// nats sends the board's tasks to workers through this NATS server.
	nats string
	// natsAuth are the NATS credentials and signing key (--creds, …).
	natsAuth natsAuth
	// approve is who answers calls that need approval: ask, auto, deny.
	approve string
	// approvalTimeout fails a call that waited this long for approval.
	approvalTimeout time.Duration
	// strict fails the run on a skipped skill or an MCP server that
	// cannot start (engine.Options.Strict).
	strict bool
	// workspace is the run's workspace folder ("": the workflow's
	// workspace:, else a fresh folder in the run record).
	workspace string
	// session names the session the run is a turn of ("": none);
	// sessionsDir is where sessions are ("": found like the runs folder).
	session, sessionsDir string
	// sess is the open session whose turn prepare builds.
	sess *engine.Session
	// wrap, when set, wraps the run's model, cassette and all (fsd eval
	// watches its calls); seed seeds the stand-in model (fsd eval passes
	// the repeat). Neither is a flag.
	wrap func(model.Model) model.Model
	seed int
}

// resumeHint is the command that resumes an interrupted run.
func resumeHint(res *engine.Result) string {
	if res == nil || res.Dir == "" {
		return "no record was kept, so it cannot be resumed"
	}
	if runrecord.IsSession(res.Dir) {
		flag := ""
		if dir := filepath.Dir(res.Dir); !sameDir(sessionsDirOr("", "."), dir) {
			flag = " --sessions-dir " + shellArg(dir)
		}
		return "resume the turn with: fsd resume " + res.RunID + flag + " (or give it up: fsd sessions abandon " + res.RunID + flag + ")"
	}
	return "resume it with: fsd resume " + res.RunID + runsDirFlag(res)
}

// runsDirFlag is the --runs-dir a command about the run of res needs: none
// when its record is in the default folder.
func runsDirFlag(res *engine.Result) string {
	dir := filepath.Dir(res.Dir)
	if !sameDir(runsDirOr("", "."), dir) {
		return " --runs-dir " + shellArg(dir)
	}
	return ""
}

func sameDir(a, b string) bool {
	a, _ = filepath.Abs(a)
	b, _ = filepath.Abs(b)
	return a == b
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run WORKFLOW [MESSAGE]",
		Short: "Run a workflow: the final answer goes to stdout, progress to stderr",
		Example: `  fsd run hello.workflow.yaml
  fsd run . -i "Welcome Grace to the team."        # a folder with one workflow
  echo "Welcome Grace." | fsd run hello.workflow.yaml -i -
  fsd run hello.workflow.yaml --events json | jq -c 'select(.type | startswith("task."))'
  fsd run wf.yaml --model openai/gpt-5.4-mini --record-cassette wf.cassette.jsonl
  fsd run wf.yaml --replay wf.cassette.jsonl        # offline, in CI
  fsd run chat.workflow.yaml --session notes "Remember: the build is on Fridays."
  fsd run chat.workflow.yaml --session notes "When is the build?"`,
		Args: usageArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := workflowArg(args[0])
			if err != nil {
				return err
			}
			if len(args) == 2 {
				// The message as an argument: fsd run wf --session s "next".
				if cmd.Flags().Changed("input") {
					return usage("give the message either as an argument or with -i, not both")
				}
				f.input = args[1]
			}
			if f.input, err = readInput(f.input, cmd.InOrStdin()); err != nil {
				return err
			}
			// Changed, not just non-empty: --session "" (an unset
			// $NAME) is a bad name, not a run outside any session.
			if f.session != "" || cmd.Flags().Changed("session") {
				return runSessionTurn(cmd.Context(), path, f, cmd)
			}
			f.color = useColor(cmd, cmd.ErrOrStderr())
			return runWorkflow(cmd.Context(), path, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVarP(&f.input, "input", "i", "", inputUsage)
	cmd.Flags().StringVar(&f.model, "model", "", "model for every generator: scripted, openai/<model>, openai-responses/<model>, anthropic/<model>, gemini/<model>")
	cmd.Flags().StringVar(&f.events, "events", "", "write the event stream to stdout: json")
	_ = cmd.RegisterFlagCompletionFunc("model", completeModels)
	_ = cmd.RegisterFlagCompletionFunc("events", cobra.FixedCompletions([]string{"json"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().StringVar(&f.runsDir, "runs-dir", "", runsDirRunUsage)
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "debug logs on stderr")
	cmd.Flags().StringVar(&f.cassette, "record-cassette", "", "save every model exchange to the cassette `FILE` (secrets stripped) for --replay")
	aliasFlag(cmd, "record", "record-cassette")
	cmd.Flags().StringVar(&f.replay, "replay", "", "answer from the cassette `FILE` made with --record-cassette: offline, deterministic")
	addTrustFlag(cmd, &f)
	addNATSFlag(cmd, &f)
	cmd.Flags().BoolVar(&f.otelContent, "otel-content", false, otelContentUsage)
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "fail the run after this long, e.g. 5m (default: no limit)")
	cmd.Flags().StringVar(&f.workspace, "workspace", "", "the run's workspace `DIR`: where skills' programs run and the built-in tools' files are (default: the workflow's workspace:, else a fresh folder in the run record)")
	addDurabilityFlag(cmd, &f)
	addApprovalFlags(cmd, &f)
	addStrictFlag(cmd, &f)
	cmd.Flags().StringVar(&f.session, "session", "", "run MESSAGE as the next turn of the session `NAME` (created on first use): its loaded skills, store, artifacts, board and usage go on from the turn before (fsd sessions lists them)")
	cmd.Flags().StringVar(&f.sessionsDir, "sessions-dir", "", sessionsDirUsage)
	return cmd
}

// addStrictFlag adds --strict to run and resume.
func addStrictFlag(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().BoolVar(&f.strict, "strict", false,
		"fail the run (exit 1) when a skill was skipped because it could not be loaded or an MCP server cannot start (default: the workflow's strict:, else run on without them)")
}

// addDurabilityFlag adds --durability to run and resume.
func addDurabilityFlag(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().StringVar(&f.durability, "durability", "",
		"when the journal must be on disk: step (each step, the default) or commit-before-effects (only before a command, MCP call or script runs, and before the answer)")
	_ = cmd.RegisterFlagCompletionFunc("durability", cobra.FixedCompletions(
		[]string{string(spec.DurabilityStep), string(spec.DurabilityEffects)}, cobra.ShellCompDirectiveNoFileComp))
}

// prepared is a workflow loaded and ready to run.
type prepared struct {
	project *spec.Project
	run     *engine.Run
	// opts are the options the run was built with: a chat's next turn
	// and its /context are built from them.
	opts engine.Options
	// finish ends a cassette's recording or replay and returns the run's final error.
	finish func(runErr error) error
}

// prepare loads the workflow, checks it and the models it names, and
// builds its run. Every failure is one line for the user. A skill that
// cannot load is left out with one warning line on warn (lenient loading,
// as other Agent Skills clients do); a skill the workflow needs is an error.
func prepare(path string, f runFlags, opts engine.Options, warn io.Writer) (*prepared, error) {
	if f.cassette != "" && f.replay != "" {
		return nil, fail(exitUsage, "--record-cassette and --replay cannot be used together")
	}
	p, diags := spec.LoadProjectLenient(path, natsboard.CheckWorkflow)
	if errs := diags.Errors(false); len(errs) > 0 {
		first := errs[0].String()
		if len(errs) > 1 {
			first += fmt.Sprintf(" (and %s; run fsd validate %s)", plural(len(errs)-1, "more problem"), path)
		}
		return nil, fail(exitProblems, "%s", first)
	}
	if f.edit != nil {
		f.edit(p)
	}
	if p != nil && warn != nil {
		for _, s := range p.Skipped {
			fmt.Fprintf(warn, "warning: skill %q skipped: %s: %s (fsd validate %s shows every problem)\n", s.ID, s.Pos, s.Reason, s.File)
		}
	}
	if opts.Trusted == nil {
		trusted, err := skillTrust(p.Workflow, f.trust)
		if err != nil {
			return nil, err
		}
		opts.Trusted = trusted
	}
	if warn != nil {
		sourceNotes(warn, p.Sources, opts.Trusted)
	}
	pr := &prepared{project: p}
	log := opts.Logger
	if f.verbose {
		for _, note := range missingInterpreters(p) {
			log.Info().Msg(note)
		}
	}
	remote := f.nats != "" || p.Workflow.Board != nil && p.Workflow.Board.NATS != ""
	ms := &models{override: f.model, offline: f.offline, remote: remote, project: p, log: &log, seed: f.seed, handle: func(id string) (string, error) {
		if pr.run == nil {
			return "", errors.New("the run has not started")
		}
		return pr.run.Handle(id)
	}}
	m, rnd, finish, err := withCassette(ms, f.cassette, f.replay)
	if err != nil {
		return nil, fail(exitProblems, "%v", err)
	}
	if f.wrap != nil {
		m = f.wrap(m)
	}
	opts.Model, opts.Rand, pr.finish = m, rnd, finish
	if opts.Rand == nil && opts.Seed == nil && opts.HandleKey == nil {
		// A cassette seeds its handles instead: its replay runs anywhere.
		opts.HandleKey, err = handleKeyFor(path)
		switch {
		case errors.Is(err, runrecord.ErrNoHandleKey):
			log.Debug().Err(err).Msg("handles are drawn anew this run")
		case errors.Is(err, runrecord.ErrHandleKeyOpen):
			log.Warn().Msg(err.Error())
		case err != nil:
			// A damaged key costs every run the prompt cache of the
			// last, and a resume its handles: say how to mend it.
			log.Warn().Msgf("%v (this run's handles are drawn anew: its requests share no prompt cache with other runs)", err)
		}
	}
	if opts.Dispatcher == nil {
		d, closeNATS, err := natsDispatcher(path, f, p, ms, log)
		if err != nil {
			return nil, err
		}
		if d != nil {
			opts.Dispatcher = d
			inner := pr.finish
			pr.finish = func(runErr error) error {
				err := inner(runErr)
				closeNATS()
				return err
			}
		}
	}
	if opts.Observer == nil {
		// Traces only when the OTel environment asks for them.
		obs, shutdown, err := telemetry.Setup(context.Background(), os.Getenv, telemetry.Options{
			Content: f.otelContent, Secrets: redact.FromEnv(os.Environ()), Model: ms.nameFor})
		if err != nil {
			return nil, fail(exitProblems, "traces: %v (check the OTEL_EXPORTER_OTLP_* variables)", err)
		}
		opts.Observer = obs
		finish := pr.finish
		pr.finish = func(runErr error) error {
			err := finish(runErr)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if serr := shutdown(ctx); serr != nil {
				log.Warn().Err(serr).Msg("could not send every trace span")
			}
			return err
		}
	}
	opts.Reload = func() (*spec.Project, error) {
		np, d := spec.LoadProjectLenient(path, natsboard.CheckWorkflow)
		if err := d.Err(); err != nil {
			return nil, err
		}
		return np, nil
	}
	// board.nats may carry NATS credentials: the record keeps none, and
	// no text the run records or sends does.
	opts.Redact = natsboard.Redact
	opts.Secrets = append(opts.Secrets, natsboard.URLSecrets(f.nats)...)
	if b := p.Workflow.Board; b != nil {
		opts.Secrets = append(opts.Secrets, natsboard.URLSecrets(b.NATS)...)
	}
	pr.opts = opts
	var r *engine.Run
	if f.sess != nil {
		r, err = f.sess.Start(p, opts)
	} else {
		r, err = engine.New(p, opts)
	}
	if err != nil && f.cassette == "" {
		// A chat goes on after a turn that could not start: its
		// connections close now, not when fsd exits. (A cassette being
		// recorded is left unwritten.)
		_ = pr.finish(err)
	}
	if errors.Is(err, engine.ErrNotResumable) || f.sess != nil && err != nil {
		// A session's turn that cannot start says why (interrupted, no
		// host, another workspace): the user's to fix.
		return nil, fail(exitProblems, "%v", err)
	}
	if err != nil {
		return nil, fail(exitInternal, "%v", err)
	}
	pr.run = r
	if warn != nil {
		catalogCutWarning(warn, r.Catalog())
	}
	return pr, nil
}

// sourceNotes says, one line each on stderr, which skills folders above
// the workflow's folder or in the home folder a workflow without `skills:`
// found skills in, and whether they may run programs: a user who did not
// write those paths learns where the skills came from.
func sourceNotes(w io.Writer, sources []spec.SkillSource, trusted func(*spec.Skill) bool) {
	for _, src := range sources {
		where := map[spec.Scope]string{spec.ScopeProject: "the project's, above the workflow's folder", spec.ScopeUser: "yours, in the home folder"}[src.Scope]
		if where == "" {
			continue
		}
		trust := ""
		if trusted != nil && !trusted(&spec.Skill{Dir: src.Dir}) {
			trust = "; their command tools, scripts and stdio MCP servers run only with --trust " + src.Dir
		}
		fmt.Fprintf(w, "note: skills from %s (%s%s)\n", src.Dir, where, trust)
	}
}

func runWorkflow(ctx context.Context, path string, f runFlags, stdout, stderr io.Writer) error {
	return execute(ctx, path, f, nil, stdout, stderr)
}

// execute runs a workflow, or resumes one when journal is set.
func execute(ctx context.Context, path string, f runFlags, journal *engine.Replay, stdout, stderr io.Writer) error {
	if f.events != "" && f.events != "json" {
		return usage("unknown --events %q; want json", f.events)
	}
	if f.timeout < 0 {
		return fail(exitUsage, "--timeout: %s is negative", f.timeout)
	}
	if f.workspace != "" {
		// A folder that cannot be the workspace is bad usage, said
		// before a run record exists that it would leave behind.
		if _, err := workspace.Open(f.workspace); err != nil {
			return usage("--workspace: %v", err)
		}
	}
	// Unset, the workflow's durability: key decides.
	var durability spec.Durability
	if f.durability != "" {
		d, err := spec.ParseDurability(f.durability)
		if err != nil {
			return usage("--durability: %v", err)
		}
		durability = d
	}
	terminal := stdinIsTerminal()
	mode, err := approvalMode(f, terminal)
	if err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := withSignals(ctx)
	defer stop()
	ctx, cancel := withRunTimeout(ctx, f.timeout)
	defer cancel()

	// Warnings (a repaired record, an in-doubt call run again) always
	// reach stderr; -v adds the debug log.
	logger := consoleLogger(stderr, f.color).Level(zerolog.WarnLevel)
	if f.verbose {
		logger = logger.Level(zerolog.DebugLevel)
	}
	var sink event.Sink
	var ask *prompter
	stopView := func() {}
	switch {
	case f.events == "json":
		sink = newJSONSink(stdout)
	case isTerminal(stderr) && !f.verbose:
		// A person is watching: draw the live board in place.
		live := view.NewBoard(stderr, nil)
		live.Start(100 * time.Millisecond)
		stopView = live.Stop
		defer live.Stop()
		sink = live
		if mode == approval.Ask && terminal && f.approve != "wait" {
			// …and can answer approvals right there.
			ask = newPrompter(os.Stdin, stderr, live.Hold)
			sink = event.Multi{live, ask}
		}
	default:
		progress := newProgressSink(stderr)
		defer progress.flush()
		stopView = progress.flush
		sink = progress
	}
	// Meta keeps the flags a resume needs to rebuild the same run.
	meta := map[string]string{"model": f.model, "trust": strings.Join(f.trust, string(os.PathListSeparator))}
	if f.nats != "" {
		// Never a URL's user, password or token: a resume asks for them.
		meta["nats"] = redactURL(f.nats)
	}
	pr, err := prepare(path, f, engine.Options{Sink: sink, RunsDir: runsDirOr(f.runsDir, filepath.Dir(path)), Logger: logger, Resume: journal, Meta: meta, Force: f.force,
		Durability: durability, Approve: mode, ApprovalTimeout: f.approvalTimeout, Strict: f.strict, Workspace: f.workspace}, stderr)
	if err != nil {
		return err
	}
	if ask != nil {
		ask.start(pr.run)
		defer ask.stop()
	}
	res, err := pr.run.Execute(ctx, f.input)
	err = pr.finish(err)
	stopView() // the last frame goes out before the answer
	if err != nil {
		where := ""
		if res != nil && res.Dir != "" {
			where = " (record: " + res.Dir + ")"
		}
		switch {
		case timedOut(ctx, err):
			return fail(exitProblems, "run timed out after %s; %s", shortDuration(f.timeout), resumeHint(res))
		case errors.Is(err, engine.ErrInterrupted):
			if sig, ok := caughtSignal(ctx); ok {
				return fail(signalExit(sig), "run interrupted (%s); %s", signalName(sig), resumeHint(res))
			}
			return fail(exitProblems, "run interrupted: %v; %s", err, resumeHint(res))
		case errors.Is(err, engine.ErrChanged):
			return fail(exitProblems, "%v", err)
		case errors.Is(err, approval.ErrWaiting) && res != nil && res.Dir != "":
			return stoppedToWait(stderr, res, pr.run.Pending())
		}
		return fail(exitProblems, "run failed: %v%s", err, where)
	}
	if f.events != "json" {
		fmt.Fprintln(stdout, strings.TrimRight(res.Answer, "\n"))
	}
	return nil
}

// completeModels completes --model with the model strings fsd knows how
// to build; after a provider's slash the user types the model name.
func completeModels(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	out := []cobra.Completion{cobra.CompletionWithDesc(provider.Scripted, "the workflow's script, offline")}
	for _, p := range provider.Providers() {
		out = append(out, cobra.CompletionWithDesc(p.Name+"/", p.Key+"; "+p.BaseURL+" for another server"))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
