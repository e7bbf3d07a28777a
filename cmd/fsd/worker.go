package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/provider"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/natsboard"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/telemetry"
	"github.com/fsdrun/fsd/trust"
	"github.com/fsdrun/fsd/work"
)

type workerFlags struct {
	nats        string
	trust       []string
	concurrency int
	agents      string
	cache       string
	ackWait     time.Duration
	name        string
	verbose     bool
	otelContent bool
	auth        natsAuth
}

func newWorkerCmd() *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker --nats URL",
		Short: "Run board tasks of `fsd run --nats` workflows, taken from a NATS JetStream work queue",
		Long: "A long-running worker: it takes task messages from the NATS server's work queue, loads each task's\n" +
			"skill from the server's object store (digest-checked, cached on disk) and runs the task with the\n" +
			"model the workflow names, using this process's API keys (OPENAI_API_KEY, ANTHROPIC_API_KEY, …).\n" +
			"Command tools and stdio MCP servers run only for skills whose files match a skill under --trust.\n" +
			"Stop it with Ctrl-C or SIGTERM: tasks it is running go back to the queue.\n" +
			"A worker started before its NATS server waits for it, saying so, until the server is up or it is stopped.\n" +
			"Several workers on a machine with few cores: GOMAXPROCS=1 in each one's environment keeps their Go\n" +
			"runtimes from waking one another's threads (see docs/scale-out.md).",
		Example: `  nats-server -js &
  fsd worker --nats nats://localhost:4222 --trust ./skills --concurrency 8
  fsd worker --nats nats://localhost:4222 --agents 'weekly-report.*'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorker(cmd.Context(), f, cmd.ErrOrStderr(), useColor(cmd, cmd.ErrOrStderr()))
		},
	}
	cmd.Flags().StringVar(&f.nats, "nats", "", "NATS server with JetStream, e.g. nats://localhost:4222 (required; default $"+envNATSURL+")")
	cmd.Flags().StringArrayVar(&f.trust, "trust", nil, "let skills whose files match a skill under DIR run command tools and stdio MCP servers (repeatable)")
	cmd.Flags().IntVar(&f.concurrency, "concurrency", 4, "tasks run at once")
	cmd.Flags().StringVar(&f.agents, "agents", ">", "agents this worker takes, a NATS subject pattern over SKILL.AGENT (e.g. 'weekly-report.*'; '_.worker' is the default worker)")
	cmd.Flags().StringVar(&f.cache, "cache", "", "folder for fetched skills (default: the user cache folder's fsd/worker)")
	cmd.Flags().DurationVar(&f.ackWait, "ack-wait", natsboard.DefaultAckWait, "how long a task may go without a heartbeat before another worker gets it")
	cmd.Flags().StringVar(&f.name, "name", "", "this worker's name in outcomes and logs (default: host-pid)")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "debug logs on stderr")
	cmd.Flags().BoolVar(&f.otelContent, "otel-content", false, otelContentUsage)
	addNATSAuthFlags(cmd, &f.auth)
	return cmd
}

// N17: a signal is a worker's normal end: exit 0 with the tasks handed
// back.
func runWorker(ctx context.Context, f workerFlags, stderr io.Writer, color bool) error {
	f.nats = orEnv(f.nats, envNATSURL)
	if f.nats == "" {
		return usage("fsd worker needs --nats URL or $%s (a NATS server with JetStream: nats-server -js)", envNATSURL)
	}
	if f.concurrency <= 0 {
		return usage("--concurrency: %d is not a positive number", f.concurrency)
	}
	if f.ackWait < 100*time.Millisecond {
		return usage("--ack-wait: %s is too short; give at least 100ms", f.ackWait)
	}
	if err := natsboard.CheckAgents(f.agents); err != nil {
		return usage("%v", err)
	}
	if err := checkNATSURL(f.nats); err != nil {
		return usage("--nats %v", err)
	}
	// Checked before connecting: a folder named on the command line that
	// is not there is a usage error (exit 2), as for fsd run --trust.
	for _, p := range f.trust {
		if _, err := trust.New([]string{p}); err != nil {
			return usage("--trust %v", err)
		}
	}
	var signingKey []byte
	if path := f.auth.signingKeyFile(); path != "" {
		k, err := natsboard.ReadKey(path)
		if err != nil {
			return usage("--signing-key %v", err)
		}
		signingKey = k
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := withSignals(ctx)
	defer stop()
	log := consoleLogger(stderr, color).Level(zerolog.InfoLevel)
	if f.verbose {
		log = log.Level(zerolog.DebugLevel)
	}
	for _, p := range f.trust {
		// Likely a typo'd or parent folder: say so now, not at the
		// first refused command tool.
		if skills, _ := spec.Discover([]string{p}); len(skills) == 0 {
			log.Warn().Msgf("--trust %s holds no skill (no SKILL.md or *.skill.yaml in it or its subfolders): it lets no command tool run", p)
		}
	}
	build := func(name, script string) (model.Model, error) {
		if name == "" {
			name = provider.Scripted
		}
		return provider.New(name, os.Getenv, provider.Options{Logger: &log, Scripted: func() (model.Model, error) {
			if script == "" {
				return nil, errNoScript
			}
			s, err := loadScript(script)
			if err != nil {
				return nil, err
			}
			return scripted.New(s, nil), nil
		}})
	}
	if signingKey == nil && len(f.trust) > 0 {
		log.Warn().Msgf("no --signing-key: this worker cannot tell task messages from fsd run from others, and whoever may publish on fsd.tasks.> can have it run --trust skills' commands with their own goal and input; give it and fsd run the same --signing-key FILE (or $%s)", envNATSSigningKey)
	}
	run, flush, err := tracedWork(f, log)
	if err != nil {
		return err
	}
	defer flush()
	// Bounded by the signals only: a worker started before its server
	// waits for it (the setup that follows is bounded by 30 s).
	w, err := natsboard.NewWorker(ctx, f.nats, natsboard.WorkerOptions{Work: run,
		Name: f.name, Concurrency: f.concurrency, Agents: f.agents, AckWait: f.ackWait,
		Trust: f.trust, CacheDir: f.cache, Model: build, Logger: log,
		Credentials: f.auth.credentials(), SigningKey: signingKey, WaitForServer: true,
	})
	if err != nil {
		if _, ok := caughtSignal(ctx); ok {
			// Stopped while it waited for its server: a normal end.
			log.Info().Msg("worker stopped before it could connect to NATS")
			return nil
		}
		return fail(exitProblems, "%v", err)
	}
	defer w.Close()
	log.Info().Str("nats", redactURL(f.nats)).Str("agents", f.agents).Int("concurrency", f.concurrency).Msg("worker ready")
	if err = w.Run(ctx); err != nil {
		err = fail(exitProblems, "%v", err)
	}
	// Stopping on a signal is how a worker ends: exit 0, saying what
	// went back to the queue for other workers.
	if sig, ok := caughtSignal(ctx); ok {
		n := w.HandedBack()
		tasks := fmt.Sprintf("%d tasks", n)
		if n == 1 {
			tasks = "1 task"
		}
		log.Info().Msgf("worker stopped (%s): %s handed back to the queue", signalName(sig), tasks)
	}
	return err
}

// tracedWork is the function the worker runs attempts with: engine.Work,
// or, when the OTel environment asks for traces, engine.Observed with
// spans that join each task's trace (the coordinator's, from its task
// message) and flush when the worker stops, however it stops.
func tracedWork(f workerFlags, log zerolog.Logger) (work.Func, func(), error) {
	obs, shutdown, err := telemetry.Setup(context.Background(), os.Getenv, telemetry.Options{
		Content: f.otelContent, Secrets: redact.FromEnv(os.Environ()), Instance: natsboard.WorkerName(f.name),
		Model: func(c model.Caller) string { return cmp.Or(c.Model, provider.Scripted) }})
	if err != nil {
		return nil, nil, fail(exitProblems, "traces: %v (check the OTEL_EXPORTER_OTLP_* variables)", err)
	}
	flush := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn().Err(err).Msg("could not send every trace span")
		}
	}
	if obs == nil {
		return engine.Work, flush, nil
	}
	observed := engine.Observed(obs)
	return func(ctx context.Context, a *work.Attempt, o work.Options) *work.Outcome {
		return observed(telemetry.InRun(ctx, a.Run), a, o)
	}, flush, nil
}

// redacted stands for a NATS URL's user, password or token.
const redacted = natsboard.Redacted + "@"

// redactURL drops the user, password or token from a NATS URL, for logs
// and the run record.
func redactURL(u string) string { return natsboard.RedactURL(u) }

var errNoScript = errors.New("the model is scripted but the run's workflow names no script")
