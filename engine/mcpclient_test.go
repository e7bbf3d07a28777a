package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/mcptest"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// seeing is a scripted model that says it takes images.
type seeing struct{ *recModel }

func (seeing) Capabilities() model.Capabilities {
	return model.Capabilities{Tools: true, Images: true}
}

// router is a scripted model that routes (like the CLI's) to a model
// that takes images.
type router struct{ *recModel }

func (router) CapabilitiesFor(model.Caller) model.Capabilities {
	return model.Capabilities{Tools: true, Images: true}
}

// runModel runs p with m as the model and sink as the events' sink.
func runModel(t *testing.T, p *spec.Project, m model.Model, sink event.Sink) error {
	t.Helper()
	r, err := New(p, Options{Model: m, Sink: sink, Rand: rand.NewChaCha8([32]byte{1})})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Execute(context.Background(), "")
	return err
}

// An MCP server's progress reports during a call are tool.progress events
// naming the call, with the server's figures and message.
//
// P1: a server's progress reaches the run's events.
func TestMCPProgressIsAnEvent(t *testing.T) {
	s, log := mcpSkill(t, "", []string{"progress"})
	ack := filepath.Join(filepath.Dir(log), "ack")
	rec := &event.Recorder{}
	sink := event.SinkFunc(func(e event.Event) {
		rec.Emit(e)
		if e.Type == event.ToolProgress && e.Progress != nil && e.Progress.Done == 2 {
			_ = os.WriteFile(ack, nil, 0o644)
		}
	})
	m := &recModel{steps: []step{read("tracker"), call("mcp__tracker__t__progress", map[string]string{"ack": ack}), say("done")}}
	if err := runModel(t, writable(project(s), filepath.Dir(log)), m, sink); err != nil {
		t.Fatal(err)
	}
	if r := lastResult(m.requests()[2]); r.Text != "done (token true)" {
		t.Fatalf("result = %+v", r)
	}
	var callID string
	var got []string
	for _, e := range rec.Events() {
		switch {
		case e.Type == event.ToolCall && e.Tool == "mcp__tracker__t__progress":
			callID = e.CallID
		case e.Type == event.ToolProgress:
			if e.CallID != callID || e.Tool != "mcp__tracker__t__progress" || e.Progress == nil || e.Progress.Total != 2 {
				t.Errorf("progress event %+v, want call %s's", e, callID)
			}
			got = append(got, e.Text)
		}
	}
	if strings.Join(got, ",") != "step 1,step 2" {
		t.Errorf("progress messages = %q", got)
	}
}

// An image an MCP tool answers rides with its result to a model that
// takes images; a model that does not gets the text and a note.
//
// P2: media go only to a model whose capabilities take them.
func TestMCPImageGoesToAModelThatTakesImages(t *testing.T) {
	for _, kind := range []string{"seeing", "routed", "blind"} {
		s, log := mcpSkill(t, "", []string{"image"})
		rm := &recModel{steps: []step{read("tracker"), call("mcp__tracker__t__image", nil), say("a red dot")}}
		var m model.Model = rm
		switch kind {
		case "seeing":
			m = seeing{rm}
		case "routed":
			m = router{rm}
		}
		sees := kind != "blind"
		if err := runModel(t, writable(project(s), filepath.Dir(log)), m, nil); err != nil {
			t.Fatal(err)
		}
		r := lastResult(rm.requests()[2])
		if sees && (len(r.Media) != 1 || r.Media[0].MIME != "image/png" || !bytes.Equal(r.Media[0].Data, mcptest.PNG) || strings.Contains(r.Text, "not shown")) {
			t.Errorf("a model that sees images got %d media, text %q", len(r.Media), r.Text)
		}
		if !sees && (len(r.Media) != 0 || !strings.HasSuffix(r.Text, "\n[1 image not shown: this model does not take them]")) {
			t.Errorf("a model that takes no images got %d media, text %q", len(r.Media), r.Text)
		}
	}
}

// A server's question during a call waits like a call for approval: it is
// pending under its own id with the form's defaults as arguments, an
// answer that does not match the form is asked again, and one that does
// is the server's answer.
//
// P5: a question waits like an approval; the answer matches its schema.
func TestMCPElicitationWaitsLikeAnApproval(t *testing.T) {
	s, log := mcpSkill(t, "", []string{"ask"})
	m := &recModel{steps: []step{read("tracker"), call("mcp__tracker__t__ask", nil), say("done")}}
	var run *Run
	var mu sync.Mutex
	var asked []event.Event
	answers := []string{`{"name":""}`, `{"name":"Ada","count":3}`}
	sink := event.SinkFunc(func(e event.Event) {
		if e.Type != event.ApprovalRequested {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, e)
		if len(asked) > len(answers) {
			return
		}
		// As the terminal's prompt does: not from inside the event.
		a := runrecord.Answer{Call: e.Approval, Decision: runrecord.Edited, Args: json.RawMessage(answers[len(asked)-1])}
		go func() { _ = run.Answer(a) }()
	})
	r, err := New(writable(project(s), filepath.Dir(log)), Options{Model: m, Sink: sink, Rand: rand.NewChaCha8([32]byte{1})})
	if err != nil {
		t.Fatal(err)
	}
	run = r
	if _, err := r.Execute(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if res := lastResult(m.requests()[2]); res.Text != `action=accept content={"count":3,"name":"Ada"}` {
		t.Errorf("result = %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 {
		t.Fatalf("asked %d times: %+v", len(asked), asked)
	}
	if first := asked[0]; !strings.HasSuffix(first.Approval, "/ask1") || first.Tool != "mcp__tracker__t__ask asks: Which name, and how many?" ||
		string(first.Args) != `{"count":2,"name":""}` {
		t.Errorf("first question = %+v", first)
	}
	if again := asked[1]; !strings.HasSuffix(again.Approval, "/ask2") || !strings.Contains(again.Tool, "asks again (the last answer did not fit:") {
		t.Errorf("second question = %+v", again)
	}
}

// A server's request for a completion during a call is answered by the
// run's model once approved, and its tokens are counted as a request of
// the generator; a run that denies approvals refuses it.
//
// P9: a server's completion is the run's model's, approved and counted.
func TestMCPSamplingUsesTheRunsModel(t *testing.T) {
	for _, mode := range []string{"auto", "deny"} {
		s, log := mcpSkill(t, "", []string{"sample"})
		m := &recModel{steps: []step{read("tracker"), call("mcp__tracker__t__sample", nil), say("42"), say("done")}}
		rec := &event.Recorder{}
		r, err := New(writable(project(s), filepath.Dir(log)), Options{Model: m, Sink: rec, Approve: approval.Mode(mode), Rand: rand.NewChaCha8([32]byte{1})})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Execute(context.Background(), ""); err != nil {
			for i, q := range m.requests() {
				t.Logf("request %d: %q %+v", i, q.Context, q.Messages[len(q.Messages)-1])
			}
			t.Fatalf("%s: %v", mode, err)
		}
		reqs := m.requests()
		requests, asked := 0, ""
		for _, e := range rec.Events() {
			switch e.Type {
			case event.Request:
				requests++
			case event.ApprovalRequested, event.ApprovalAnswered:
				asked = e.Approval
			}
		}
		if mode == "auto" {
			if len(reqs) != 4 || reqs[2].Context != "Answer with a number." || reqs[2].Messages[0].Text != "What is 6 times 7?" {
				t.Fatalf("requests: %d; the sampling one: %+v", len(reqs), reqs[min(2, len(reqs)-1)])
			}
			if r := lastResult(reqs[3]); r.Text != "model said: 42" {
				t.Errorf("result = %+v", r)
			}
			if requests != 4 || !strings.HasSuffix(asked, "/sample1") {
				t.Errorf("%d request events (want 4, the sampling one counted), approval %q", requests, asked)
			}
			continue
		}
		if len(reqs) != 3 || !strings.Contains(lastResult(reqs[2]).Text, "rejected") {
			t.Errorf("deny: %d requests, result %+v", len(reqs), lastResult(reqs[len(reqs)-1]))
		}
	}
}
