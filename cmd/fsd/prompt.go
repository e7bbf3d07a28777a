package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
)

// prompter asks the person at the terminal about each call that waits for
// approval, one at a time, while the live board holds still. It is an
// event.Sink: approval.requested events queue a question.
type prompter struct {
	in   *bufio.Reader
	src  io.Reader // under in: a readCanceler ends a question's read
	out  io.Writer
	hold func() (release func())

	mu       sync.Mutex
	run      *engine.Run
	queue    chan event.Event
	answered map[string]bool // answered elsewhere (fsd approve) meanwhile
	asking   string          // the call whose question is on screen
	done     chan struct{}
}

// readCanceler is an input whose read in progress can be ended (the
// chat's turn input): a question whose call fsd approve answered stops
// waiting for its answer, so the screen it holds still goes on.
type readCanceler interface {
	cancelRead()
	clearCancel()
}

// errAnsweredElsewhere ends a question's read: its call was answered
// elsewhere meanwhile.
var errAnsweredElsewhere = errors.New("the call was answered elsewhere")

func newPrompter(in io.Reader, out io.Writer, hold func() func()) *prompter {
	return &prompter{in: bufio.NewReader(in), src: in, out: out, hold: hold, queue: make(chan event.Event, 64),
		answered: map[string]bool{}, done: make(chan struct{})}
}

func stdinIsTerminal() bool { return term.IsTerminal(int(os.Stdin.Fd())) }

// Emit queues approval requests and notes answers.
func (p *prompter) Emit(e event.Event) {
	switch e.Type {
	case event.ApprovalRequested:
		select {
		case p.queue <- e:
		default: // more than 64 waiting at once: fsd approve answers the rest
		}
	case event.ApprovalAnswered:
		p.mu.Lock()
		p.answered[e.Approval] = true
		asking := p.asking == e.Approval
		p.mu.Unlock()
		if c, ok := p.src.(readCanceler); ok && asking {
			c.cancelRead()
		}
	}
}

// start begins asking, answering through run.
func (p *prompter) start(run *engine.Run) {
	p.run = run
	go func() {
		for {
			select {
			case <-p.done:
				return
			case e := <-p.queue:
				p.mu.Lock()
				skip := p.answered[e.Approval]
				p.mu.Unlock()
				if !skip {
					p.one(e)
				}
			}
		}
	}()
}

// stop ends asking. A question on screen is left unanswered (the run is
// over; a read in progress ends with the process).
func (p *prompter) stop() { close(p.done) }

// one asks about one call and answers it.
func (p *prompter) one(e event.Event) {
	release := func() {}
	if p.hold != nil {
		release = p.hold()
	}
	defer release()
	p.mu.Lock()
	p.asking = e.Approval
	p.mu.Unlock()
	a, err := ask(p.in, p.out, e)
	p.mu.Lock()
	p.asking = ""
	p.mu.Unlock()
	if c, ok := p.src.(readCanceler); ok {
		c.clearCancel() // one that came as the answer was read
	}
	if errors.Is(err, errAnsweredElsewhere) {
		fmt.Fprintf(p.out, "\ncall %s was answered elsewhere meanwhile\n", e.Approval)
		return
	}
	if err != nil {
		select {
		case <-p.done: // the run is over (a chat's turn was cancelled)
			return
		default:
		}
		fmt.Fprintf(p.out, "fsd: no answer read (%v); answer with: fsd approve %s %s\n", err, e.Run, e.Approval)
		return
	}
	a.Time = time.Now()
	if err := p.run.Answer(a); err != nil {
		if errors.Is(err, runrecord.ErrAnswered) {
			fmt.Fprintf(p.out, "call %s was answered elsewhere meanwhile\n", e.Approval)
			return
		}
		fmt.Fprintf(p.out, "fsd: %v\n", err)
	}
}

// ask puts the question and reads the answer: a[pprove], e[dit] (with
// the arguments as JSON on the same line or the next), r[eject] (with
// the reason, likewise). Anything else gets a line saying how, and the
// question again; it fails only when the input ends.
func ask(in *bufio.Reader, out io.Writer, e event.Event) (runrecord.Answer, error) {
	a := runrecord.Answer{Call: e.Approval, By: "terminal"}
	who := "the host"
	if e.Task != "" {
		who = fmt.Sprintf("task %s (%s)", e.Task, e.Agent)
	}
	args := string(e.Args)
	var buf bytes.Buffer
	if json.Compact(&buf, e.Args) == nil {
		args = buf.String()
	}
	fmt.Fprintf(out, "\n%s wants to call %s %s\n  call %s\n", who, e.Tool, args, e.Approval)
	for {
		fmt.Fprint(out, "[a]pprove, [e]dit arguments, [r]eject? ")
		line, err := readLine(in)
		if err != nil {
			return a, err
		}
		// The arguments or the reason may follow on the same line:
		// `e {"branch":"main"}`, `r not on a Friday`.
		verb, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToLower(verb) {
		case "a", "approve", "y", "yes":
			a.Decision = runrecord.Approved
			return a, nil
		case "e", "edit":
			for {
				if rest == "" {
					fmt.Fprint(out, "arguments (one line of JSON): ")
					if rest, err = readLine(in); err != nil {
						return a, err
					}
				}
				buf.Reset()
				if json.Compact(&buf, []byte(rest)) == nil && strings.HasPrefix(buf.String(), "{") {
					a.Decision, a.Args = runrecord.Edited, json.RawMessage(buf.String())
					return a, nil
				}
				fmt.Fprintln(out, "not a JSON object; try again")
				rest = ""
			}
		case "r", "reject", "n", "no":
			if rest == "" {
				fmt.Fprint(out, "reason (the model reads it): ")
				if rest, err = readLine(in); err != nil {
					return a, err
				}
			}
			a.Decision, a.Reason = runrecord.Rejected, rest
			return a, nil
		default:
			fmt.Fprintln(out, `a approves; e {JSON} (or e, then the JSON) runs it with these arguments; r REASON (or r, then the reason) rejects it`)
		}
	}
}

func readLine(in *bufio.Reader) (string, error) {
	line, err := in.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		return "", err
	}
	return strings.TrimSpace(line), nil
}
