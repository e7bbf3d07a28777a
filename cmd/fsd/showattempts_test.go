package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
	"github.com/fsdrun/fsd/work"
)

// retryingWorkers answers a task's first attempt as worker w1 failing and
// every other as worker wN completing, each with its transcript inline.
type retryingWorkers struct{}

func (retryingWorkers) Dispatch(_ context.Context, a *work.Attempt, _ event.Sink, _ work.Approver) (*work.Outcome, error) {
	var log []json.RawMessage
	tr := transcript.New(writerTo(func(b []byte) { log = append(log, json.RawMessage(strings.TrimSuffix(string(b), "\n"))) }),
		transcript.WithClock(func() time.Time { return time.Unix(0, 0).UTC() }))
	_ = tr.AppendMessage(model.Message{Role: model.User, Text: a.Goal})
	_ = tr.AppendMessage(model.Message{Role: model.Assistant, Text: "attempt " + string(rune('0'+a.Number))})
	out := &work.Outcome{Worker: "w" + string(rune('0'+a.Number)), Host: "box", PID: 10 + a.Number, Log: log, Logged: len(log)}
	if a.Task == "flaky" && a.Number == 1 {
		out.Error = "the disk filled"
	} else {
		out.Result = "done"
	}
	return out, nil
}

type writerTo func([]byte)

func (f writerTo) Write(b []byte) (int, error) { f(b); return len(b), nil }

// fsd show names the worker of each attempt of a task retried on
// workers, with why an attempt failed, and --requests heads each
// attempt's transcript with its worker.
//
// O10: the record names the worker of each attempt.
func TestShowNamesTheWorkerOfEachAttempt(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "skills", "alpha", "alpha.skill.yaml"), "id: alpha\nname: alpha\ndescription: Answers.\nversion: 1.0.0\ninstructions: Answer.\n"+
		"agents:\n  writer: {description: Writes., prompt: Answer., retries: 1}\n")
	wf := filepath.Join(dir, "two.workflow.yaml")
	write(t, filepath.Join(dir, "two.script.yaml"), "agents:\n  writer: [{say: done}]\n")
	write(t, wf, "name: two\nmodel: scripted\nscript: two.script.yaml\nskills: [./skills]\ninput: go\ntasks:\n  - {id: flaky, assignee: alpha/writer, goal: one}\n")
	p, diags := spec.LoadProject(wf)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(dir, "runs")
	r, err := engine.New(p, engine.Options{Model: scripted.New(&scripted.Script{}, nil), Dispatcher: retryingWorkers{}, RunsDir: runs, RunID: "retried"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	code, out, errs := fsd(t, "show", "retried", "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !regexp.MustCompile(`(?m)^attempts of flaky\n  1 +on w1 \(box, pid 11\) +the disk filled\n  2 +on w2 \(box, pid 12\) +ran\n`).MatchString(out) ||
		!strings.Contains(out, "on w2 (box, pid 12)") {
		t.Errorf("fsd show:\n%s", out)
	}
	code, out, errs = fsd(t, "show", "retried", "--runs-dir", runs, "--requests")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"##### task flaky · alpha/writer · on w1 (box, pid 11) · tasks/flaky.jsonl ·", "##### task flaky · alpha/writer · attempt 2 · on w2 (box, pid 12) · tasks/flaky.attempt-2.jsonl ·"} {
		if !strings.Contains(out, want) {
			t.Errorf("fsd show --requests lacks %q:\n%s", want, out)
		}
	}
	// A task the run has not: the error offers each task once, however
	// many attempts it had, and no host where none ran (a pipeline).
	code, _, errs = fsd(t, "show", "retried", "--runs-dir", runs, "--task", "zzz")
	if code != exitProblems || !strings.Contains(errs, `no generator for task "zzz" (tasks: flaky)`) {
		t.Errorf("fsd show --task zzz: exit %d, stderr %q; want the one task, once", code, errs)
	}
}
