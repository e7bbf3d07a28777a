package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/model"
)

// saveBoard writes board.json to the run record.
// Long goals, inputs and results are clipped: the transcripts keep them.
func (r *Run) saveBoard(b *board.Board) {
	if r.rec == nil {
		return
	}
	tasks := b.Tasks()
	for i := range tasks {
		t := &tasks[i]
		t.Goal, t.Input, t.Result, t.Error = clipRecord(t.Goal), clipRecord(t.Input), clipRecord(t.Result), clipRecord(t.Error)
		if len(t.Output) > maxRecordText {
			t.Output = nil // cut JSON is no JSON: the record keeps the clipped text
		}
	}
	_ = r.rec.WriteBoard(tasks) // a failure cuts the record, and the run fails with it
}

// pipeline runs a workflow without a host: the static board runs with the
// input as the parent conversation, and the answer is the sink tasks'
// results.
func (r *Run) pipeline(ctx context.Context, input string) (string, error) {
	hb := r.newHostBoard(nil)
	parent := []model.Message{{Role: model.User, Text: input}}
	hb.parent = func() []model.Message { return parent }
	if err := hb.seed(); err != nil {
		return "", err
	}
	rep, err := hb.b.Run(ctx, hb.runTask)
	r.saveBoard(hb.b)
	if err != nil {
		return "", err
	}
	tasks := rep.Tasks // every task as the run left them
	if rep.Status != board.StatusDrained {
		return "", fmt.Errorf("board %s: %s", rep.Status, describeFailures(tasks))
	}
	// A drained board can still hold a failed sink (a task nothing depends
	// on): a pipeline has no coordinator to replan, so that fails the run.
	for _, t := range tasks {
		if t.Status == board.Failed || t.Status == board.Cancelled {
			return "", fmt.Errorf("pipeline: %s", describeFailures(tasks))
		}
	}
	return sinkResults(tasks), nil
}

// sinkResults joins the results of tasks no other task depends on.
func sinkResults(tasks []board.Task) string {
	hasDependents := map[string]bool{}
	for _, t := range tasks {
		for _, d := range t.Deps {
			hasDependents[d] = true
		}
	}
	var sinks []board.Task
	for _, t := range tasks {
		if !hasDependents[t.ID] && t.Status == board.Completed {
			sinks = append(sinks, t)
		}
	}
	if len(sinks) == 1 {
		return sinks[0].Result
	}
	var b strings.Builder
	for i, t := range sinks {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "## %s\n\n%s", t.ID, t.Result)
	}
	return b.String()
}

// describeFailures says why a board is blocked. Tasks that ended the same
// way are named together, so an error that failed seven tasks is said once.
func describeFailures(tasks []board.Task) string {
	type group struct {
		how string
		ids []string
	}
	var groups []*group
	byHow := map[string]*group{}
	for _, t := range tasks {
		var how string
		switch t.Status {
		case board.Failed:
			how = "failed: " + t.Error
		case board.Pending:
			how = "stranded"
		case board.Cancelled:
			how = "cancelled"
		default:
			continue
		}
		g := byHow[how]
		if g == nil {
			g = &group{how: how}
			byHow[how] = g
			groups = append(groups, g)
		}
		g.ids = append(g.ids, t.ID)
	}
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		if len(g.ids) == 1 {
			parts = append(parts, "task "+g.ids[0]+" "+g.how)
			continue
		}
		ids := g.ids
		if len(ids) > 5 {
			ids = append(ids[:5:5], fmt.Sprintf("%d more", len(g.ids)-5))
		}
		names := strings.Join(ids[:len(ids)-1], ", ") + " and " + ids[len(ids)-1]
		parts = append(parts, "tasks "+names+" "+g.how)
	}
	return strings.Join(parts, "; ")
}
