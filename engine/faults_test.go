package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

func cmdTool(name string, timeout time.Duration, argv ...string) spec.Tool {
	return spec.Tool{Name: name, Run: spec.ToolRun{Kind: spec.RunCommand, Command: argv, Timeout: timeout},
		Input: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}}
}

// Bad tool behaviour never crashes the run and never loses the record:
// each becomes a tool error the model reads, and the loop goes on.
func TestToolFaultsAreResults(t *testing.T) {
	testpar.UnlessRace(t)
	s := skill("ops", "1.0.0", spec.ChannelInline)
	s.Dir = t.TempDir()
	s.Tools = append(s.Tools,
		cmdTool("missing", 0, "./no-such-binary"),
		cmdTool("slow", 200*time.Millisecond, "sleep", "10"),
		cmdTool("failing", 0, "ls", "/no/such/path"),
		cmdTool("flood", 0, "head", "-c", "100000000", "/dev/zero"),
	)
	p := project(s)
	p.Workflow.Limits.MaxSteps = 20
	p.Workflow.Limits.MaxResultTokens = 1 << 30 // the tool's own cut is tested here, not the window's
	res, m, _, err := runWith(t, p, Options{RunsDir: t.TempDir()},
		read("ops"),
		call("missing", nil),
		call("slow", nil),
		call("failing", nil),
		call("flood", nil),
		call("failing", map[string]any{"n": "not a number"}),
		read("Bad ID"),
		say("survived"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != "survived" {
		t.Errorf("answer = %q", res.Answer)
	}
	reqs := m.requests()
	for i, tc := range []struct {
		want    string
		isError bool
	}{
		{"no-such-binary", true},
		{"timed out", true},
		{"exited with status", true},
		{"truncated", false},
		{"/n", true},
		{"SKILL_ID_INVALID", true},
	} {
		r := lastResult(reqs[i+2])
		if r.IsError != tc.isError || !strings.Contains(r.Text, tc.want) {
			t.Errorf("fault %d: result %.200q (error %v), want %q (error %v)", i, r.Text, r.IsError, tc.want, tc.isError)
		}
		if len(r.Text) > 2<<20 {
			t.Errorf("fault %d: %d bytes of output reached the model", i, len(r.Text))
		}
	}
}

// A model that returns 1,000 tool calls in one response gets 1,000 results,
// in the order of the calls.
func TestThousandCallsInOneResponse(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	p.Workflow.Limits.MaxTranscriptMessages = 5000
	many := func(*model.Request) *model.Response {
		r := &model.Response{}
		for i := 0; i < 1000; i++ {
			args, _ := json.Marshal(map[string]string{"text": fmt.Sprint(i)})
			r.Calls = append(r.Calls, model.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "aa_echo", Args: args})
		}
		return r
	}
	_, m, _, err := runWith(t, p, Options{}, read("aa"), many, say("done"))
	if err != nil {
		t.Fatal(err)
	}
	var results []model.Message
	for _, msg := range m.requests()[2].Messages {
		if msg.Role == model.Tool && msg.Name == "aa_echo" {
			results = append(results, msg)
		}
	}
	if len(results) != 1000 {
		t.Fatalf("%d results, want 1000", len(results))
	}
	for i, r := range results {
		if r.CallID != fmt.Sprintf("c%d", i) || r.Text != fmt.Sprintf("aa says %d", i) {
			t.Fatalf("result %d = %+v", i, r)
		}
	}
}

// A model error (the scripted model's "script exhausted") fails the run
// with the model's words, and the run record is complete.
func TestModelErrorKeepsRecord(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	res, _, _, err := runWith(t, p, Options{RunsDir: t.TempDir()}, read("aa"))
	if err == nil || !strings.Contains(err.Error(), "no step 2") {
		t.Fatalf("err = %v", err)
	}
	var sum runrecord.Summary
	if err := json.Unmarshal(readFile(t, res.Dir+"/run.json"), &sum); err != nil || sum.Status != runrecord.Failed || !strings.Contains(sum.Error, "no step 2") {
		t.Errorf("run.json = %+v (%v)", sum, err)
	}
	entries := readTranscript(t, res.Dir, "transcript.jsonl")
	if len(entries) < 3 {
		t.Errorf("transcript has %d entries; the completed step was lost", len(entries))
	}
	if ev := string(readFile(t, res.Dir+"/events.jsonl")); !strings.Contains(ev, `"run.finished"`) {
		t.Error("events.jsonl does not end with run.finished")
	}
}
