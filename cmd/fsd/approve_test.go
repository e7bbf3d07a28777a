package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/runrecord"
)

const releaseExample = "../../examples/release/release.workflow.yaml"

// waitForPending starts fsd run on the release example in a subprocess
// and waits until its record says a call waits for approval. It returns
// the process (with its stdout: the event stream), the run's id and the
// runs dir.
func waitForPending(t *testing.T) (proc *subprocess, id, runs string) {
	t.Helper()
	return waitForPendingOf(t, "", releaseExample)
}

// waitForPendingOf is waitForPending for the workflow wf (a copy of the
// release example), fsd started in the folder cwd ("": this one). The run
// has no terminal: --approve wait keeps it waiting for fsd approve.
func waitForPendingOf(t *testing.T, cwd, wf string) (proc *subprocess, id, runs string) {
	t.Helper()
	runs = t.TempDir()
	cmd, out, errb := fsdProc("run", wf, "--runs-dir", runs, "--events", "json", "--approve", "wait")
	cmd.Dir = cwd
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	proc = &subprocess{cmd: cmd.Process, wait: cmd.Wait, out: out, errb: errb}
	t.Cleanup(func() { proc.kill() })
	for range 3000 { // bounded: 30 s at most, under -race on a busy machine
		entries, _ := os.ReadDir(runs)
		if len(entries) == 1 {
			id = entries[0].Name()
			var sum runrecord.Summary
			if b, err := os.ReadFile(filepath.Join(runs, id, runrecord.RunFile)); err == nil && json.Unmarshal(b, &sum) == nil &&
				sum.Status == runrecord.Waiting && len(sum.Pending) == 1 {
				return proc, id, runs
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	proc.kill()
	t.Fatalf("the run never waited for approval; stderr:\n%s", errb)
	return nil, "", ""
}

type subprocess struct {
	cmd       *os.Process
	wait      func() error
	out, errb *bytes.Buffer
	done      bool
	code      int
}

func (p *subprocess) exit() int {
	if !p.done {
		p.code, p.done = exitCode(p.wait()), true
	}
	return p.code
}

func (p *subprocess) kill() {
	if !p.done {
		p.cmd.Kill()
		p.exit()
	}
}

// A run waits for approval while another process answers it: fsd runs
// lists it as waiting, fsd approve (here: this test process) approves,
// edits or rejects, and the run goes on with the answer.
func TestApproveFromAnotherProcess(t *testing.T) {
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("runs fsd as a subprocess")
	}
	t.Parallel()
	for _, tc := range []struct {
		name     string
		flags    []string
		decision string
		answer   string
	}{
		{"approve", nil, runrecord.Approved, "published 1.4.0 to stable (call task:ship/s1/c1)"},
		{"edit", []string{"--edit", `{"version": "1.4.0", "channel": "beta"}`}, runrecord.Edited, "published 1.4.0 to beta"},
		{"reject", []string{"--reject", "the freeze is on"}, runrecord.Rejected, "rejected it (the freeze is on)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc, id, runs := waitForPending(t)
			code, out, errs := fsd(t, "runs", "--runs-dir", runs)
			if code != exitOK || !strings.Contains(out, id) || !strings.Contains(out, "waiting") {
				t.Errorf("fsd runs while the call waits (exit %d):\n%s%s", code, out, errs)
			}
			code, out, errs = fsd(t, append([]string{"approve", id, "task:ship/s1/c1", "--runs-dir", runs}, tc.flags...)...)
			if code != exitOK || !strings.Contains(out, tc.decision+" task:ship/s1/c1 (publish)") {
				t.Fatalf("fsd approve: exit %d\n%s%s", code, out, errs)
			}
			if code := proc.exit(); code != exitOK {
				t.Fatalf("the run exited %d:\n%s", code, proc.errb)
			}
			evs := events(t, proc.out.String())
			var answered []event.Event
			for _, e := range evs {
				if e.Type == event.ApprovalAnswered {
					answered = append(answered, e)
				}
			}
			if len(answered) != 1 || answered[0].Status != tc.decision || answered[0].By != "fsd approve" {
				t.Errorf("approval.answered events: %+v", answered)
			}
			if last := evs[len(evs)-1]; last.Type != event.RunFinished || !strings.Contains(last.Answer, tc.answer) {
				t.Errorf("the run answered %q, want it to contain %q", last.Answer, tc.answer)
			}
			// A second answer is refused: the first stands.
			if code, _, errs := fsd(t, "approve", id, "--runs-dir", runs); code != exitProblems || !strings.Contains(errs, "no call waiting") {
				t.Errorf("a second fsd approve: exit %d: %s", code, errs)
			}
		})
	}
}

// A run stopped (SIGINT) while a call waits keeps it pending: fsd runs
// says so, fsd approve answers the stopped run, and fsd resume runs the
// call once and finishes.
func TestApproveStoppedRunThenResume(t *testing.T) {
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("runs fsd as a subprocess")
	}
	t.Parallel()
	proc, id, runs := waitForPending(t)
	if err := proc.cmd.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := proc.exit(); code != 130 {
		t.Fatalf("exit %d after SIGINT:\n%s", code, proc.errb)
	}
	code, out, _ := fsd(t, "runs", "--runs-dir", runs)
	if code != exitOK || !strings.Contains(out, "interrupted (1 waiting)") {
		t.Errorf("fsd runs after the stop:\n%s", out)
	}
	code, out, _ = fsd(t, "show", id, "--runs-dir", runs)
	if code != exitOK || !strings.Contains(out, "waiting for approval (1)\n  task:ship/s1/c1 publish") {
		t.Errorf("fsd show after the stop:\n%s", out)
	}
	code, out, errs := fsd(t, "approve", id, "--runs-dir", runs)
	if code != exitOK || !strings.Contains(out, "fsd resume "+id) {
		t.Fatalf("fsd approve on the stopped run: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = fsd(t, "resume", id, "--runs-dir", runs)
	if code != exitOK || !strings.Contains(out, "published 1.4.0 to stable") {
		t.Fatalf("fsd resume: exit %d\n%s%s", code, out, errs)
	}
	// The publish ran once: in the resumed run, not before the stop.
	b, err := os.ReadFile(filepath.Join(runs, id, runrecord.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, e := range events(t, string(b)) {
		if e.Type == event.ToolResult && e.Tool == "publish" && !e.Replayed {
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("publish answered %d times, want once", ran)
	}
}

// With no terminal on stdin and no --approve, a call that needs approval
// stops the run instead of waiting for ever: exit 4, run.json waiting with
// the call pending, and the exact fsd approve and fsd resume lines on
// stderr before the one fsd: line. Those lines, typed, finish the run.
func TestApproveNoTerminalStopsThenResume(t *testing.T) {
	t.Parallel()
	if stdinIsTerminal() {
		t.Skip("stdin is a terminal: fsd run would ask there")
	}
	runs := t.TempDir()
	// --approval-timeout only bounds a run that waits instead of stopping.
	code, out, errs := fsd(t, "run", releaseExample, "--runs-dir", runs, "--approval-timeout", "30s")
	if code != exitWaiting {
		t.Fatalf("fsd run with no terminal: exit %d, want %d (stdout %q)\n%s", code, exitWaiting, out, errs)
	}
	entries, err := os.ReadDir(runs)
	if err != nil || len(entries) != 1 {
		t.Fatalf("runs: %v %v", entries, err)
	}
	id := entries[0].Name()
	sum, err := runrecord.ReadSummary(filepath.Join(runs, id))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != runrecord.Waiting || len(sum.Pending) != 1 || sum.Pending[0].Call != "task:ship/s1/c1" {
		t.Fatalf("run.json: status %s, pending %+v", sum.Status, sum.Pending)
	}
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	approveLine := "fsd approve " + id + " task:ship/s1/c1 --runs-dir " + runs
	resumeLine := "fsd resume " + id + " --runs-dir " + runs
	if n := len(lines); n < 3 || lines[n-3] != approveLine || lines[n-2] != resumeLine || !strings.HasPrefix(lines[n-1], "fsd: run stopped: a call waits for approval") {
		t.Fatalf("stderr does not end in the approve and resume lines and the fsd: line:\n%s", errs)
	}
	if code, out, errs := fsd(t, "runs", "--runs-dir", runs); code != exitOK || !strings.Contains(out, "waiting (stopped)") {
		t.Errorf("fsd runs: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := fsd(t, strings.Fields(approveLine)[1:]...); code != exitOK || !strings.Contains(out, "fsd resume "+id) {
		t.Fatalf("%s: exit %d\n%s%s", approveLine, code, out, errs)
	}
	code, out, errs = fsd(t, strings.Fields(resumeLine)[1:]...)
	if code != exitOK || !strings.Contains(out, "published 1.4.0 to stable") {
		t.Fatalf("%s: exit %d\n%s%s", resumeLine, code, out, errs)
	}
	if sum, err := runrecord.ReadSummary(filepath.Join(runs, id)); err != nil || sum.Status != runrecord.Finished || len(sum.Pending) != 0 {
		t.Errorf("run.json after the resume: %+v %v", sum, err)
	}
}

// fsd approve --edit checks the arguments against the tool's input
// schema: arguments the tool would refuse are no answer (exit 1, the
// schema's complaint, the call still waiting).
func TestApproveEditChecksSchema(t *testing.T) {
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("runs fsd as a subprocess")
	}
	t.Parallel()
	proc, id, runs := waitForPending(t)
	code, out, errs := fsd(t, "approve", id, "--runs-dir", runs, "--edit", `{"version": "1.4.0", "channel": "nightly"}`)
	if code != exitProblems || !strings.Contains(errs, "channel") || !strings.Contains(errs, "publish") {
		t.Errorf("fsd approve --edit off the schema: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(runrecord.AnswerPath(filepath.Join(runs, id), "task:ship/s1/c1")); !os.IsNotExist(err) {
		t.Errorf("an answer was written for arguments off the schema (%v)", err)
	}
	if code, out, errs := fsd(t, "approve", id, "--runs-dir", runs, "--edit", `{"version": "1.4.0", "channel": "beta"}`); code != exitOK {
		t.Fatalf("fsd approve --edit within the schema: exit %d\n%s%s", code, out, errs)
	}
	if code := proc.exit(); code != exitOK || !strings.Contains(proc.out.String(), "published 1.4.0 to beta") {
		t.Errorf("the run exited %d:\n%s", code, proc.errb)
	}
}

func TestApproveUsage(t *testing.T) {
	runs := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"approve", "x", "--edit", "{}", "--reject", "no"}, "exclude each other"},
		{[]string{"approve", "x", "--edit", "[1]"}, "JSON object"},
		{[]string{"approve", "x"}, "no run x"},
		{[]string{"run", releaseExample, "--approve", "maybe"}, `unknown --approve "maybe"`},
		{[]string{"run", releaseExample, "--approval-timeout", "-1s"}, "negative"},
	} {
		code, _, errs := fsd(t, append(tc.args, "--runs-dir", runs)...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d: %s", tc.args, code, errs)
		}
	}
}

// The terminal prompt reads approve, edit (with JSON until it parses) and
// reject (with a reason), and asks again after anything else.
func TestAsk(t *testing.T) {
	e := event.Event{Type: event.ApprovalRequested, Run: "r1", Task: "ship", Agent: "release/shipper", Tool: "publish",
		Approval: "task:ship/s1/c1", Args: json.RawMessage(`{"version": "1.4.0"}`)}
	for _, tc := range []struct {
		input, decision, args, reason string
	}{
		{"a\n", runrecord.Approved, "", ""},
		{"what\nyes\n", runrecord.Approved, "", ""},
		{"e\nnot json\n[1]\n{\"version\": \"2.0.0\"}\n", runrecord.Edited, `{"version":"2.0.0"}`, ""},
		{"r\nthe freeze is on\n", runrecord.Rejected, "", "the freeze is on"},
		// The arguments or the reason on the same line.
		{"e {\"version\": \"2.0.1\"}\n", runrecord.Edited, `{"version":"2.0.1"}`, ""},
		{"e [1]\n{\"version\": \"2.0.2\"}\n", runrecord.Edited, `{"version":"2.0.2"}`, ""},
		{"r not on a Friday\n", runrecord.Rejected, "", "not on a Friday"},
	} {
		var out bytes.Buffer
		a, err := ask(bufio.NewReader(strings.NewReader(tc.input)), &out, e)
		if err != nil {
			t.Fatalf("%q: %v", tc.input, err)
		}
		if a.Call != e.Approval || a.Decision != tc.decision || string(a.Args) != tc.args || a.Reason != tc.reason || a.By != "terminal" {
			t.Errorf("%q: answer %+v", tc.input, a)
		}
		if !strings.Contains(out.String(), `task ship (release/shipper) wants to call publish {"version":"1.4.0"}`) {
			t.Errorf("the question:\n%s", out.String())
		}
	}
	// Anything else says how to answer.
	var out bytes.Buffer
	if _, err := ask(bufio.NewReader(strings.NewReader("what now\na\n")), &out, e); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "e {JSON} (or e, then the JSON)") {
		t.Errorf("help for an answer it cannot read:\n%s", out.String())
	}
	if _, err := ask(bufio.NewReader(strings.NewReader("")), &bytes.Buffer{}, e); err == nil {
		t.Error("no error at the end of input")
	}
}
