package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/tokens"
	"github.com/fsdrun/fsd/workspace"
)

// chatPrompt is the prompt line a terminal shows before each message.
const chatPrompt = "> "

const chatHelp = `/skills      the loaded skills, least recently used first, with their versions
/context [MESSAGE]  the next request's tokens: context block, messages, tools
/new         start a new session
/exit        leave (or Ctrl-D; Ctrl-C twice at the prompt); the session is kept
Ctrl-C during a turn cancels the turn, not the session.`

func newChatCmd() *cobra.Command {
	var f runFlags
	var session string
	cmd := &cobra.Command{
		Use:   "chat WORKFLOW",
		Short: "Talk with a workflow in the terminal: one session, a turn per message",
		Long: `Talk with a workflow: each line you type is the next turn of a session, its answer
streamed as it comes, the live board and approval questions in place. /skills lists
the loaded skills, /context the next request's tokens, /new starts a new session,
/exit (or Ctrl-D) leaves. Ctrl-C cancels the running turn, not the session.

Without --session a new session is made and its name printed; leaving says how to
continue it. When stdin is not a terminal, each line is a turn and each answer is
printed on stdout, so a conversation can be scripted.`,
		Example: `  fsd chat hello.workflow.yaml
  fsd chat hello.workflow.yaml --session onboarding   # continue (or start) a named session
  printf 'Welcome Grace.\n/skills\n' | fsd chat hello.workflow.yaml`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := workflowArg(args[0])
			if err != nil {
				return err
			}
			if session == "" && cmd.Flags().Changed("session") {
				// An unset $NAME: continuing no session is not what
				// was asked, as with fsd run --session "".
				return usage("--session: %v", runrecord.CheckSessionName(session))
			}
			c := &chat{arg: args[0], path: path, f: f, name: session,
				out: cmd.OutOrStdout(), errw: cmd.ErrOrStderr()}
			return c.run(cmd.InOrStdin())
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "the session `NAME` to continue, made on first use (default: a new one, its name printed)")
	cmd.Flags().StringVar(&f.model, "model", "", "model for every generator: scripted, openai/<model>, anthropic/<model>")
	_ = cmd.RegisterFlagCompletionFunc("model", completeModels)
	cmd.Flags().StringVar(&f.sessionsDir, "sessions-dir", "", sessionsDirUsage)
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "debug logs on stderr (the board is not drawn)")
	cmd.Flags().StringVar(&f.workspace, "workspace", "", "the session's workspace `DIR` (default: the workflow's workspace:, else a fresh folder in the record)")
	addTrustFlag(cmd, &f)
	addApprovalFlags(cmd, &f)
	addStrictFlag(cmd, &f)
	return cmd
}

// chat is one `fsd chat`: a loop of prompts and turns on one session.
type chat struct {
	arg, path string // the workflow as typed, and as found
	f         runFlags
	name      string // the session's
	dir       string // where sessions are
	sess      *engine.Session
	out, errw io.Writer
	// live: stdin and stdout are a terminal; the turn is drawn there.
	live  bool
	lines <-chan string // stdin's lines; closed at its end
	sigs  chan os.Signal
	// warned: the workflow's warnings were printed (at the first turn).
	warned bool
	// failed: a turn failed; a scripted chat exits 1 at the end.
	failed bool
}

// run is the chat's loop.
//
// Q22: on a terminal (stdin and stdout) the prompt and the screen are
// drawn; otherwise stdout gets the answers and the commands' output only.
func (c *chat) run(stdin io.Reader) error {
	if c.f.workspace != "" {
		if _, err := workspace.Open(c.f.workspace); err != nil {
			return usage("--workspace: %v", err)
		}
	}
	if _, err := approvalMode(c.f, false); err != nil {
		return err
	}
	c.dir = sessionsDirOr(c.f.sessionsDir, filepath.Dir(c.path))
	c.live = stdinIsTerminal() && stdin == os.Stdin && isTerminal(c.out)
	c.lines = readLines(stdin)
	c.sigs = make(chan os.Signal, 4)
	signal.Notify(c.sigs, stopSignals...)
	defer signal.Stop(c.sigs)
	if err := c.open(c.name); err != nil {
		return err
	}
	if c.live {
		fmt.Fprintln(c.out, "/help lists the commands; /exit or Ctrl-D leaves.")
	}
	interrupts := 0
	for {
		if c.live {
			fmt.Fprint(c.out, chatPrompt)
		}
		select {
		case line, ok := <-c.lines:
			if !ok {
				if c.live {
					fmt.Fprintln(c.out)
				}
				return c.leave(nil)
			}
			interrupts = 0
			line = strings.TrimSpace(line)
			switch {
			case line == "":
			case strings.HasPrefix(line, "/"):
				if leave, err := c.command(line); leave || err != nil {
					return c.leave(err)
				}
			default:
				if sig, err := c.turn(line); sig != nil || err != nil {
					return c.leave(signalled(sig, err))
				}
			}
		case sig := <-c.sigs:
			interrupts++
			if sig != os.Interrupt {
				return c.leave(signalled(sig, nil))
			}
			if interrupts > 1 {
				fmt.Fprintln(c.out)
				return c.leave(nil)
			}
			fmt.Fprintln(c.out, "\n(Ctrl-C again, /exit or Ctrl-D leaves; the session is kept)")
		}
	}
}

// open opens the session name, a new one when name is "".
func (c *chat) open(name string) error {
	if name == "" {
		name = newSessionName()
	}
	sess, err := openSessionCLI(c.dir, name, engine.OpenSession)
	if err != nil {
		return err
	}
	c.sess, c.name, c.warned = sess, name, false
	fmt.Fprintf(c.errw, "session %s\n", c.name)
	return nil
}

// abandon gives up the session's cancelled turn, so the next one goes
// on after it.
func (c *chat) abandon() error {
	if !c.sess.Interrupted() {
		return nil // it ended before the cancel reached it
	}
	if err := c.sess.Abandon(); err != nil {
		return fail(exitProblems, "%v", err)
	}
	return nil
}

// newSessionName is a fresh session's name, made like a run id: the UTC
// time and random hex.
func newSessionName() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// signalled is err, or the chat's end by sig (SIGTERM, SIGHUP): exit
// 128+signal, as a shell reports it.
func signalled(sig os.Signal, err error) error {
	if err != nil || sig == nil {
		return err
	}
	return fail(signalExit(sig), "chat ended (%s); the session is kept", signalName(sig))
}

// leave closes the session and says how to continue it.
func (c *chat) leave(err error) error {
	cerr := c.sess.Close()
	fmt.Fprintf(c.errw, "continue this conversation with: %s\n", c.continueCmd())
	if err == nil && cerr != nil {
		err = fail(exitProblems, "close session %s: %v", c.name, cerr)
	}
	if err == nil && c.failed && !c.live {
		err = fail(exitProblems, "a turn failed")
	}
	return err
}

func (c *chat) continueCmd() string {
	s := "fsd chat " + shellArg(c.arg) + " --session " + c.name
	if c.f.sessionsDir != "" {
		s += " --sessions-dir " + shellArg(c.f.sessionsDir)
	}
	return s
}

// command runs a slash command; leave says the chat ends.
func (c *chat) command(line string) (leave bool, err error) {
	name, rest, _ := strings.Cut(line, " ")
	switch name {
	case "/exit", "/quit":
		return true, nil
	case "/help":
		fmt.Fprintln(c.out, chatHelp)
	case "/skills":
		c.skills()
	case "/context":
		c.context(strings.TrimSpace(rest))
	case "/new":
		if err := c.sess.Close(); err != nil {
			fmt.Fprintf(c.errw, "fsd: close session %s: %v\n", c.name, err)
		}
		fmt.Fprintf(c.errw, "session %s kept: %s\n", c.name, c.continueCmd())
		return false, c.open("")
	default:
		fmt.Fprintf(c.out, "unknown command %s; /help lists them\n", name)
	}
	return false, nil
}

func (c *chat) skills() {
	loaded := c.sess.Loaded()
	if len(loaded) == 0 {
		fmt.Fprintln(c.out, "no skills loaded")
		return
	}
	fmt.Fprintln(c.out, "loaded skills, least recently used first:")
	for _, s := range loaded {
		v := s.Version
		if v == "" {
			v = "(no version)"
		}
		fmt.Fprintf(c.out, "  %s %s\n", s.ID, v)
	}
}

// context prints the token breakdown of the request the next turn would
// send for message, as fsd context counts it.
func (c *chat) context(message string) {
	f := c.f
	f.offline = true // nothing is sent
	pr, err := prepare(c.path, f, engine.Options{Logger: zerolog.Nop()}, nil)
	if err != nil {
		fmt.Fprintf(c.errw, "fsd: %v\n", err)
		return
	}
	req, err := c.sess.NextRequest(pr.project, pr.opts, message)
	_ = pr.finish(nil)
	if err != nil {
		fmt.Fprintf(c.errw, "fsd: %v\n", err)
		return
	}
	ctx, win, tools := tokens.Count(req.Context), 0, 0
	for _, m := range req.Messages {
		win += messageTokens(m)
	}
	for _, t := range req.Tools {
		tools += toolTokens(t)
	}
	fmt.Fprintf(c.out, "next request: %d tokens (o200k_base)\n  %-14s %6d\n  %-14s %6d\n  %-14s %6d\n", ctx+win+tools,
		"context block", ctx, plural(len(req.Messages), "message"), win, plural(len(req.Tools), "tool"), tools)
}

// turn runs one turn. sig is a signal that ends the chat (SIGTERM,
// SIGHUP), err a failure that does.
//
// Q20: SIGINT cancels the turn's context only; the turn is abandoned
// and the chat goes on. Q21: the answer was streamed by the screen, so
// it is printed only when it was not.
func (c *chat) turn(message string) (sig os.Signal, err error) {
	f := c.f
	mode, err := approvalMode(f, c.live)
	if err != nil {
		return nil, err
	}
	logger := consoleLogger(c.errw, false).Level(zerolog.WarnLevel)
	if f.verbose {
		logger = logger.Level(zerolog.DebugLevel)
	}
	var sink event.Sink
	var ask *prompter
	var screen *chatScreen
	inputDone := make(chan struct{})
	defer close(inputDone)
	finishView := func() {}
	if c.live && !f.verbose {
		screen = newChatScreen(c.out)
		sink = screen
		finishView = screen.finish
		if mode == approval.Ask && f.approve != "wait" {
			ask = newPrompter(&turnInput{lines: c.lines, done: inputDone, cancel: make(chan struct{}, 1)}, c.out, screen.hold)
			sink = event.Multi{screen, ask}
		}
	} else {
		progress := newProgressSink(c.errw)
		sink, finishView = progress, progress.flush
	}
	warn := c.errw
	if c.warned {
		warn = nil
	}
	c.warned = true
	f.sess = c.sess
	// Meta keeps the flags a resume of the turn needs (fsd resume NAME).
	pr, err := prepare(c.path, f, engine.Options{Sink: sink, Logger: logger,
		Meta:    map[string]string{"model": f.model, "trust": strings.Join(f.trust, string(os.PathListSeparator))},
		Approve: mode, ApprovalTimeout: f.approvalTimeout, Strict: f.strict, Workspace: f.workspace}, warn)
	if err != nil {
		c.failed = true
		fmt.Fprintf(c.errw, "fsd: %v\n", err)
		return nil, nil
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	watching, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case s := <-c.sigs:
				if s != os.Interrupt {
					sig = s
				}
				cancel(signalCause{s})
			case <-watching:
				return
			}
		}
	}()
	if screen != nil {
		screen.start(100 * time.Millisecond)
	}
	if ask != nil {
		ask.start(pr.run)
	}
	res, err := pr.run.Execute(ctx, message)
	err = pr.finish(err)
	if ask != nil {
		ask.stop()
	}
	finishView()
	close(watching)
	<-watched
	switch {
	case err == nil:
		if screen == nil || strings.TrimSpace(screen.said) != strings.TrimSpace(res.Answer) {
			fmt.Fprintln(c.out, strings.TrimRight(res.Answer, "\n"))
		}
	case errors.Is(err, engine.ErrInterrupted) && context.Cause(ctx) != nil:
		if sig != nil {
			// Not the user's Ctrl-C: the turn stays, to be resumed.
			fmt.Fprintf(c.errw, "turn interrupted; %s\n", resumeHint(res))
			return sig, nil
		}
		fmt.Fprintln(c.out, "(turn cancelled)")
		return nil, c.abandon()
	case errors.Is(err, approval.ErrWaiting) && res != nil && res.Dir != "":
		return sig, stoppedToWait(c.errw, res, pr.run.Pending())
	default:
		c.failed = true
		fmt.Fprintf(c.errw, "fsd: turn failed: %v\n", err)
	}
	return sig, nil
}

// readLines sends stdin's lines, one at a time as they are read, and
// closes the channel at its end.
func readLines(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		in := bufio.NewReader(r)
		for {
			line, err := in.ReadString('\n')
			if line != "" {
				ch <- strings.TrimRight(line, "\r\n")
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// errTurnOver ends a question's read when its turn ended.
var errTurnOver = errors.New("the turn is over")

// turnInput is the chat's input for the approval prompter during one
// turn: the lines typed while it runs, until done.
type turnInput struct {
	lines <-chan string
	done  <-chan struct{}
	// cancel ends the read in progress: its question's call was answered
	// elsewhere (readCanceler).
	cancel chan struct{}
	buf    []byte
}

func (r *turnInput) cancelRead() {
	select {
	case r.cancel <- struct{}{}:
	default:
	}
}

func (r *turnInput) clearCancel() {
	select {
	case <-r.cancel:
	default:
	}
}

func (r *turnInput) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		select {
		case line, ok := <-r.lines:
			if !ok {
				return 0, io.EOF
			}
			r.buf = []byte(line + "\n")
		case <-r.done:
			return 0, errTurnOver
		case <-r.cancel:
			return 0, errAnsweredElsewhere
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
