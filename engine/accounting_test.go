package engine_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/view"
)

// varied reports a different usage on every call, with cached and
// written tokens, and none on every fifth (the engine estimates those).
type varied struct {
	model.Model
	n atomic.Int64
}

func (v *varied) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	resp, err := v.Model.Generate(ctx, req)
	if resp != nil {
		if i := int(v.n.Add(1)); i%5 != 0 {
			resp.Usage = model.Usage{InputTokens: 1000 + 37*i, CachedInputTokens: 400 + i, CacheWriteTokens: 50 + i%3, OutputTokens: 10 + i}
		}
	}
	return resp, err
}

// One accounting. Every request event carries its
// usage (the provider's, or the estimate marked so); each task's end
// event carries the sum of its requests; run.finished, run.json and the
// live board carry the sum of all of them; prices give the same cost
// everywhere.
func TestOneAccounting(t *testing.T) {
	testpar.UnlessRace(t)
	p, diags := spec.LoadProject("../examples/conversation.workflow.yaml")
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	cached, write := 0.3, 3.75
	p.Workflow.Prices = map[string]spec.Price{"scripted": {Input: 3, CachedInput: &cached, CacheWrite: &write, Output: 15}}
	s, err := scripted.Load(filepath.Join(p.Workflow.Dir, p.Workflow.Script))
	if err != nil {
		t.Fatal(err)
	}
	var run *engine.Run
	m := &varied{Model: scripted.New(s, func(id string) (string, error) { return run.Handle(id) })}
	rec := &event.Recorder{}
	board := view.NewBoard(io.Discard, nil)
	if run, err = engine.New(p, engine.Options{Model: m, RunsDir: t.TempDir(), Sink: event.Multi{rec, board}}); err != nil {
		t.Fatal(err)
	}
	res, err := run.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}

	var all model.Usage
	var allCost float64
	perTask := map[string]model.Usage{}
	taskCost := map[string]float64{}
	estimated, reported := 0, 0
	var finished *event.Event
	ended := map[string]event.Event{}
	for _, e := range rec.Events() {
		switch e.Type {
		case event.Request:
			if e.Usage == nil {
				t.Fatalf("request event without usage: %+v", e)
			}
			if e.Usage.Estimated {
				estimated++
				if e.Tokens == nil || e.Tokens.Total != e.Usage.InputTokens {
					t.Errorf("an estimate without the counts it was made from: %+v", e)
				}
			} else {
				reported++
				if e.Tokens != nil {
					t.Errorf("a provider's usage with o200k counts (the vocabulary was loaded for nothing): %+v", e)
				}
			}
			all, allCost = all.Add(*e.Usage), allCost+e.Cost
			if e.Task != "" {
				perTask[e.Task] = perTask[e.Task].Add(*e.Usage)
				taskCost[e.Task] += e.Cost
			}
		case event.TaskCompleted, event.TaskFailed:
			ended[e.Task] = e
		case event.RunFinished:
			finished = &e
		}
	}
	if estimated == 0 || reported == 0 || len(perTask) == 0 {
		t.Fatalf("%d estimated, %d reported requests, %d tasks: the test does not cover both kinds", estimated, reported, len(perTask))
	}
	if all.CachedInputTokens == 0 || all.CacheWriteTokens == 0 || !all.Estimated {
		t.Fatalf("sum %+v: want cached, written and estimated parts", all)
	}
	for id, u := range perTask {
		e, ok := ended[id]
		if !ok || e.Usage == nil || *e.Usage != u || !near(e.Cost, taskCost[id]) {
			t.Errorf("task %s: end event usage %+v cost %v; its requests add up to %+v cost %v", id, e.Usage, e.Cost, u, taskCost[id])
		}
	}
	if finished == nil || finished.Usage == nil || *finished.Usage != all || !near(finished.Cost, allCost) {
		t.Errorf("run.finished %+v; the requests add up to %+v cost %v", finished, all, allCost)
	}
	r, err := runrecord.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Summary.Usage(); got != all || !near(r.Summary.Cost, allCost) {
		t.Errorf("run.json %+v cost %v; the requests add up to %+v cost %v", got, r.Summary.Cost, all, allCost)
	}
	if allCost <= 0 {
		t.Error("no cost with prices given")
	}
	frame := board.Frame()
	if !strings.Contains(frame, view.Tokens(all)) || !strings.Contains(frame, "cost "+view.Cost(allCost)) {
		t.Errorf("the live board does not show run.json's figures %q, cost %s:\n%s", view.Tokens(all), view.Cost(allCost), frame)
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }
