package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/natsboard"
)

// A NATS password is a secret like a model key: a connection refused for
// a wrong one is one line on stderr that does not show it (the run record
// side: TestResumeAsksForNATSCredentials).
func TestNATSPasswordNotPrinted(t *testing.T) {
	const pw = "pw-9f3c-never-shown"
	s := natsServerWith(t, server.Options{JetStream: true, Username: "fsd", Password: pw})
	port := s.Addr().(*net.TCPAddr).Port
	wrong := fmt.Sprintf("nats://fsd:%s-wrong@127.0.0.1:%d", pw, port)

	dir := t.TempDir()
	wf := sleeperWorkflow(t, dir, "")
	runs := filepath.Join(dir, "runs")

	for _, args := range [][]string{
		{"run", wf, "--nats", wrong, "--runs-dir", runs},
		{"worker", "--nats", wrong, "--cache", t.TempDir()},
	} {
		code, _, errs := fsd(t, args...)
		if code != exitProblems || !strings.Contains(errs, "Authorization Violation") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("fsd %s with a wrong password: exit %d, stderr %q; want exit 1 and one line", args[0], code, errs)
		}
		if strings.Contains(errs, pw) {
			t.Errorf("fsd %s printed the password: %q", args[0], errs)
		}
	}
}

// With --nats the board's tasks call their models on the workers, with
// the workers' keys: the coordinator of a workflow without a host needs
// none (it used to refuse to start without ANTHROPIC_API_KEY, which it
// never used); one with a host still needs the host's.
func TestNATSCoordinatorNeedsNoAgentKeys(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	srv := natsServer(t, true)
	w, err := natsboard.NewWorker(context.Background(), srv.ClientURL(), natsboard.WorkerOptions{Work: engine.Work,
		CacheDir: t.TempDir(), Logger: zerolog.Nop(),
		Model: func(name, _ string) (model.Model, error) {
			return model.Func(func(context.Context, *model.Request) (*model.Response, error) {
				return &model.Response{Text: "answered by " + name + " on the worker"}, nil
			}), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { _ = w.Run(wctx); close(served) }()
	defer func() { stop(); <-served; w.Close() }()

	dir := t.TempDir()
	write(t, filepath.Join(dir, "skills", "s", "s.skill.yaml"), "id: s\nname: S\ndescription: Answers.\nversion: 1.0.0\ninstructions: Answer.\nagents:\n  a: {description: Answers., prompt: Answer.}\n")
	pipeline := filepath.Join(dir, "p.workflow.yaml")
	write(t, pipeline, "name: p\nmodel: anthropic/claude-sonnet-4-5\nskills: [./skills]\ninput: go\ntasks:\n  - {id: t1, assignee: s/a, goal: answer}\n")
	code, out, errs := fsd(t, "run", pipeline, "--nats", srv.ClientURL(), "--runs-dir", filepath.Join(dir, "runs"))
	if code != exitOK || strings.TrimSpace(out) != "answered by anthropic/claude-sonnet-4-5 on the worker" {
		t.Errorf("pipeline through NATS without a key here: exit %d, answer %q\n%s", code, out, errs)
	}

	host := filepath.Join(dir, "h.workflow.yaml")
	write(t, host, "name: h\nmodel: anthropic/claude-sonnet-4-5\nskills: [./skills]\ninput: go\nhost: {prompt: Delegate.}\n")
	code, _, errs = fsd(t, "run", host, "--nats", srv.ClientURL(), "--runs-dir", filepath.Join(dir, "runs"))
	if code == exitOK || !strings.Contains(errs, "ANTHROPIC_API_KEY is not set") {
		t.Errorf("a host through NATS without its key: exit %d, stderr %q; want the missing key said", code, errs)
	}
}
