package eval_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/eval"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// A cancelled eval (Ctrl-C) starts no run after the cancel: each would
// leave an empty interrupted record behind. The first job cancels the
// eval while the loop feeding the workers already waits to hand over the
// second.
func TestNoRunStartsAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var started atomic.Int32
	start := func(c context.Context, j eval.Job, opts engine.Options, wrap func(model.Model) model.Model) (*engine.Run, func(error) error, error) {
		started.Add(1)
		time.Sleep(50 * time.Millisecond) // the feeding loop is blocked on the second job by now
		cancel()
		return nil, nil, errors.New("cancelled")
	}
	suite := load(t, "testdata/triggers/triggers.eval.yaml")
	_, err := eval.Run(ctx, []*spec.EvalSuite{suite}, eval.Options{Start: start, Repeat: 3})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v, want the cancel", err)
	}
	if n := started.Load(); n != 1 {
		t.Errorf("%d runs started, want 1: none after the cancel", n)
	}
}
