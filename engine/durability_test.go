package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// The durability modes: under `step` every step is on disk before the
// next model call; under `commit-before-effects` a step is not waited
// for, but a command's call is on disk before its program runs, in both.
// (Unwaited lines would reach the file 20 ms late; here an hour, so only
// commits write.)
func TestDurabilityModes(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name string
		opt  spec.Durability // Options.Durability
		key  spec.Durability // the workflow's durability:
		mode spec.Durability // what the run must do
	}{
		{"default", "", "", spec.DurabilityStep},
		{"option", spec.DurabilityEffects, "", spec.DurabilityEffects},
		{"workflow key", "", "commit-before-effects", spec.DurabilityEffects},
		{"option over key", spec.DurabilityStep, "commit-before-effects", spec.DurabilityStep},
	} {
		mode := tc.mode
		t.Run(tc.name, func(t *testing.T) {
			runs := t.TempDir()
			path := filepath.Join(runs, "r1", "journal.jsonl")
			s := skill("ops", "1.0.0", spec.ChannelHandle)
			s.Tools = append(s.Tools, spec.Tool{Name: "effect", Run: spec.ToolRun{Kind: spec.RunCommand,
				Command: []string{"sh", "-c", `if grep -q '"name":"effect"' "$1"; then printf journaled; else printf missing; fi`, "effect", path}}})
			var readOnDisk bool
			looks := func(req *model.Request) *model.Response {
				b, _ := os.ReadFile(path)
				readOnDisk = bytes.Contains(b, []byte(`"name":"read_skill"`)) && bytes.Contains(b, []byte(`"role":"tool"`))
				return call("effect", nil)(req)
			}
			var effect string
			done := func(req *model.Request) *model.Response {
				effect = lastResult(req).Text
				return say("done")(req)
			}
			p := project(s)
			p.Workflow.Durability = tc.key
			// The command reads the journal it checks.
			p.Workflow.Sandbox = &spec.Sandbox{Read: []string{runs}}
			_, _, _, err := runWith(t, p, Options{RunsDir: runs, RunID: "r1", Durability: tc.opt, flushDelay: time.Hour},
				read("ops"), looks, done)
			if err != nil {
				t.Fatal(err)
			}
			if effect != "journaled" {
				t.Errorf("the command ran before its call was on disk: it saw %q", effect)
			}
			if want := mode == spec.DurabilityStep; readOnDisk != want {
				t.Errorf("step 1 on disk before step 2's model call: %v, want %v", readOnDisk, want)
			}
			if n := len(readTranscript(t, filepath.Dir(path), "transcript.jsonl")); n != 7 {
				t.Errorf("the journal holds %d host entries after the run, want 7", n)
			}
		})
	}
}

// J5 under F8: a board task's runner hands the wait for its answer's
// commit to the board, and the task still counts as done only once the
// answer is on disk: when task.completed is heard, the journal file holds
// the answer (lines reach the file only at a commit here, FlushDelay
// being an hour).
func TestTaskDoneAfterItsCommit(t *testing.T) {
	p := project()
	p.Workflow.Host = nil
	p.Workflow.Tasks = []spec.Task{{ID: "a", Goal: "one"}, {ID: "b", Goal: "two"}, {ID: "c", Goal: "three", Deps: []string{"a", "b"}}}
	runs := t.TempDir()
	path := filepath.Join(runs, "r1", "journal.jsonl")
	var mu sync.Mutex
	done := map[string]bool{}
	sink := event.SinkFunc(func(e event.Event) {
		if e.Type != event.TaskCompleted {
			return
		}
		b, err := os.ReadFile(path)
		mu.Lock()
		defer mu.Unlock()
		done[e.Task] = err == nil && bytes.Contains(b, []byte(`"answer `+e.Task+`"`))
	})
	m := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Text: "answer " + req.Caller.TaskID}, nil
	})
	r, err := New(p, Options{Model: m, Sink: sink, RunsDir: runs, RunID: "r1", flushDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{"a", "b", "c"} {
		if !done[id] {
			t.Errorf("task %s completed before its answer was on disk (or never): %v", id, done)
		}
	}
}
