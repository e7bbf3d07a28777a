package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/fsdrun/fsd/engine"
)

// ptyWait bounds every wait for the chat's output; a wait that runs out
// fails the test with the screen it saw.
const ptyWait = 60 * time.Second

// ptyChat is fsd chat on a pseudo-terminal: the test types into it and
// waits for what it prints.
type ptyChat struct {
	t   *testing.T
	cmd *exec.Cmd
	tty *os.File

	mu      sync.Mutex
	out     bytes.Buffer
	seen    int           // output before this was matched by expect
	changed chan struct{} // a read added output
	closed  chan struct{} // the terminal closed: fsd exited
	exit    chan error    // fsd's exit
}

// startChat starts fsd (the test binary as main) with args on a new
// terminal of 40 rows by 160 columns.
func startChat(t *testing.T, dir string, args ...string) *ptyChat {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FSD_TEST_AS_MAIN=1", "TERM=xterm", "NO_COLOR=1")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	c := &ptyChat{t: t, cmd: cmd, tty: tty, changed: make(chan struct{}, 1), closed: make(chan struct{}), exit: make(chan error, 1)}
	go func() {
		defer close(c.closed)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			c.mu.Lock()
			c.out.Write(buf[:n])
			c.mu.Unlock()
			select {
			case c.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { c.exit <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-c.exit:
		default:
			_ = cmd.Process.Kill()
			<-c.exit
		}
		tty.Close()
	})
	return c
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// screenText is terminal output without escape codes and carriage returns.
func screenText(b []byte) string {
	return strings.ReplaceAll(ansi.ReplaceAllString(string(b), ""), "\r", "")
}

// expect waits until want shows in the output after the last match and
// returns the output up to it. It matches the text as a person reads it,
// escape codes taken out: the board's redraws put them between lines.
func (c *ptyChat) expect(want string) string {
	c.t.Helper()
	deadline := time.NewTimer(ptyWait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		text := screenText(c.out.Bytes())
		rest := text[min(c.seen, len(text)):]
		if i := strings.Index(rest, want); i >= 0 {
			c.seen += i + len(want)
			c.mu.Unlock()
			return rest[:i+len(want)]
		}
		c.mu.Unlock()
		select {
		case <-c.changed:
		case <-c.closed:
			c.mu.Lock()
			text := screenText(c.out.Bytes())
			c.mu.Unlock()
			if !strings.Contains(text[min(c.seen, len(text)):], want) {
				c.t.Fatalf("fsd chat exited before printing %q; it printed since the last match:\n%s", want, rest)
			}
		case <-deadline.C:
			c.t.Fatalf("waited %s for %q; fsd chat printed since the last match:\n%s", ptyWait, want, rest)
		}
	}
}

// typeLine types line and Enter.
func (c *ptyChat) typeLine(line string) {
	c.t.Helper()
	if _, err := c.tty.Write([]byte(line + "\r")); err != nil {
		c.t.Fatal(err)
	}
}

// interrupt types Ctrl-C: the terminal sends SIGINT to fsd.
func (c *ptyChat) interrupt() {
	c.t.Helper()
	if _, err := c.tty.Write([]byte{3}); err != nil {
		c.t.Fatal(err)
	}
}

// wait waits for fsd to exit and returns its exit code.
func (c *ptyChat) wait() int {
	c.t.Helper()
	select {
	case err := <-c.exit:
		c.exit <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			c.t.Fatal(err)
		}
		return 0
	case <-time.After(ptyWait):
		c.t.Fatalf("fsd chat did not exit within %s", ptyWait)
	}
	return -1
}

func skipUnlessPty(t *testing.T) {
	t.Helper()
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("runs fsd as a subprocess on a pseudo-terminal")
	}
}

// sessionWorkflow writes a workflow for a chat session of six turns:
// alpha and beta are read, alpha again; the fourth turn calls alpha's
// hang, which sends its pid through the FIFO fifo and waits; the sixth
// calls beta's ping, which asks for approval, without reading beta.
func sessionWorkflow(t *testing.T, dir string) (wf, fifo string) {
	t.Helper()
	fifo = filepath.Join(dir, "hang.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	skill := func(id, tool, approve, command string) {
		write(t, filepath.Join(dir, "skills", id, id+".skill.yaml"), "id: "+id+"\nname: "+id+"\ndescription: The "+id+
			" skill.\nversion: 1.2.0\ninstructions: Be "+id+".\ntools:\n  - name: "+tool+"\n    description: "+tool+
			".\n    approve: "+approve+"\n    run: {command: [sh, -c, '"+command+"']}\n")
	}
	skill("alpha", "hang", "never", "echo $$ > "+fifo+"; exec sleep 600")
	skill("beta", "ping", "always", "echo pong")
	write(t, filepath.Join(dir, "chat.script.yaml"), `host:
  - say: unused
turns:
  - - call: read_skill
      args: {id: alpha}
    - say: 'Turn one: alpha is read.'
  - - call: read_skill
      args: {id: beta}
    - say: 'Turn two: beta is read.'
  - - call: read_skill
      args: {id: alpha}
    - say: 'Turn three: alpha again.'
  - - call: hang
    - say: never said
  - - say: 'Turn five: after the cancelled one.'
  - - call: ping
    - say: 'Turn six: {{.Last}}'
`)
	write(t, filepath.Join(dir, "chat.workflow.yaml"), "name: chat\nmodel: scripted\nscript: chat.script.yaml\nskills: [./skills]\nsandbox: off\nhost: {prompt: You chat.}\n")
	return "chat.workflow.yaml", fifo
}

// readPID reads the pid the hang tool sends through fifo, waiting at
// most ptyWait.
func readPID(t *testing.T, fifo string) int {
	t.Helper()
	got := make(chan int, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // blocks until the tool opens it
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		got <- pid
	}()
	select {
	case pid := <-got:
		if pid == 0 {
			t.Fatal("the hang tool sent no pid")
		}
		return pid
	case <-time.After(ptyWait):
		t.Fatalf("the hang tool did not start within %s", ptyWait)
	}
	return 0
}

// A chat through a terminal: turns with answers, Ctrl-C in the middle of
// a turn cancels it (its tool's process killed) and the prompt comes
// back, the session goes on; /skills lists the loaded skills least
// recently used first; /context counts the next request; /exit leaves
// saying how to continue, and --session continues with the skills still
// loaded and a call's approval asked in place.
func TestChatSession(t *testing.T) {
	t.Parallel()
	skipUnlessPty(t)
	dir := t.TempDir()
	wf, fifo := sessionWorkflow(t, dir)
	c := startChat(t, dir, "chat", wf, "--session", "s1")
	c.expect("> ")
	for _, turn := range [][2]string{{"one", "Turn one: alpha is read."}, {"two", "Turn two: beta is read."}, {"three", "Turn three: alpha again."}} {
		c.typeLine(turn[0])
		c.expect(turn[1])
		c.expect("> ")
	}
	lru := "loaded skills, least recently used first:\n  beta 1.2.0\n  alpha 1.2.0\n"
	c.typeLine("/skills")
	if got := c.expect("> "); !strings.Contains(got, lru) {
		t.Errorf("/skills printed\n%s\nwant\n%s", got, lru)
	}

	c.typeLine("four")
	pid := readPID(t, fifo)
	c.interrupt()
	c.expect("(turn cancelled)")
	c.expect("> ")
	if err := syscall.Kill(pid, 0); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the hang tool (pid %d) outlived its cancelled turn", pid)
	}
	c.typeLine("five")
	c.expect("Turn five: after the cancelled one.")
	c.expect("> ")
	c.typeLine("/context")
	got := c.expect("> ")
	m := regexp.MustCompile(`next request: (\d+) tokens \(o200k_base\)\n  context block +(\d+)\n  (\d+) messages +(\d+)\n  \d+ tools? +(\d+)\n`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("/context printed\n%s", got)
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	// Five turns and the next message are in the window, and the parts
	// add up to the total.
	if n(3) < 6 || n(2)+n(4)+n(5) != n(1) || n(2) == 0 || n(4) == 0 {
		t.Errorf("/context printed\n%s", got)
	}
	c.typeLine("/exit")
	c.expect("continue this conversation with: fsd chat chat.workflow.yaml --session s1\n")
	if code := c.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}

	// Another process continues the session: the skills are still
	// loaded, beta's tool is called without a read; two Ctrl-C at the
	// prompt leave.
	c = startChat(t, dir, "chat", wf, "--session", "s1")
	c.expect("> ")
	c.typeLine("/skills")
	if got := c.expect("> "); !strings.Contains(got, lru) {
		t.Errorf("/skills after --session printed\n%s\nwant\n%s", got, lru)
	}
	c.typeLine("six")
	c.expect("the host wants to call ping")
	c.expect("[a]pprove, [e]dit arguments, [r]eject? ")
	c.typeLine("a")
	c.expect("Turn six: pong")
	c.expect("> ")
	c.interrupt()
	c.expect("Ctrl-C again")
	c.interrupt()
	c.expect("continue this conversation with: fsd chat chat.workflow.yaml --session s1\n")
	if code := c.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// stallingOpenAI streams each answer of answers (chat completions, SSE)
// in two halves: the first, then, once the test sends on next, the rest.
// It answers on loopback only.
func stallingOpenAI(t *testing.T, answers [][2]string) (url string, next chan<- struct{}) {
	t.Helper()
	release := make(chan struct{})
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		i := n
		n++
		mu.Unlock()
		if i >= len(answers) {
			http.Error(w, `{"error":{"message":"no more answers"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta map[string]any, finish any) {
			b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test",
				"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		chunk(map[string]any{"role": "assistant", "content": answers[i][0]}, nil)
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		chunk(map[string]any{"content": answers[i][1]}, "stop")
		fmt.Fprint(w, "data: [DONE]\n\n")
		w.(http.Flusher).Flush()
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", release
}

// The answer streams to the terminal as it comes: the first half of each
// answer is on screen while the model still holds back the rest.
func TestChatStreamsAnswers(t *testing.T) {
	skipUnlessPty(t)
	url, next := stallingOpenAI(t, [][2]string{{"The first half ", "and the end of one."}, {"Turn two begins ", "and ends."}})
	t.Setenv("OPENAI_API_KEY", "sk-test-chat")
	t.Setenv("OPENAI_BASE_URL", url)
	dir := t.TempDir()
	write(t, filepath.Join(dir, "talk.workflow.yaml"), "name: talk\nmodel: openai/gpt-test\nhost: {prompt: You talk.}\nsandbox: off\n")
	c := startChat(t, dir, "chat", "talk.workflow.yaml")
	c.expect("> ")
	for i, turn := range [][2]string{{"The first half ", "and the end of one."}, {"Turn two begins ", "and ends."}} {
		c.typeLine(fmt.Sprintf("message %d", i+1))
		c.expect(turn[0])
		select {
		case next <- struct{}{}:
		case <-time.After(ptyWait):
			t.Fatalf("turn %d: the model was not waiting to finish its answer", i+1)
		}
		c.expect(turn[1])
		c.expect("> ")
	}
	// Ctrl-D at the prompt leaves too.
	if _, err := c.tty.Write([]byte{4}); err != nil {
		t.Fatal(err)
	}
	c.expect("continue this conversation with: fsd chat talk.workflow.yaml --session ")
	if code := c.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// Without a terminal, fsd chat reads one turn a line and prints each
// answer on stdout — no prompt, no escape codes — so a conversation can
// be scripted; the session's name and how to continue it go to stderr.
func TestChatScripted(t *testing.T) {
	dir := t.TempDir()
	wf, _ := sessionWorkflow(t, dir)
	var out, errb bytes.Buffer
	code := runIO([]string{"chat", filepath.Join(dir, wf), "--session", "piped"}, strings.NewReader("one\ntwo\n\n/skills\n/new\n/skills\n"), &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := "Turn one: alpha is read.\nTurn two: beta is read.\nloaded skills, least recently used first:\n  alpha 1.2.0\n  beta 1.2.0\n" +
		"no skills loaded\n" // /new: a new session
	if out.String() != want {
		t.Errorf("stdout\n%s\nwant\n%s", out.String(), want)
	}
	next := regexp.MustCompile(`(?m)^session (\d{8}-\d{6}-[0-9a-f]{6})$`).FindStringSubmatch(errb.String())
	if !strings.HasPrefix(errb.String(), "session piped\n") || !strings.Contains(errb.String(), "session piped kept: fsd chat ") ||
		next == nil || !strings.HasSuffix(errb.String(), " --session "+next[1]+"\n") {
		t.Errorf("stderr:\n%s", errb.String())
	}
}

// A session another fsd is in a turn of is not chatted with: one line
// naming that process, exit 1.
func TestChatSessionBusy(t *testing.T) {
	dir := t.TempDir()
	wf, _ := sessionWorkflow(t, dir)
	sessions := filepath.Join(dir, "sessions")
	held, err := engine.OpenSession(sessions, "busy")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var out, errb bytes.Buffer
	code := runIO([]string{"chat", filepath.Join(dir, wf), "--session", "busy", "--sessions-dir", sessions}, strings.NewReader("one\n"), &out, &errb)
	want := fmt.Sprintf("fsd: session is busy: session busy is in a turn in another fsd (pid %d)\n", os.Getpid())
	if code != exitProblems || errb.String() != want || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out.String(), errb.String(), want)
	}
}

// A scripted chat goes on after a turn that failed, says why on stderr
// and exits 1 at the end.
func TestChatScriptedFailedTurn(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f.script.yaml"), "turns:\n  - - fail: the provider is down\n  - - say: Back again.\n")
	write(t, filepath.Join(dir, "f.workflow.yaml"), "name: f\nmodel: scripted\nscript: f.script.yaml\nhost: {prompt: You chat.}\n")
	var out, errb bytes.Buffer
	code := runIO([]string{"chat", filepath.Join(dir, "f.workflow.yaml"), "--session", "f"}, strings.NewReader("one\ntwo\n"), &out, &errb)
	if code != exitProblems || out.String() != "Back again.\n" {
		t.Errorf("exit %d, stdout %q; want 1 and the second answer", code, out.String())
	}
	if !strings.Contains(errb.String(), "fsd: turn failed: ") || !strings.Contains(errb.String(), "the provider is down") {
		t.Errorf("stderr:\n%s", errb.String())
	}
}

// A call answered with fsd approve while the chat asks about it: the
// question ends saying so, and the rest of the turn — its answer — shows.
// The question held the screen until the turn ended, so the answer was
// never drawn (nor printed: the screen had had it).
func TestChatApprovalAnsweredElsewhere(t *testing.T) {
	t.Parallel()
	skipUnlessPty(t)
	dir := t.TempDir()
	write(t, filepath.Join(dir, "skills", "beta", "beta.skill.yaml"), "id: beta\nname: beta\ndescription: The beta skill.\nversion: 1.0.0\ninstructions: Be beta.\ntools:\n  - name: ping\n    description: ping.\n    approve: always\n    run: {reply: pong}\n")
	write(t, filepath.Join(dir, "chat.script.yaml"), "host:\n  - call: read_skill\n    args: {id: beta}\n  - call: ping\n  - say: 'Answer: {{.Last}}'\n")
	write(t, filepath.Join(dir, "chat.workflow.yaml"), "name: chat\nmodel: scripted\nscript: chat.script.yaml\nskills: [./skills]\nhost: {prompt: You chat.}\n")
	c := startChat(t, dir, "chat", "chat.workflow.yaml", "--session", "s1")
	c.expect("> ")
	c.typeLine("go")
	c.expect("[a]pprove, [e]dit arguments, [r]eject? ")
	approve, out, errb := fsdProc("approve", "s1")
	approve.Dir = dir
	if err := approve.Run(); err != nil {
		t.Fatalf("fsd approve = %v: %s%s", err, out, errb)
	}
	c.expect("answered elsewhere")
	c.expect("Answer: pong")
	c.expect("> ")
	c.typeLine("/exit")
	if code := c.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
}
