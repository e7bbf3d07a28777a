package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
)

// sessionTool is a command tool: `mark BOX ID` appends FSD_CALL_ID to
// BOX/marks.log; `gate BOX` says it waits (BOX/waiting), then waits,
// bounded, for BOX/open.
const sessionTool = `#!/bin/sh
box=$2
case $1 in
mark) echo "$FSD_CALL_ID" >> "$box/marks.log"; printf 'marked %s' "$3" ;;
gate) : > "$box/waiting"; i=0; while [ ! -e "$box/open" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; printf 'gate passed' ;;
esac
`

// sessionProject writes a workflow whose script plays three turns: turn 1
// reads aa and sets its state and store; turn 2 calls aa's tools without
// reading it, passes a gate, and reads bb, cc and dd (evicting aa); turn 3
// calls aa's tool (unknown now), reads aa again and reads its state and
// store. Every turn marks once.
func sessionProject(t *testing.T) (dir, wf string) {
	t.Helper()
	dir = t.TempDir()
	box := filepath.Join(dir, "box")
	if err := os.MkdirAll(box, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"bb", "cc", "dd"} {
		write(t, filepath.Join(dir, "skills", id, id+".skill.yaml"), fmt.Sprintf("id: %s\nname: Skill %s\ndescription: Does %s things.\nversion: 1.0.0\ninstructions: Do %s things.\n", id, id, id, id))
	}
	aa := filepath.Join(dir, "skills", "aa")
	write(t, filepath.Join(aa, "tool.sh"), sessionTool)
	if err := os.Chmod(filepath.Join(aa, "tool.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	kv := func(name, kind, op string, value bool) string {
		props, req := "{key: {type: string}}", "[key]"
		if value {
			props, req = "{key: {type: string}, value: {type: string}}", "[key, value]"
		}
		return fmt.Sprintf("  - name: %s\n    description: %s %s.\n    input: {type: object, properties: %s, required: %s}\n    run: {%s: %s}\n", name, kind, op, props, req, kind, op)
	}
	write(t, filepath.Join(aa, "aa.skill.yaml"), "id: aa\nname: Skill aa\ndescription: Keeps notes.\nversion: 1.0.0\ninstructions: Keep notes.\ntools:\n"+
		kv("setstate", "state", "set", true)+kv("getstate", "state", "get", false)+kv("setstore", "store", "set", true)+kv("getstore", "store", "get", false)+
		fmt.Sprintf(`  - name: mark
    description: Marks the call.
    input: {type: object, properties: {id: {type: string}}, required: [id]}
    run: {command: [./tool.sh, mark, %q, "{{.id}}"]}
  - name: gate
    description: Waits for the test.
    input: {type: object, properties: {}}
    run: {command: [./tool.sh, gate, %q]}
`, box, box))
	write(t, filepath.Join(dir, "chat.script.yaml"), `turns:
  - - call: read_skill
      args: {id: aa}
    - calls:
        - {call: setstate, args: {key: s, value: per-load}}
        - {call: setstore, args: {key: k, value: kept}}
    - call: mark
      args: {id: one}
    - say: one
  - - calls:
        - {call: getstate, args: {key: s}}
        - {call: getstore, args: {key: k}}
    - call: mark
      args: {id: two}
    - call: gate
    - call: read_skill
      args: {id: bb}
    - call: read_skill
      args: {id: cc}
    - call: read_skill
      args: {id: dd}
    - say: two
  - - call: getstate
      args: {key: s}
    - call: read_skill
      args: {id: aa}
    - calls:
        - {call: getstate, args: {key: s}}
        - {call: getstore, args: {key: k}}
    - call: mark
      args: {id: three}
    - say: three
`)
	wf = filepath.Join(dir, "chat.workflow.yaml")
	write(t, wf, `name: chat
model: scripted
script: chat.script.yaml
skills: [./skills]
sandbox: {write: [./box]}
limits: {max-loaded-skills: 3, max-transcript-messages: 10}
host: {prompt: You chat.}
`)
	return dir, wf
}

// sessionTurnCLI runs one turn in a process of its own.
func sessionTurnCLI(t *testing.T, dir, wf, msg string) {
	t.Helper()
	cmd, out, errb := fsdProc("run", wf, "--session", "s", "--sessions-dir", filepath.Join(dir, "sessions"), msg)
	if err := cmd.Run(); err != nil {
		t.Fatalf("turn %q: %v\n%s%s", msg, err, out, errb)
	}
}

// checkSessionRecord checks what the three turns did, from the record: no
// mark ran twice, each turn's calls answered as the lifecycle says, and
// every request's window starts at a user message within the cap.
func checkSessionRecord(t *testing.T, dir string) {
	t.Helper()
	marks, _ := os.ReadFile(filepath.Join(dir, "box", "marks.log"))
	ids := strings.Fields(string(marks))
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("call %s ran twice: %v", id, ids)
		}
		seen[id] = true
	}
	if len(ids) != 3 {
		t.Errorf("marks = %v, want one a turn", ids)
	}
	rec, err := runrecord.Open(filepath.Join(dir, "sessions", "s"))
	if err != nil {
		t.Fatal(err)
	}
	host := rec.Gens[0]
	var results []string
	for _, m := range host.Messages {
		if m.Role == model.Tool && m.Name != "read_skill" {
			results = append(results, m.Name+"="+m.Text)
		}
	}
	want := []string{
		"setstate=", "setstore=", "mark=marked one",
		"getstate=per-load", "getstore=kept", "mark=marked two", "gate=gate passed",
		"getstate=Unknown tool: getstate", "getstate=", "getstore=kept", "mark=marked three",
	}
	if len(results) != len(want) {
		t.Fatalf("tool results = %q, want %d", results, len(want))
	}
	for i, w := range want {
		name, text, _ := strings.Cut(w, "=")
		got := results[i]
		switch {
		case text == "" && name == "getstate":
			if strings.Contains(got, "per-load") {
				t.Errorf("result %d = %q: aa's per-load state survived its eviction", i, got)
			}
		case !strings.HasPrefix(got, name+"=") || !strings.Contains(got, text):
			t.Errorf("result %d = %q, want %q", i, got, w)
		}
	}
	if len(host.Steps) == 0 {
		t.Fatal("no requests on record")
	}
	for _, st := range host.Steps {
		msgs := st.Request.Messages
		if n := len(msgs); n > 0 && msgs[n-1].Volatile {
			msgs = msgs[:n-1] // the active skill, outside the window's cap (K8)
		}
		if len(msgs) == 0 || msgs[0].Role != model.User || len(msgs) > 10 {
			t.Errorf("step %d (turn %d): the window has %d messages starting with %v; want at most 10 starting at a user message", st.Step, st.Request.Caller.Turn, len(msgs), msgs[0].Role)
		}
	}
}

// Q1, Q2, Q3: three turns in three processes.
func TestSessionTurnsAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir, wf := sessionProject(t)
	write(t, filepath.Join(dir, "box", "open"), "")
	for _, msg := range []string{"first", "second", "third"} {
		sessionTurnCLI(t, dir, wf, msg)
	}
	checkSessionRecord(t, dir)
}

// Q6, Q8: turn 2 killed mid-way (while a command runs), refused a new
// turn until resumed; no completed call runs twice, and each turn's call
// ids are its own.
func TestSessionKillResume(t *testing.T) {
	t.Parallel()
	dir, wf := sessionProject(t)
	sessions := filepath.Join(dir, "sessions")
	sessionTurnCLI(t, dir, wf, "first")
	cmd, _, errb := fsdProc("run", wf, "--session", "s", "--sessions-dir", sessions, "second")
	killAtGate(t, cmd, errb, filepath.Join(dir, "box", "waiting"))
	third, _, thirdErr := fsdProc("run", wf, "--session", "s", "--sessions-dir", sessions, "third")
	if err := third.Run(); exitCode(err) != 1 || !strings.Contains(thirdErr.String(), "interrupted") || !strings.Contains(thirdErr.String(), "fsd resume s") {
		t.Fatalf("a turn after a killed one = %v: %s; want exit 1 saying resume or abandon", err, thirdErr)
	}
	write(t, filepath.Join(dir, "box", "open"), "")
	resume, out, rerr := fsdProc("resume", "s", "--sessions-dir", sessions)
	if err := resume.Run(); err != nil || strings.TrimSpace(out.String()) != "two" {
		t.Fatalf("resume = %v, %q: %s", err, out, rerr)
	}
	sessionTurnCLI(t, dir, wf, "third")
	checkSessionRecord(t, dir)
	marks, _ := os.ReadFile(filepath.Join(dir, "box", "marks.log"))
	if got, want := strings.Fields(string(marks)), []string{"host/s3/c1", "host/t2/s2/c1", "host/t3/s4/c1"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("call ids = %v, want %v", got, want)
	}
}

// fsd sessions lists, shows, refuses and removes; a second writer is
// refused naming the holder's pid (Q4).
func TestSessionsCommands(t *testing.T) {
	t.Parallel()
	dir, wf := sessionProject(t)
	write(t, filepath.Join(dir, "box", "open"), "")
	// The project's own sessions folder, found from the current folder.
	sessions := filepath.Join(dir, ".fsd", "sessions")
	fsd := func(args ...string) (int, string, string) {
		cmd, out, errb := fsdProc(args...)
		cmd.Dir = dir
		err := cmd.Run()
		return exitCode(err), out.String(), errb.String()
	}
	if code, _, errb := fsd("run", wf, "--session", "s", "first"); code != 0 {
		t.Fatalf("turn 1 = %d: %s", code, errb)
	}
	if code, out, errb := fsd("sessions"); code != 0 || !strings.Contains(out, "s ") || !strings.Contains(out, "finished") {
		t.Errorf("fsd sessions = %d: %s%s", code, out, errb)
	}
	if code, out, errb := fsd("sessions", "show", "s"); code != 0 || !strings.Contains(out, "loaded (least recently read first): aa 1.0.0") || !strings.Contains(out, "turn 1  finished") || !strings.Contains(out, "finished  1 turn\n") {
		t.Errorf("fsd sessions show s = %d: %s%s", code, out, errb)
	}
	if code, out, errb := fsd("show", "s"); code != 0 || !strings.Contains(out, "first") {
		t.Errorf("fsd show s (a session by its name) = %d: %s%s", code, out, errb)
	}
	if code, _, errb := fsd("sessions", "abandon", "s"); code != 1 || !strings.Contains(errb, "no interrupted turn") {
		t.Errorf("abandon of a session with no interrupted turn = %d: %s", code, errb)
	}
	if code, _, errb := fsd("run", wf, "--session", "../x", "hi"); code != 2 || !strings.Contains(errb, "bad session name") {
		t.Errorf("a bad session name = %d: %s", code, errb)
	}
	held, err := engine.OpenSession(sessions, "s")
	if err != nil {
		t.Fatal(err)
	}
	code, _, errb := fsd("run", wf, "--session", "s", "second")
	held.Close()
	if want := fmt.Sprintf("pid %d", os.Getpid()); code != 1 || !strings.Contains(errb, "session is busy") || !strings.Contains(errb, want) {
		t.Errorf("a turn while another process holds the session = %d: %s; want exit 1 naming %s", code, errb, want)
	}
	if code, out, _ := fsd("sessions", "prune", "--older-than", "1d"); code != 0 || strings.Contains(out, "removed") {
		t.Errorf("prune of a fresh session = %d: %s", code, out)
	}
	if code, out, errb := fsd("sessions", "rm", "s"); code != 0 || !strings.Contains(out, "removed session s") {
		t.Errorf("fsd sessions rm s = %d: %s%s", code, out, errb)
	}
	if _, err := os.Stat(filepath.Join(sessions, "s")); !os.IsNotExist(err) {
		t.Errorf("the session's folder is still there: %v", err)
	}
}

// fsd resume NAME --runs-dir SESSIONS (the line fsd prints when a turn
// stops for an approval) resumes the session's turn, not the session's
// folder as a plain run: that replayed the whole conversation as one run,
// said it finished and left session.json's turn open.
func TestSessionResumeByRunsDir(t *testing.T) {
	t.Parallel()
	dir, wf := sessionProject(t)
	sessions := filepath.Join(dir, "sessions")
	sessionTurnCLI(t, dir, wf, "first")
	cmd, _, errb := fsdProc("run", wf, "--session", "s", "--sessions-dir", sessions, "second")
	killAtGate(t, cmd, errb, filepath.Join(dir, "box", "waiting"))
	write(t, filepath.Join(dir, "box", "open"), "")
	resume, out, rerr := fsdProc("resume", "s", "--runs-dir", sessions)
	resume.Dir = t.TempDir() // not the project: no .fsd/sessions to find it in
	if err := resume.Run(); err != nil || strings.TrimSpace(out.String()) != "two" {
		t.Fatalf("resume --runs-dir = %v, %q: %s", err, out, rerr)
	}
	s, err := runrecord.ReadSession(filepath.Join(sessions, "s"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Turns) != 2 || s.Turns[1].Status != runrecord.TurnFinished {
		t.Fatalf("session.json after the resume: %+v, want turn 2 finished", s.Turns)
	}
	sessionTurnCLI(t, dir, wf, "third")
	checkSessionRecord(t, dir)
}

// --session "" (a script's unset $NAME) is a bad session name, as any
// other: it ran a one-turn conversation instead, so the turn went into no
// session and the next one remembered none of it.
func TestSessionEmptyName(t *testing.T) {
	t.Parallel()
	dir, wf := sessionProject(t)
	cmd, out, errb := fsdProc("run", wf, "--session", "", "--sessions-dir", filepath.Join(dir, "sessions"), "hi")
	if err := cmd.Run(); exitCode(err) != 2 || !strings.Contains(errb.String(), "bad session name") {
		t.Fatalf("fsd run --session '' = %v: %s%s; want exit 2, a bad session name", err, out, errb)
	}
	cmd, out, errb = fsdProc("chat", wf, "--session", "", "--sessions-dir", filepath.Join(dir, "sessions"))
	cmd.Stdin = strings.NewReader("hi\n")
	if err := cmd.Run(); exitCode(err) != 2 || !strings.Contains(errb.String(), "bad session name") {
		t.Fatalf("fsd chat --session '' = %v: %s%s; want exit 2, a bad session name", err, out, errb)
	}
}

// A session's name names the session in fsd show, approve and report
// even when a run's id contains it: the run was taken, so fsd approve
// NAME CALL, as the docs spell it, answered another run's call.
func TestSessionNameBeforeRunIDPart(t *testing.T) {
	t.Parallel()
	dir, wf := sessionProject(t)
	write(t, filepath.Join(dir, "box", "open"), "")
	fsd := func(args ...string) (int, string, string) {
		cmd, out, errb := fsdProc(args...)
		cmd.Dir = dir
		err := cmd.Run()
		return exitCode(err), out.String(), errb.String()
	}
	fsd("run", wf) // a plain run (its script has no host: steps; its record is what counts)
	runs, err := os.ReadDir(filepath.Join(dir, ".fsd", "runs"))
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs = %v, %v", runs, err)
	}
	id := runs[0].Name()
	name := id[len(id)-6:]
	if code, _, errb := fsd("run", wf, "--session", name, "first"); code != 0 {
		t.Fatalf("turn 1 = %d: %s", code, errb)
	}
	if code, out, errb := fsd("show", name, "--format", "json"); code != 0 || !strings.Contains(out, `"first"`) {
		t.Errorf("fsd show %s (a session; run %s contains its name) = %d: %s%s", name, id, code, out, errb)
	}
	if code, out, errb := fsd("show", id[len(id)-7:]); code != 0 || !strings.Contains(out, id) {
		t.Errorf("fsd show of part of run %s = %d: %s%s", id, code, out, errb)
	}
}

// fsd sessions rm removes a session whose session.json is damaged (fsd
// sessions names it damaged; rm is the way out), and still never one in
// a turn: rm opened the session, so it refused the damaged one.
func TestSessionsRmDamaged(t *testing.T) {
	t.Parallel()
	dir, wf := sessionProject(t)
	write(t, filepath.Join(dir, "box", "open"), "")
	sessions := filepath.Join(dir, "sessions")
	sessionTurnCLI(t, dir, wf, "first")
	write(t, filepath.Join(sessions, "s", runrecord.SessionFile), "{bad")
	held, err := os.Open(filepath.Join(sessions, "s", runrecord.SessionLockFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	cmd, _, errb := fsdProc("sessions", "rm", "s", "--sessions-dir", sessions)
	if err := cmd.Run(); exitCode(err) != 1 || !strings.Contains(errb.String(), "session is busy") {
		t.Errorf("rm of a session in a turn = %v: %s; want exit 1, busy", err, errb)
	}
	held.Close()
	cmd, out, errb := fsdProc("sessions", "rm", "s", "--sessions-dir", sessions)
	if err := cmd.Run(); err != nil || !strings.Contains(out.String(), "removed session s") {
		t.Fatalf("rm of a session whose session.json is damaged = %v: %s%s", err, out, errb)
	}
	if _, err := os.Stat(filepath.Join(sessions, "s")); !os.IsNotExist(err) {
		t.Errorf("the session's folder is still there: %v", err)
	}
}

// fsd sessions show to a terminal shows a turn's message with its control
// characters in caret notation, as fsd show does (S9): a message with an
// escape sequence set the terminal's title or cleared it.
func TestSessionsShowControlCharacters(t *testing.T) {
	t.Parallel()
	skipUnlessPty(t)
	dir, wf := sessionProject(t)
	write(t, filepath.Join(dir, "box", "open"), "")
	sessions := filepath.Join(dir, "sessions")
	sessionTurnCLI(t, dir, wf, "hi \x1b]0;pwned\x07 \x1b[2J there")
	for _, args := range [][]string{{"sessions", "show", "s"}, {"sessions"}} {
		cmd := exec.Command(os.Args[0], append(args, "--sessions-dir", sessions)...)
		cmd.Env = append(os.Environ(), "FSD_TEST_AS_MAIN=1", "TERM=xterm", "NO_COLOR=1")
		tty, err := pty.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(tty) // until fsd exits (EIO)
		_ = cmd.Wait()
		tty.Close()
		if got := string(out); strings.ContainsRune(got, 0x1b) || strings.ContainsRune(got, 0x07) {
			t.Errorf("fsd %s to a terminal wrote control characters: %q", strings.Join(args, " "), got)
		}
	}
	// A pipe gets the bytes as recorded, as from fsd show.
	cmd, out, errb := fsdProc("sessions", "show", "s", "--sessions-dir", sessions)
	if err := cmd.Run(); err != nil || !strings.Contains(out.String(), "hi \x1b]0;pwned\x07 \x1b[2J there") {
		t.Errorf("fsd sessions show through a pipe = %v: %q%s", err, out, errb)
	}
}

// A turn stopped for an approval and then abandoned has no call waiting:
// fsd approve refuses, naming the abandoned turn, and fsd sessions says
// abandoned. Its run.json still listed the call, so fsd approve took an
// answer and said fsd resume would take it, which refuses (no
// interrupted turn), and the session showed as waiting.
func TestSessionAbandonedTurnNotWaiting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "skills", "beta", "beta.skill.yaml"), "id: beta\nname: beta\ndescription: The beta skill.\nversion: 1.0.0\ninstructions: Be beta.\ntools:\n  - name: ping\n    description: ping.\n    approve: always\n    run: {reply: pong}\n")
	write(t, filepath.Join(dir, "chat.script.yaml"), "host:\n  - call: read_skill\n    args: {id: beta}\n  - call: ping\n  - say: 'Answer: {{.Last}}'\n")
	wf := filepath.Join(dir, "chat.workflow.yaml")
	write(t, wf, "name: chat\nmodel: scripted\nscript: chat.script.yaml\nskills: [./skills]\nhost: {prompt: You chat.}\n")
	sessions := filepath.Join(dir, "sessions")
	fsd := func(args ...string) (int, string, string) {
		cmd, out, errb := fsdProc(append(args, "--sessions-dir", sessions)...)
		err := cmd.Run()
		return exitCode(err), out.String(), errb.String()
	}
	if code, _, errb := fsd("run", wf, "--session", "s", "go"); code != 4 {
		t.Fatalf("a turn stopped for an approval = %d: %s", code, errb)
	}
	if code, _, errb := fsd("sessions", "abandon", "s"); code != 0 {
		t.Fatalf("abandon = %d: %s", code, errb)
	}
	if code, out, errb := fsd("sessions", "show", "s"); code != 0 || !strings.Contains(out, "session s  abandoned") {
		t.Errorf("fsd sessions show after abandon = %d: %s%s", code, out, errb)
	}
	cmd, out, errb := fsdProc("approve", "s", "--runs-dir", sessions)
	if err := cmd.Run(); exitCode(err) != 1 || !strings.Contains(errb.String(), "abandoned") {
		t.Errorf("fsd approve of an abandoned turn's call = %v: %s%s; want exit 1 saying it was abandoned", err, out, errb)
	}
}

// killAtGate starts cmd, a turn whose tool waits at a gate, kills it
// once the gate's waiting file is there, and waits for it to end.
func killAtGate(t *testing.T, cmd *exec.Cmd, errb fmt.Stringer, waiting string) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for range 3000 {
		if _, err := os.Stat(waiting); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("turn 2 ended before its gate: %v\n%s", err, errb)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
}
