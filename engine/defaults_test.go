package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// The workflow's `concurrency` reaches the board (D3). In a synctest
// bubble every worker's model call blocks until released; synctest.Wait
// returns once every goroutine is durably blocked, so the workers in
// flight then are all that can start: exactly the workflow's limit, not
// the board's default of 4.
func TestWorkflowConcurrencyReachesBoard(t *testing.T) {
	testpar.UnlessRace(t)
	synctest.Test(t, func(t *testing.T) {
		p := project()
		p.Workflow.Host = nil // a pipeline: the static board runs at once
		p.Workflow.Limits.Concurrency = 2
		for i := range 6 {
			p.Workflow.Tasks = append(p.Workflow.Tasks, spec.Task{ID: fmt.Sprintf("t%d", i+1), Goal: "g"})
		}
		var inFlight atomic.Int64
		release := make(chan struct{})
		m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			inFlight.Add(1)
			defer inFlight.Add(-1)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &model.Response{Text: "done " + req.Caller.TaskID}, nil
		})
		r, err := New(p, Options{Model: m})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			_, err := r.Execute(context.Background(), "")
			done <- err
		}()
		synctest.Wait()
		if got := inFlight.Load(); got != 2 {
			t.Errorf("workers in flight with every goroutine blocked = %d, want the workflow's concurrency 2", got)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// A workflow that sets no limits gets a window of 60 messages (W1): with
// a long history of one-message turns over the cap, the first request is
// cut down to the low-water mark, half the cap: the newest 30.
func TestDefaultWindowIs60(t *testing.T) {
	testpar.UnlessRace(t)
	var hist []model.Message
	for i := range 100 {
		hist = append(hist, model.Message{Role: model.User, Text: fmt.Sprintf("turn %d", i)})
	}
	_, m, _, err := runWith(t, project(), Options{History: hist}, say("ok"))
	if err != nil {
		t.Fatal(err)
	}
	req := m.requests()[0]
	if got := len(req.Messages); got != 30 {
		t.Fatalf("first request carries %d messages, want half the default window of 60", got)
	}
	if first := req.Messages[0].Text; first != "turn 71" {
		t.Errorf("window starts at %q, want the 30th newest message, turn 71", first)
	}
}
