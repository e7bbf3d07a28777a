package engine

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// assistantStates lists the provider state on each assistant message of
// req, "" where there is none.
func assistantStates(req *model.Request) []string {
	var out []string
	for _, m := range req.Messages {
		if m.Role != model.Assistant {
			continue
		}
		s := ""
		if m.State != nil {
			s = m.State.Model + " " + string(m.State.Data)
		}
		out = append(out, s)
	}
	return out
}

// A response's provider state stays on the assistant message it becomes:
// the next step's request carries it, and so does the same step's
// request after a resume, which replays the first step from the journal.
func TestProviderStateKeptAcrossStepsAndResume(t *testing.T) {
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	state := &model.State{Model: "openai-responses/m", Data: json.RawMessage(`[{"type":"reasoning","id":"rs_1"}]`)}
	want := "openai-responses/m " + string(state.Data)
	down := errors.New("503 service unavailable")
	var step1 []string
	first := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Step == 0 {
			resp := read("aa")(req)
			resp.State = state
			return resp, nil
		}
		step1 = assistantStates(req)
		return nil, down
	})
	r, err := New(p, Options{Model: first, RunsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "")
	if !errors.Is(err, down) {
		t.Fatalf("first run: %v", err)
	}
	if len(step1) != 1 || step1[0] != want {
		t.Errorf("step 2 of the first run: assistant states %q, want [%q]", step1, want)
	}

	j, err := LoadReplay(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var resumed []string
	second := model.Func(func(_ context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.Step == 0 {
			t.Error("the journaled step 1 was asked for again")
		}
		resumed = assistantStates(req)
		return &model.Response{Text: "done"}, nil
	})
	r2, err := New(p, Options{Model: second, Resume: j})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if len(resumed) != 1 || resumed[0] != want {
		t.Errorf("step 2 after the resume: assistant states %q, want [%q]", resumed, want)
	}
}
