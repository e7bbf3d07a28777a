package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/internal/syncbuf"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/natsboard"
)

// natsServer starts an embedded NATS server on loopback, with or without
// JetStream.
func natsServer(t *testing.T, jetStream bool) *server.Server {
	t.Helper()
	return natsServerWith(t, server.Options{JetStream: jetStream})
}

// natsServerWith starts an embedded NATS server on loopback with o
// (credentials, JetStream), on o.Port or a free port, and its own store
// folder.
func natsServerWith(t *testing.T, o server.Options) *server.Server {
	t.Helper()
	if o.Port == 0 {
		o.Port = -1
	}
	o.Host, o.StoreDir, o.NoLog, o.NoSigs = "127.0.0.1", t.TempDir(), true, true
	s, err := server.NewServer(&o)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		t.Fatal("embedded NATS server did not start")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// What a new user meets starting fsd worker against the wrong thing: one
// line on stderr and a documented exit code, never a hang or a stack.
func TestWorkerStartProblems(t *testing.T) {
	t.Parallel()
	plain := natsServer(t, false)
	js := natsServer(t, true)
	// Another pool already takes weekly-report's agents, and serves them
	// (a stopped pool's queue would be removed, natsboard.TestOverlappingPools).
	w, err := natsboard.NewWorker(context.Background(), js.ClientURL(), natsboard.WorkerOptions{Work: engine.Work,
		Agents: "weekly-report.*", CacheDir: t.TempDir(), Logger: zerolog.Nop(),
		Model: func(string, string) (model.Model, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { _ = w.Run(wctx); close(served) }()
	defer func() { stop(); <-served; w.Close() }()
	missing := filepath.Join(t.TempDir(), "nope")
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	notNATS := strings.Replace(web.URL, "http://", "nats://", 1)
	// The cases run at once (a few wait out a client's timeout), and all
	// have ended when this group returns and the servers stop.
	t.Run("each", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			args []string
			code int
			want string
		}{
			{"http url", []string{"worker", "--nats", web.URL}, exitUsage, "want nats://HOST:PORT (or tls://, ws://, wss://), not http://"},
			{"bad port", []string{"worker", "--nats", "nats://127.0.0.1:bad"}, exitUsage, `invalid port ":bad"`},
			{"agents matching no task", []string{"worker", "--nats", js.ClientURL(), "--agents", "weekly-report"}, exitUsage, `--agents "weekly-report" matches no task: a task's subject is SKILL.AGENT; did you mean 'weekly-report.*'?`},
			{"agents not a pattern", []string{"worker", "--nats", js.ClientURL(), "--agents", "a..b"}, exitUsage, `--agents "a..b": want a subject pattern`},
			{"port out of range", []string{"worker", "--nats", "nats://fsd:s3cret@127.0.0.1:99999"}, exitUsage, "--nats nats://REDACTED@127.0.0.1:99999: port 99999 is out of range (1-65535)"},
			{"run port out of range", []string{"run", "../../examples/pipeline.workflow.yaml", "--nats", "nats://127.0.0.1:0", "--runs-dir", t.TempDir()}, exitUsage, "port 0 is out of range"},
			{"run http url", []string{"run", "../../examples/pipeline.workflow.yaml", "--nats", web.URL, "--runs-dir", t.TempDir()}, exitUsage, "--nats " + web.URL},
			{"not a nats server", []string{"worker", "--nats", notNATS}, exitProblems, "no NATS greeting from the server there"},
			{"run: no server, credentials hidden", []string{"run", "../../examples/pipeline.workflow.yaml", "--nats", "nats://fsd:s3cret@127.0.0.1:1", "--runs-dir", t.TempDir()}, exitProblems, "nats nats://REDACTED@127.0.0.1:1: nats: no servers available for connection (is a NATS server running there?"},
			{"no jetstream", []string{"worker", "--nats", plain.ClientURL()}, exitProblems, "the server does not have JetStream enabled: start it with nats-server -js"},
			{"overlapping agents", []string{"worker", "--nats", js.ClientURL(), "--agents", ">"}, exitProblems, "must not overlap"},
			{"trust missing", []string{"worker", "--nats", js.ClientURL(), "--trust", missing}, exitUsage, "--trust " + missing},
			{"trust a file", []string{"worker", "--nats", js.ClientURL(), "--trust", "worker_nats_test.go"}, exitUsage, "--trust"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				args := tc.args
				if args[0] == "worker" {
					args = append(args, "--cache", t.TempDir())
				}
				code, _, errs := fsd(t, args...)
				if code != tc.code || !strings.Contains(errs, tc.want) {
					t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errs, tc.code, tc.want)
				}
				if strings.Count(strings.TrimSpace(errs), "\n") != 0 {
					t.Errorf("stderr is not one line: %q", errs)
				}
				if strings.Contains(errs, "s3cret") {
					t.Errorf("stderr shows the URL's password: %q", errs)
				}
			})
		}
	})
}

// SIGTERM (or Ctrl-C) stops a worker in the middle of a task: the task
// goes back to the queue at once (not one ack wait later: the wait here is
// ten minutes), another worker finishes it, and the stopped worker exits
// 0 saying what it handed back. The stopped worker has idle slots waiting
// on the queue: they must not take the task handed back (each taking
// counted a delivery, so four idle slots took it up to the redelivery
// bound and the task failed).
func TestWorkerSIGTERMHandsTasksBack(t *testing.T) {
	t.Parallel()
	srv := natsServer(t, true)
	dir := t.TempDir()
	wf := sleeperWorkflow(t, dir, "2s")

	worker := func(name, concurrency string) (*syncbuf.Buffer, func() int) {
		return workerProc(t, nil, "--nats", srv.ClientURL(), "--name", name, "--concurrency", concurrency, "--ack-wait", "10m", "-v")
	}
	a, stopA := worker("wa", "4")
	run, out, runErr := fsdProc("run", wf, "--nats", srv.ClientURL(), "--runs-dir", filepath.Join(dir, "runs"))
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer run.Process.Kill()
	for i := 0; !strings.Contains(a.String(), "task started"); i++ {
		if i == 1200 {
			t.Fatalf("worker wa never started the task:\n%s", a.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := stopA(); code != exitOK {
		t.Errorf("worker stopped by SIGTERM: exit %d, want 0:\n%s", code, a.String())
	}
	if got, want := lastLine(a.String()), "1 task handed back"; !strings.Contains(got, want) {
		t.Errorf("stopped worker's last line %q, want it to say the task was %s", got, want)
	}
	b, stopB := worker("wb", "1")
	defer stopB()
	runDone := make(chan error, 1)
	go func() { runDone <- run.Wait() }()
	select {
	case err := <-runDone:
		if err != nil || strings.TrimSpace(out.String()) != "slept s" {
			t.Errorf("run: %v, answer %q\n%s\nworker wb:\n%s", err, out.String(), runErr.String(), b.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the task handed back was not run by worker wb within two minutes (ack wait 10m):\n%s", b.String())
	}
}

// sleeperWorkflow writes a pipeline of one task that sleeps for sleep (a
// duration such as 2s, for a test that stops a worker while the task
// runs; or "" for one that only needs the task done), then answers
// "slept s".
func sleeperWorkflow(t *testing.T, dir, sleep string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "skills", "slow"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "skills", "slow", "slow.skill.yaml"), `id: slow
name: Slow
description: Answers slowly.
version: 1.0.0
instructions: Answer.
agents:
  sleeper: {description: Sleeps then answers., prompt: Answer.}
`)
	step := "say: 'slept {{.Task.ID}}'"
	if sleep != "" {
		step = "sleep: " + sleep + ", " + step
	}
	write(t, filepath.Join(dir, "slow.script.yaml"), "agents:\n  sleeper: [{"+step+"}]\n")
	wf := filepath.Join(dir, "slow.workflow.yaml")
	write(t, wf, "name: slow\nmodel: scripted\nscript: slow.script.yaml\nskills: [./skills]\ninput: go\ntasks:\n  - {id: s, assignee: slow/sleeper, goal: sleep}\n")

	return wf
}

// A run whose NATS URL carries a user and password keeps the URL
// without them: no file of its record holds the password, whether the URL
// came with --nats or in the workflow's board.nats (whose copies in the
// record, workflow.yaml and resolved.json, held it). fsd resume of a
// --nats run then asks for --nats again (exit 2) instead of running in
// process the tasks workers may still be running.
func TestResumeAsksForNATSCredentials(t *testing.T) {
	t.Parallel()
	s := natsServerWith(t, server.Options{JetStream: true, Username: "fsd", Password: "s3cret"})
	url := strings.Replace(s.ClientURL(), "nats://", "nats://fsd:s3cret@", 1)
	for _, board := range []bool{false, true} {
		t.Run(map[bool]string{false: "--nats", true: "board.nats"}[board], func(t *testing.T) {
			dir := t.TempDir()
			wf := sleeperWorkflow(t, dir, "")
			args := []string{"run", wf, "--nats", url}
			if board {
				data := readAll(t, wf)
				write(t, wf, string(data)+"board:\n  nats: \""+url+"\"\n")
				args = args[:2]
			}
			runs := filepath.Join(dir, "runs")
			// No worker: the task waits in the queue until the run is stopped.
			run, _, errb := fsdProc(append(args, "--runs-dir", runs)...)
			if err := run.Start(); err != nil {
				t.Fatal(err)
			}
			var id string
			for i := 0; id == ""; i++ {
				if i == 1200 {
					run.Process.Kill()
					t.Fatal("no run record")
				}
				time.Sleep(50 * time.Millisecond)
				if ents, _ := os.ReadDir(runs); len(ents) == 1 {
					if _, err := os.Stat(filepath.Join(runs, ents[0].Name(), "run.json")); err == nil {
						id = ents[0].Name()
					}
				}
			}
			_ = run.Process.Signal(syscall.SIGTERM)
			if code := exitCode(run.Wait()); code != 143 {
				t.Fatalf("run stopped by SIGTERM: exit %d\n%s", code, errb.String())
			}
			if strings.Contains(errb.String(), "s3cret") {
				t.Errorf("stderr shows the password: %s", errb.String())
			}
			ents, err := os.ReadDir(filepath.Join(runs, id))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if e.IsDir() {
					continue // the run's workspace
				}
				if data := readAll(t, filepath.Join(runs, id, e.Name())); strings.Contains(string(data), "s3cret") {
					t.Errorf("the record's %s holds the password:\n%s", e.Name(), data)
				}
			}
			if board {
				if record := string(readAll(t, filepath.Join(runs, id, "resolved.json"))); !strings.Contains(record, "nats://REDACTED@127.0.0.1") {
					t.Errorf("resolved.json keeps board.nats as %s", record)
				}
				return
			}
			if record := string(readAll(t, filepath.Join(runs, id, "run.json"))); !strings.Contains(record, "nats://REDACTED@127.0.0.1") {
				t.Errorf("run.json keeps the NATS URL as %s", record)
			}
			code, _, errs := fsd(t, "resume", id, "--runs-dir", runs)
			if code != exitUsage || !strings.Contains(errs, "give --nats URL again") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("resume without --nats: exit %d, stderr %q; want exit 2 asking for --nats", code, errs)
			}
		})
	}
}

// A --trust folder that holds no skill (a typo, the wrong level) is said
// at start: the worker runs, but would refuse every command tool.
func TestWorkerTrustWithoutSkillsWarned(t *testing.T) {
	t.Parallel()
	srv := natsServer(t, true)
	empty := t.TempDir()
	cmd, _, _ := fsdProc("worker", "--nats", srv.ClientURL(), "--trust", empty, "--trust", "../../examples/skills", "--cache", t.TempDir())
	cmd.Env = append(cmd.Env, "NO_COLOR=1")
	out := &syncbuf.Buffer{}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for i := 0; !strings.Contains(out.String(), "worker ready"); i++ {
		if i == 1200 {
			t.Fatalf("the worker did not start:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if want := "--trust " + empty + " holds no skill"; !strings.Contains(out.String(), want) || strings.Count(out.String(), "holds no skill") != 1 {
		t.Errorf("want one warning %q:\n%s", want, out.String())
	}
}
