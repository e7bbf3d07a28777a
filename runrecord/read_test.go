package runrecord_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
)

// capture keeps a deep copy of every request a model received, by
// generator and step, as JSON (what a provider would marshal).
type capture struct {
	inner model.Model
	mu    sync.Mutex
	got   map[string][]byte
}

func key(c model.Caller) string { return fmt.Sprintf("%s/%d", c.TaskID, c.Step) }

func (c *capture) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	b, err := json.Marshal(sentForm(req))
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.got[key(req.Caller)] = b
	c.mu.Unlock()
	return c.inner.Generate(ctx, req)
}

// sentForm is what a provider sends of a request: no caller, no callback.
func sentForm(req *model.Request) any {
	return struct {
		Context  string
		Messages []model.Message
		Tools    []model.ToolDef
	}{req.Context, req.Messages, req.Tools}
}

// runExample runs an example on its scripted model, with the window cut
// to maxMessages when it is > 0, and returns the record and every request
// the model received.
func runExample(t *testing.T, path string, maxMessages int) (*runrecord.Record, map[string][]byte) {
	t.Helper()
	p, diags := spec.LoadProject(path)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	if maxMessages > 0 {
		p.Workflow.Limits.MaxTranscriptMessages = maxMessages
	}
	s, err := scripted.Load(filepath.Join(p.Workflow.Dir, p.Workflow.Script))
	if err != nil {
		t.Fatal(err)
	}
	var run *engine.Run
	c := &capture{inner: scripted.New(s, func(id string) (string, error) { return run.Handle(id) }), got: map[string][]byte{}}
	run, err = engine.New(p, engine.Options{Model: c, RunsDir: t.TempDir(), RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := runrecord.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return rec, c.got
}

// rebuildCases are the runs whose records the readers are tested on.
var rebuildCases = []struct {
	name        string
	path        string
	maxMessages int
}{
	{"conversation", "../examples/conversation.workflow.yaml", 0},
	{"pipeline", "../examples/pipeline.workflow.yaml", 0},
	{"fanout", "../examples/fanout/fanout.workflow.yaml", 0},
	{"lifecycle", "../examples/lifecycle/lifecycle.workflow.yaml", 0},
	{"hello", "../examples/hello/hello.workflow.yaml", 0},
	// Evicting alpha stubs its reader result in the last request (H4).
	{"reclaim", "testdata/reclaim/reclaim.workflow.yaml", 0},
	// A window of 3 cuts the host's turn: two spans.
	{"conversation window 3", "../examples/conversation.workflow.yaml", 3},
	{"lifecycle window 4", "../examples/lifecycle/lifecycle.workflow.yaml", 4},
}

// Every request rebuilt from the record is, byte for byte, what the model
// received: the context block, the window (with reclaim stubs), the tools.
func TestRebuiltRequestsAreWhatTheModelReceived(t *testing.T) {
	for _, tc := range rebuildCases {
		t.Run(tc.name, func(t *testing.T) {
			rec, got := runExample(t, tc.path, tc.maxMessages)
			n := 0
			for _, g := range rec.Gens {
				for _, st := range g.Steps {
					n++
					b, err := json.Marshal(sentForm(st.Request))
					if err != nil {
						t.Fatal(err)
					}
					want, ok := got[key(model.Caller{TaskID: g.Task, Step: st.Step})]
					if !ok {
						t.Errorf("%s step %d: the model never received it", g.Name, st.Step)
						continue
					}
					if string(b) != string(want) {
						t.Errorf("%s step %d differs (-received +rebuilt):\n%s", g.Name, st.Step, cmp.Diff(string(want), string(b)))
					}
					if st.Usage == nil || st.Done.IsZero() {
						t.Errorf("%s step %d has no response line", g.Name, st.Step)
					}
					if len(st.Response) == 0 || st.Response[0].Role != model.Assistant {
						t.Errorf("%s step %d: response %v", g.Name, st.Step, st.Response)
					}
				}
			}
			if n != len(got) {
				t.Errorf("rebuilt %d requests, the model received %d", n, len(got))
			}
		})
	}
}

// A record cut off mid-line (a crash, or a run still writing) reads up to
// the last whole line; a record that points at a missing blob is an error
// naming the step.
func TestTornAndBrokenRequests(t *testing.T) {
	rec, _ := runExample(t, "../examples/hello/hello.workflow.yaml", 0)
	path := filepath.Join(rec.Dir, runrecord.RequestsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, `{"kind":"request","gen":"transcr`...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runrecord.Open(rec.Dir); err != nil {
		t.Errorf("torn tail: %v", err)
	}
	bad := `{"kind":"request","gen":"transcript.jsonl","step":9,"context":"tmissing","at":0}` + "\n"
	if err := os.WriteFile(path, append(b, bad...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runrecord.Open(rec.Dir)
	if err == nil || !strings.Contains(err.Error(), "transcript.jsonl step 10: context block tmissing is not in the record") {
		t.Errorf("missing blob: %v", err)
	}
	if _, err := runrecord.Open(t.TempDir()); err == nil {
		t.Error("an empty folder opened as a record")
	}
}

func TestTaskOfFile(t *testing.T) {
	for file, want := range map[string]string{"a_2fb": "a/b", "a_5fb": "a_b", "_46etch": "Fetch", "plain-1": "plain-1", "x~abc": "x~abc", "end_": "end_", "bad_zz": "bad_zz"} {
		if got := runrecord.TaskOfFile(file); got != want {
			t.Errorf("%s: got %q, want %q", file, got, want)
		}
	}
}

// A task that ran on a remote worker has its transcript in the record
// (copied into the journal) but not its requests: its steps are read
// from the transcript, one per model response, each marked reconstructed,
// with the responses and the messages before them a local task's steps
// would have. The parent's turns a conversation-supply task inherits
// (conversation's brief) come before its task message: their assistant
// messages are not its steps.
func TestRemoteTaskStepsFromTranscript(t *testing.T) {
	for _, tc := range []struct{ example, task string }{
		{"../examples/fanout/fanout.workflow.yaml", "north"},
		{"../examples/conversation.workflow.yaml", "brief"},
	} {
		t.Run(tc.task, func(t *testing.T) { remoteStepsFromTranscript(t, tc.example, tc.task) })
	}
}

// dropRequests removes task's request and response lines from the
// record in dir, as if a worker had run it, and appends tail.
func dropRequests(t *testing.T, dir, task, tail string) {
	t.Helper()
	path := filepath.Join(dir, runrecord.RequestsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if !strings.Contains(line, `"gen":"tasks/`+task+`.jsonl"`) {
			kept = append(kept, line)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "")+tail), 0o644); err != nil {
		t.Fatal(err)
	}
}

func remoteStepsFromTranscript(t *testing.T, example, task string) {
	rec, _ := runExample(t, example, 0)
	local := map[string][]*runrecord.Step{}
	agents := map[string]string{}
	for _, g := range rec.Gens {
		local[g.Task], agents[g.Task] = g.Steps, g.Agent
	}
	dropRequests(t, rec.Dir, task, "")
	remote, err := runrecord.Open(rec.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range remote.Gens {
		want := local[g.Task]
		if len(g.Steps) != len(want) || len(want) == 0 {
			t.Fatalf("%s: %d steps, want %d", g.Name, len(g.Steps), len(want))
		}
		for i, st := range g.Steps {
			if st.Reconstructed != (g.Task == task) {
				t.Errorf("%s step %d: reconstructed=%v", g.Name, i, st.Reconstructed)
			}
			if diff := cmp.Diff(want[i].Response, st.Response); diff != "" {
				t.Errorf("%s step %d response (-local +from transcript):\n%s", g.Name, i, diff)
			}
			if diff := cmp.Diff(want[i].Request.Messages, st.Request.Messages); diff != "" {
				t.Errorf("%s step %d messages (-local +from transcript):\n%s", g.Name, i, diff)
			}
			if st.Done.Before(st.Sent) || st.Sent.IsZero() {
				t.Errorf("%s step %d: sent %v, done %v", g.Name, i, st.Sent, st.Done)
			}
		}
		if g.Agent != agents[g.Task] {
			t.Errorf("%s's agent: %q, want %q", g.Name, g.Agent, agents[g.Task])
		}
	}
}

// G20: OpenTask reads of a task what Open reads of it, and decodes no line
// that is not about the task: a broken line of another task's does not
// stop it, while Open fails on it.
func TestOpenTaskReadsOnlyItsLines(t *testing.T) {
	rec, _ := runExample(t, "../examples/fanout/fanout.workflow.yaml", 0)
	tasks := 0
	for _, g := range rec.Gens {
		if g.Task == "" {
			continue
		}
		tasks++
		one, err := runrecord.OpenTask(rec.Dir, g.Task, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(one.Gens) != 1 || one.Gens[0].Name != g.Name {
			t.Fatalf("%s: gens %v", g.Task, one.Gens)
		}
		if d := cmp.Diff(g, one.Gens[0]); d != "" {
			t.Errorf("%s differs (-Open +OpenTask):\n%s", g.Task, d)
		}
		for _, e := range one.Events {
			if e.Task != g.Task {
				t.Errorf("%s: event of %q", g.Task, e.Task)
			}
		}
	}
	if tasks < 2 {
		t.Fatalf("the example ran %d tasks", tasks)
	}
	var hostGens []*runrecord.Gen
	for _, g := range rec.Gens {
		if g.Task == "" {
			hostGens = append(hostGens, g)
		}
	}
	host, err := runrecord.OpenTask(rec.Dir, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(hostGens, host.Gens); d != "" {
		t.Errorf("host differs (-Open +OpenTask):\n%s", d)
	}
	for _, f := range []string{runrecord.EventsFile, runrecord.JournalFile, runrecord.RequestsFile} {
		path := filepath.Join(rec.Dir, f)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, `{"kind":"request","gen":"tasks/other.jsonl","task":"other",`+"\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runrecord.Open(rec.Dir); err == nil {
		t.Fatal("Open read past a broken line")
	}
	if _, err := runrecord.OpenTask(rec.Dir, rec.Gens[len(rec.Gens)-1].Task, false); err != nil {
		t.Errorf("OpenTask decoded another task's line: %v", err)
	}
}
