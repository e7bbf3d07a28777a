package natsboard

// End-to-end tests: `fsd worker` and `fsd run`/`fsd resume` as
// subprocesses of the binary built once in TestMain, against NATS servers
// embedded in this test process, on loopback.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/keytest"
	"github.com/fsdrun/fsd/internal/testbin"
	"github.com/fsdrun/fsd/internal/testpar"
)

// fsdBin is the fsd binary under test, built by TestMain.
var fsdBin string

// dockerBuildEnv is the environment examples/nats/Dockerfile builds fsd in.
var dockerBuildEnv = []string{"CGO_ENABLED=0"}

func TestMain(m *testing.M) {
	if url := os.Getenv(floorWorkerEnv); url != "" {
		// A floor worker of BenchmarkFanout, not a test run.
		fmt.Fprintln(os.Stderr, floorWorker(url))
		os.Exit(1)
	}
	flag.Parse()
	// These tests mostly wait — on fsd subprocesses, a server's
	// redelivery, a worker's ack wait — rather than compute.
	testpar.Widen(4)
	// Built as examples/nats/Dockerfile builds the workers' fsd
	// (TestComposeDockerfile holds the two together).
	bin, err := testbin.Build("../cmd/fsd", "fsd", dockerBuildEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fsdBin = bin
	// The run record key and the coordinator's signing key are the test
	// binary's own (keytest), never the user's; the fsd processes the
	// tests start inherit them.
	os.Exit(keytest.Main(m))
}

// proc is a subprocess whose output the test reads as it comes.
type proc struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer // stdout and stderr, merged
	// lines receives stdout lines when the test follows them.
	done chan struct{}
	err  error
}

type syncWriter struct{ p *proc }

func (w syncWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.out.Write(b)
}

// start runs fsd with args in dir. stdout, when not nil, gets stdout
// instead of the merged buffer.
func start(t testing.TB, dir string, stdout *os.File, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(fsdBin, args...), done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), "NO_COLOR=1")
	p.cmd.Stderr = syncWriter{p}
	p.cmd.Stdout = syncWriter{p}
	if stdout != nil {
		p.cmd.Stdout = stdout
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("fsd %s:\n%s", strings.Join(args, " "), p.output())
		}
	})
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// kill ends the process with SIGKILL: no cleanup, as a crash would.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// wait waits for the process to end (bounded) and fails on a non-zero
// exit.
func (p *proc) wait(t testing.TB) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("fsd did not finish:\n%s", p.output())
	}
	if p.err != nil {
		t.Fatalf("fsd: %v\n%s", p.err, p.output())
	}
}

// until polls cond until it holds, for at most a minute: a hang guard,
// not a timing assertion (a cond that itself waits, a request to a server
// that is down, counts against the minute).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// worker starts `fsd worker` against url.
func worker(t testing.TB, url, name string, args ...string) *proc {
	t.Helper()
	base := []string{"worker", "--nats", url, "--name", name, "--ack-wait", "1s", "--cache", t.TempDir(), "-v"}
	return start(t, t.TempDir(), nil, append(base, args...)...)
}

// started counts the tasks workers started, by task id, from their logs.
func started(outs ...string) map[string]int {
	n := map[string]int{}
	for _, line := range strings.Split(strings.Join(outs, "\n"), "\n") {
		if !strings.Contains(line, "task started") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "task="); ok {
				n[id]++
			}
		}
	}
	return n
}

// fanout writes a workflow of n tasks (each sleeping for sleep before it
// answers) joined by one more, and returns its path.
func fanout(t testing.TB, n int, sleep string) string {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "skills", "fan"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "skills", "fan", "fan.skill.yaml"), []byte(`id: fan
name: Fan
description: Answers fan-out tasks; the joiner joins them.
version: 1.0.0
instructions: Answer the task.
agents:
  worker: {description: Answers one task., prompt: Answer., max-steps: 2}
  joiner: {description: Joins the results., prompt: Join., max-steps: 2}
`), 0o644))
	step := "{say: 'done {{.Task.ID}}'}"
	if sleep != "" {
		step = "{sleep: " + sleep + ", say: 'done {{.Task.ID}}'}"
	}
	must(t, os.WriteFile(filepath.Join(dir, "fan.script.yaml"), []byte(`agents:
  worker: [`+step+`]
  joiner: [{say: 'joined {{.Task.ID}}'}]
`), 0o644))
	var b strings.Builder
	fmt.Fprintf(&b, "name: fanout\nmodel: scripted\nscript: fan.script.yaml\nskills: [./skills]\n")
	fmt.Fprintf(&b, "limits: {concurrency: 16, max-pending-tasks: %d, max-total-tasks: %d}\ninput: fan out\ntasks:\n", n+1, n+1)
	var ids []string
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		ids = append(ids, id)
		fmt.Fprintf(&b, "  - {id: %s, assignee: fan/worker, goal: task %d}\n", id, i)
	}
	fmt.Fprintf(&b, "  - {id: join, assignee: fan/joiner, goal: join, deps: [%s]}\n", strings.Join(ids, ", "))
	path := filepath.Join(dir, "fan.workflow.yaml")
	must(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// events reads a run record's events.jsonl.
func events(t *testing.T, runDir string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// onlyRun returns the one run record folder under runs.
func onlyRun(t *testing.T, runs string) string {
	t.Helper()
	ents, err := os.ReadDir(runs)
	if err != nil || len(ents) != 1 {
		t.Fatalf("want one run under %s: %v %v", runs, ents, err)
	}
	return filepath.Join(runs, ents[0].Name())
}

// TestFanoutSameAnswerAsInProcess: a fan-out through NATS to two worker
// processes answers what the in-process board answers, every task ran
// once, and the workers' events are in the coordinator's record.
func TestFanoutSameAnswerAsInProcess(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	wf := fanout(t, 12, "")
	dir := filepath.Dir(wf)
	local := start(t, dir, nil, "run", wf, "--runs-dir", filepath.Join(dir, "local"))
	local.wait(t)

	w1 := worker(t, srv.ClientURL(), "w1")
	w2 := worker(t, srv.ClientURL(), "w2")
	runs := filepath.Join(dir, "runs")
	remote := start(t, dir, nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", runs)
	remote.wait(t)
	if got, want := lastLine(remote.output()), lastLine(local.output()); got != want || !strings.Contains(want, "joined join") {
		t.Errorf("answer through NATS %q, in process %q", got, want)
	}
	counts := started(w1.output(), w2.output())
	if len(counts) != 13 {
		t.Errorf("tasks started on workers: %v; want t0…t11 and join", counts)
	}
	for id, n := range counts {
		if n != 1 {
			t.Errorf("task %s started %d times", id, n)
		}
	}
	// The workers' own events (the model's text) reach the record.
	texts := 0
	for _, e := range events(t, onlyRun(t, runs)) {
		if e["type"] == "text" && e["task"] != nil {
			texts++
		}
	}
	if texts == 0 {
		t.Error("no worker text events in the coordinator's events.jsonl")
	}
	// A remote task's transcript is in the record, as a local one's is.
	show := start(t, dir, nil, "show", runID(onlyRun(t, runs)), "--runs-dir", runs, "--task", "t3")
	show.wait(t)
	if out := show.output(); !strings.Contains(out, "task 3") || !strings.Contains(out, "done t3") || !strings.Contains(out, "ran on a worker") {
		t.Errorf("fsd show --task t3 does not show the worker's transcript:\n%s", out)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

var _ = context.Background

// TestNoPoolTakesTasksWarned: a run whose tasks no worker pool takes
// (the only worker's --agents match none of them, or no worker has
// started) waits on the queue, as it should for workers that start
// later; the coordinator says so once per agent, naming the pools there
// are, instead of showing the task started and nothing more. A worker
// that then starts takes the tasks and the run ends.
func TestNoPoolTakesTasksWarned(t *testing.T) {
	t.Parallel() // it waits on subprocesses and its own server
	srv := runServer(t)
	wf := fanout(t, 2, "")
	dir := filepath.Dir(wf)
	nope := worker(t, srv.ClientURL(), "nope", "--agents", "nope.*")
	until(t, "the worker ready", func() bool { return strings.Contains(nope.output(), "worker ready") })
	run := start(t, dir, nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", filepath.Join(dir, "runs"))
	const warned = "no fsd worker pool takes fan.worker tasks"
	until(t, "the coordinator to say no pool takes the tasks", func() bool { return strings.Contains(run.output(), warned) })
	if !strings.Contains(run.output(), "pools now: nope.*") {
		t.Errorf("the warning does not name the pools there are:\n%s", run.output())
	}
	worker(t, srv.ClientURL(), "fans", "--agents", "fan.*")
	run.wait(t)
	out := run.output()
	if got := lastLine(out); got != "joined join" {
		t.Errorf("answer %q", got)
	}
	if n := strings.Count(out, warned); n != 1 {
		t.Errorf("said %d times, want once per agent:\n%s", n, out)
	}
	if strings.Contains(out, "fan.joiner tasks") {
		t.Errorf("warned about the joiner, which a pool took:\n%s", out)
	}
}

// TestAgentsPartitionWorkers: workers started with disjoint --agents take
// only their agents' tasks; a worker whose pattern overlaps theirs is
// refused at start with a message saying why.
func TestAgentsPartitionWorkers(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	wf := fanout(t, 4, "")
	dir := filepath.Dir(wf)
	workers := worker(t, srv.ClientURL(), "workers", "--agents", "fan.worker")
	joiners := worker(t, srv.ClientURL(), "joiners", "--agents", "fan.joiner")
	until(t, "both workers ready", func() bool {
		return strings.Contains(workers.output(), "worker ready") && strings.Contains(joiners.output(), "worker ready")
	})
	run := start(t, dir, nil, "run", wf, "--nats", srv.ClientURL(), "--runs-dir", filepath.Join(dir, "runs"))
	run.wait(t)
	if got := lastLine(run.output()); got != "joined join" {
		t.Errorf("answer %q", got)
	}
	if got := started(joiners.output()); len(got) != 1 || got["join"] != 1 {
		t.Errorf("the joiners' worker started %v, want only join", got)
	}
	if got := started(workers.output()); len(got) != 4 || got["join"] != 0 {
		t.Errorf("the workers' worker started %v, want t0…t3", got)
	}
	all := start(t, dir, nil, "worker", "--nats", srv.ClientURL(), "--cache", t.TempDir())
	select {
	case <-all.done:
	case <-time.After(time.Minute):
		t.Fatal("a worker with an overlapping --agents was not refused")
	}
	if out := all.output(); all.err == nil || !strings.Contains(out, "must not overlap") {
		t.Errorf("overlapping worker: %v\n%s", all.err, out)
	}
}
