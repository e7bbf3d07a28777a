package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/syncbuf"
	"github.com/fsdrun/fsd/internal/testlong"
)

// serveProject writes a chat workflow whose host, on the scripted model,
// reads skill aa, marks "one", passes a gate (BOX/waiting, then waits
// for BOX/open), marks "two" and answers.
func serveProject(t *testing.T) (dir, wf string) {
	t.Helper()
	dir = t.TempDir()
	box := filepath.Join(dir, "box")
	if err := os.MkdirAll(box, 0o755); err != nil {
		t.Fatal(err)
	}
	aa := filepath.Join(dir, "skills", "aa")
	write(t, filepath.Join(aa, "tool.sh"), sessionTool)
	if err := os.Chmod(filepath.Join(aa, "tool.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(aa, "aa.skill.yaml"), fmt.Sprintf(`id: aa
name: Skill aa
description: Marks and waits.
version: 1.0.0
instructions: Mark things.
tools:
  - name: mark
    description: Marks the call.
    input: {type: object, properties: {id: {type: string}}, required: [id]}
    run: {command: [./tool.sh, mark, %q, "{{.id}}"]}
  - name: gate
    description: Waits for the test.
    input: {type: object, properties: {}}
    run: {command: [./tool.sh, gate, %q]}
`, box, box))
	write(t, filepath.Join(dir, "chat.script.yaml"), `host:
  - call: read_skill
    args: {id: aa}
  - call: mark
    args: {id: one}
  - call: gate
  - call: mark
    args: {id: two}
  - say: done
`)
	wf = filepath.Join(dir, "chat.workflow.yaml")
	write(t, wf, "name: chat\nmodel: scripted\nscript: chat.script.yaml\nskills: [./skills]\nsandbox: {write: [./box]}\nhost: {prompt: You chat.}\n")
	return dir, wf
}

// Y6: fsd serve's guard: a foreign Host or Origin gets 403, a request
// without the token 401, a body over --max-body 413; an address beyond
// loopback without --token-file is refused before anything listens.
func TestServeGuard(t *testing.T) {
	dir, wf := serveProject(t)
	tokenFile := filepath.Join(dir, "token")
	write(t, tokenFile, "s3cret\n")
	out := newAnnounced()
	var stderr syncbuf.Buffer
	f := serveFlags{addr: "127.0.0.1:0", tokenFile: tokenFile, maxBody: 64}
	u := serving(t, out, func(ctx context.Context) error {
		return serveWorkflow(ctx, wf, f, nil, out, &stderr)
	})
	api := u.JoinPath("sessions").String()
	for _, tc := range []struct {
		name, host, origin, token, body string
		want                            int
	}{
		{"the token", "", "", "s3cret", "", http.StatusOK},
		{"no token", "", "", "", "", http.StatusUnauthorized},
		{"another token", "", "", "s3cre", "", http.StatusUnauthorized},
		{"foreign Host", "evil.example:" + u.Port(), "", "s3cret", "", http.StatusForbidden},
		{"foreign Origin", "", "http://evil.example", "s3cret", "", http.StatusForbidden},
		{"own Origin", "", "http://localhost:" + u.Port(), "s3cret", "", http.StatusOK},
		{"a body under the cap", "", "", "s3cret", `{"id":"small"}`, http.StatusCreated},
		{"a body over the cap", "", "", "s3cret", `{"id":"big","message":"` + strings.Repeat("x", 64) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		method := "GET"
		var body io.Reader
		if tc.body != "" {
			method, body = "POST", strings.NewReader(tc.body)
		}
		r, _ := http.NewRequest(method, api, body)
		if tc.host != "" {
			r.Host = tc.host
		}
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		if got := status(t, r); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
	err := serveWorkflow(context.Background(), wf, serveFlags{addr: "0.0.0.0:0", maxBody: 64}, nil, io.Discard, io.Discard)
	if err == nil || exitCodeOf(err) != exitUsage || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("0.0.0.0 without a token: %v, want a usage error naming --token-file", err)
	}
}

// exitCodeOf is the exit code fail gave err.
func exitCodeOf(err error) int {
	var ce *exitError
	if errors.As(err, &ce) {
		return ce.code
	}
	return -1
}

var servingURL = regexp.MustCompile(`http://[^\s/]+/`)

// serveProc starts fsd serve as a process and returns its URL.
func serveProc(t *testing.T, wf string) (*exec.Cmd, *url.URL) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", wf, "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "FSD_TEST_AS_MAIN=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("fsd serve said nothing: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	u, err := url.Parse(servingURL.FindString(line))
	if err != nil || u.Host == "" {
		t.Fatalf("no URL in %q", line)
	}
	return cmd, u
}

// waitFile waits, bounded, for path to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; i < 1200; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

// sseIDs reads a session's stream after id after (-1: from its start)
// and returns each event as "ID:NAME", up to its end event or to the
// first event until accepts.
func sseIDs(t *testing.T, u *url.URL, session string, after int, until func(name string) bool) []string {
	t.Helper()
	req, _ := http.NewRequest("GET", u.JoinPath("sessions", session, "events").String(), nil)
	if after >= 0 {
		req.Header.Set("Last-Event-ID", fmt.Sprint(after))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	var id string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case line == "event: end":
			return out
		case strings.HasPrefix(line, "event: "):
			out = append(out, id+":"+line[7:])
			if until != nil && until(line[7:]) {
				return out
			}
		}
	}
	t.Fatalf("the stream ended without its end event: %v", out)
	return nil
}

// Y7: fsd serve killed with -9 mid-turn and started again resumes the
// turn: it completes, the call completed before the kill is not run
// again, and a client that reconnects with the last id it got reads the
// rest of the turn, nothing twice.
func TestServeKilledMidTurnResumes(t *testing.T) {
	testlong.Skip(t)
	dir, wf := serveProject(t)
	box := filepath.Join(dir, "box")
	srv, u := serveProc(t, wf)
	resp, err := http.Post(u.JoinPath("sessions").String(), "application/json", strings.NewReader(`{"id":"k","message":"go"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %s", resp.Status)
	}
	waitFile(t, filepath.Join(box, "waiting"))
	// What the client got before the kill: the record up to the gate,
	// read as a client that reconnects would have.
	calls := 0
	before := sseIDs(t, u, "k", -1, func(name string) bool {
		if name == "tool.call" {
			calls++
		}
		return calls == 3 // read_skill, mark, gate
	})
	if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = srv.Wait()
	write(t, filepath.Join(box, "open"), "")
	_, u2 := serveProc(t, wf)
	last := atoiID(t, before[len(before)-1])
	after := sseIDs(t, u2, "k", last, nil)
	all := append(before, after...)
	for i, e := range all {
		if !strings.HasPrefix(e, fmt.Sprint(i+1)+":") {
			t.Fatalf("event %d is %s: lost or repeated across the restart (%v)", i+1, e, all)
		}
	}
	if !strings.HasSuffix(all[len(all)-1], ":run.finished") {
		t.Errorf("the resumed turn did not finish: %v", all)
	}
	marks, _ := os.ReadFile(filepath.Join(box, "marks.log"))
	if got := strings.Fields(string(marks)); len(got) != 2 {
		t.Errorf("marks.log = %q: want each mark once (one before the kill, two after)", marks)
	}
}

func atoiID(t *testing.T, e string) int {
	var n int
	if _, err := fmt.Sscan(strings.SplitN(e, ":", 2)[0], &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Y9: fsd serve serves the web view's pages from the same server and
// package as fsd ui, over the sessions, with a chat box on a session's
// page that fsd ui's pages lack.
func TestServeWebViewHasChat(t *testing.T) {
	t.Parallel()
	dir, wf := serveProject(t)
	write(t, filepath.Join(dir, "box", "open"), "") // the gate lets the turn through
	out := newAnnounced()
	var stderr syncbuf.Buffer
	u := serving(t, out, func(ctx context.Context) error {
		return serveWorkflow(ctx, wf, serveFlags{addr: "127.0.0.1:0", maxBody: 1 << 20}, nil, out, &stderr)
	})
	resp, err := http.Post(u.JoinPath("sessions").String(), "application/json", strings.NewReader(`{"id":"web","message":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sseIDs(t, u, "web", -1, nil) // to the turn's end
	get := func(path string) string {
		resp, err := http.Get(u.JoinPath(path).String())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return string(b)
	}
	if page := get("/"); !strings.Contains(page, `data-kind="runs"`) {
		t.Errorf("/ is not the web view's list:\n%s", page)
	}
	if page := get("/run/web"); !strings.Contains(page, `id="chat"`) || !strings.Contains(page, `data-chat="1"`) {
		t.Errorf("a session's page has no chat box:\n%s", page)
	}
	if js := get("/assets/app.js"); !strings.Contains(js, "/messages`") {
		t.Error("the page's script does not post messages")
	}
}
