package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/artifact"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
)

// readers: named offers the fifteen named reader tools instead of the two
// selector tools, says so in the context block, answers a call of one
// like its compact twin, and reclaims its results on unload (H4).
func TestNamedReaders(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle))
	p.Workflow.Readers = spec.ReadersNamed
	p.Workflow.Limits.MaxLoadedSkills = 1
	section := func(req *model.Request) *model.Response {
		args, _ := json.Marshal(map[string]string{"handle": handleOf(t, req.Context, "aa"), "heading": "Steps"})
		return &model.Response{Calls: []model.ToolCall{{ID: "r-aa", Name: "artifact_md_sections", Args: args}}}
	}
	_, m, _, err := runWith(t, p, Options{}, read("aa"), section, read("bb"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	names := toolNames(reqs[1])
	for _, d := range artifact.NamedTools() {
		if !has(names, d.Name) {
			t.Errorf("named tool %s not offered: %v", d.Name, names)
		}
	}
	if has(names, artifact.ToolMD) || has(names, artifact.ToolRead) {
		t.Errorf("the compact readers are offered too: %v", names)
	}
	if !strings.Contains(reqs[1].Context, "Start with artifact_md_headings.") {
		t.Errorf("the context block does not name the named readers:\n%s", reqs[1].Context)
	}
	if r := lastResult(reqs[2]); r.IsError || !strings.Contains(r.Text, "Do the aa steps.") || r.Artifact != "aa" {
		t.Fatalf("artifact_md_sections answered %+v", r)
	}
	for _, msg := range reqs[3].Messages {
		if msg.CallID == "r-aa" && strings.Contains(msg.Text, "Do the aa steps.") {
			t.Errorf("H4: the named reader's result was not reclaimed: %q", msg.Text)
		}
	}
}

// window-shed: oldest lets the oldest group go one at a time: past the
// cap every request holds as many messages as fit (the user message and
// the newest groups), where half drops to the low-water mark and grows
// again. Both keep W1 and W2.
func TestWindowShedOldest(t *testing.T) {
	testpar.UnlessRace(t)
	lens := map[spec.WindowShed][]int{}
	for _, shed := range []spec.WindowShed{spec.ShedHalf, spec.ShedOldest} {
		p := project(skill("aa", "1.0.0", spec.ChannelInline))
		p.Workflow.WindowShed = shed
		p.Workflow.Limits.MaxTranscriptMessages = 9
		p.Workflow.Limits.MaxSteps = 50
		steps := []step{read("aa")}
		for range 12 {
			steps = append(steps, call("aa_echo", map[string]string{"text": "x"}))
		}
		_, m, _, err := runWith(t, p, Options{}, append(steps, say("done"))...)
		if err != nil {
			t.Fatal(err)
		}
		for i, req := range m.requests() {
			if _, err := transcript.WindowOf(req.Messages, 9); err != nil || req.Messages[0].Role != model.User {
				t.Errorf("%s: request %d is not a well-formed window: %v", shed, i, err)
			}
			lens[shed] = append(lens[shed], len(req.Messages))
		}
	}
	t.Logf("window lengths: half %v, oldest %v", lens[spec.ShedHalf], lens[spec.ShedOldest])
	// One user message, the load's call, result and context line, then
	// two messages per call: from the sixth request on, oldest fills the
	// cap every time (half: 3, 5, 7, 9, 3, …).
	for i, n := range lens[spec.ShedOldest][5:] {
		if n != 9 {
			t.Errorf("oldest: request %d holds %d messages, want 9 (all: %v)", i+5, n, lens[spec.ShedOldest])
		}
	}
	shrunk := false
	for _, n := range lens[spec.ShedHalf] {
		shrunk = shrunk || n <= 5
	}
	if !shrunk {
		t.Errorf("half never went down to the low-water mark: %v", lens[spec.ShedHalf])
	}
}
