package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// The release example (examples/release) uses typed results and
// approvals together: the writer's JSON reaches the ship task's goal and
// the publish call's arguments through .Deps, publishing waits for
// approval, and — answered through the Go API — a rejection reaches the
// shipper, whose answer ends the pipeline.
func TestReleaseExample(t *testing.T) {
	testpar.UnlessRace(t)
	p, diags := spec.LoadProject("../examples/release/release.workflow.yaml")
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	s, err := scripted.Load("../examples/release/release.script.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var run *engine.Run
	asked := make(chan event.Event, 1)
	var notes event.Event
	sink := event.SinkFunc(func(e event.Event) {
		switch {
		case e.Type == event.ApprovalRequested:
			asked <- e
		case e.Type == event.TaskCompleted && e.Task == "notes":
			notes = e
		}
	})
	run, err = engine.New(p, engine.Options{Model: scripted.New(s, nil), RunsDir: t.TempDir(), Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		res *engine.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := run.Execute(context.Background(), "")
		done <- out{res, err}
	}()
	var e event.Event
	select {
	case e = <-asked:
	case o := <-done:
		t.Fatalf("the run ended without asking: %v", o.err)
	}
	if e.Tool != "publish" || e.Task != "ship" || string(e.Args) != `{"channel":"stable","version":"1.4.0"}` {
		t.Errorf("asked about %s %s (task %s)", e.Tool, e.Args, e.Task)
	}
	// The sink runs on the board's goroutines; both events came before
	// the approval was asked.
	if !strings.Contains(string(notes.Output), `"highlights":["calls can wait for approval"`) {
		t.Errorf("the notes task's typed output: %s", notes.Output)
	}
	if err := run.Answer(runrecord.Answer{Call: e.Approval, Decision: runrecord.Rejected, Reason: "the freeze is on"}); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !strings.Contains(o.res.Answer, "the approver rejected it (the freeze is on)") {
		t.Errorf("answer %q", o.res.Answer)
	}
	// The shipper was given its goal rendered over the writer's JSON.
	tr, err := os.ReadFile(filepath.Join(o.res.Dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Publish 1.4.0 to the stable channel, announcing: calls can wait for approval"; !strings.Contains(string(tr), want) {
		t.Errorf("the journal lacks the shipper's rendered goal %q:\n%s", want, tr)
	}
}
