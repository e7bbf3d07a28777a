package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/spec"
)

// recorder wraps a model and keeps every request by task.
type recorder struct {
	inner model.Model
	mu    sync.Mutex
	reqs  map[string][]model.Request
}

func (r *recorder) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	r.mu.Lock()
	cp := *req
	cp.Messages = append([]model.Message(nil), req.Messages...)
	r.reqs[req.Caller.TaskID] = append(r.reqs[req.Caller.TaskID], cp)
	r.mu.Unlock()
	return r.inner.Generate(ctx, req)
}

// unknownTools lists the "Unknown tool: …" results the scripted model
// was sent back: a tool call the run did not offer. In an example that is
// a broken script (a renamed reader, a tool the skill no longer brings),
// not a demonstration, and the run still ends with an answer, so only
// this check notices.
func (r *recorder) unknownTools() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, reqs := range r.reqs {
		for _, req := range reqs {
			for _, m := range req.Messages {
				if m.Role == model.Tool && strings.HasPrefix(m.Text, "Unknown tool") && !seen[m.Text] {
					seen[m.Text] = true
					out = append(out, m.Text)
				}
			}
		}
	}
	return out
}

// unknownToolShown names, per example workflow, the unknown-tool results
// it provokes on purpose to show the error the model reads. Add one only
// when it is deliberate, with a comment saying why.
var unknownToolShown = map[string]map[string]bool{
	// lifecycle evicts weather (fourth read with room for three) and then
	// calls get_weather to show that an evicted skill's tool is gone.
	"lifecycle.workflow.yaml": {"Unknown tool: get_weather": true},
}

// loadExample loads an example workflow with its scripted model.
func loadExample(t *testing.T, path string) (*spec.Project, *recorder, *engine.Run) {
	t.Helper()
	p, diags := spec.LoadProject(path)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	s, err := scripted.Load(filepath.Join(p.Workflow.Dir, p.Workflow.Script))
	if err != nil {
		t.Fatal(err)
	}
	var run *engine.Run
	rec := &recorder{inner: scripted.New(s, func(id string) (string, error) { return run.Handle(id) }), reqs: map[string][]model.Request{}}
	// Calls that ask for approval are approved (as with fsd run --approve
	// auto): nobody is there to answer.
	run, err = engine.New(p, engine.Options{Model: rec, RunsDir: t.TempDir(), Approve: approval.Auto})
	if err != nil {
		t.Fatal(err)
	}
	return p, rec, run
}

// The fan-out example: five isolated collectors, a join that sees their
// tool observations through flow policy `all`, and a conversation-supply
// briefer that inherits the input conversation.
func TestFanoutExample(t *testing.T) {
	testpar.UnlessRace(t)
	p, rec, run := loadExample(t, "../examples/fanout/fanout.workflow.yaml")
	res, err := run.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Answer, "Online sales grew fastest") {
		t.Errorf("answer = %q", res.Answer)
	}
	for _, id := range []string{"north", "south", "east", "west", "online"} {
		first := rec.reqs[id][0]
		if len(first.Messages) != 1 || strings.Contains(first.Messages[0].Text, p.Workflow.Input) {
			t.Errorf("collector %s is not isolated: %+v", id, first.Messages)
		}
	}
	analysis := rec.reqs["analysis"][0]
	for _, want := range []string{"+31%", "+12%", "quarterly_sales"} {
		if !strings.Contains(analysis.Context, want) {
			t.Errorf("the analyst's flow observations lack %q:\n%s", want, analysis.Context)
		}
	}
	brief := rec.reqs["brief"][0]
	if len(brief.Messages) < 2 || brief.Messages[0].Text != p.Workflow.Input {
		t.Errorf("the briefer did not inherit the conversation: %+v", brief.Messages)
	}
	if strings.Contains(brief.Context, "+31%") {
		t.Error("the briefer (flow deps) sees observations of tasks outside its deps")
	}
}

// Every example workflow runs offline on its scripted model.
func TestExamplesRun(t *testing.T) {
	testpar.UnlessRace(t)
	paths, _ := filepath.Glob("../examples/*/*.workflow.yaml")
	more, _ := filepath.Glob("../examples/*.workflow.yaml")
	paths = append(paths, more...)
	if len(paths) < 3 {
		t.Fatalf("found only %d example workflows", len(paths))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, rec, run := loadExample(t, path)
			res, err := run.Execute(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			if strings.TrimSpace(res.Answer) == "" {
				t.Error("empty answer")
			}
			for _, u := range rec.unknownTools() {
				if !unknownToolShown[filepath.Base(path)][u] {
					t.Errorf("a scripted call met %q: the example calls a tool the run does not offer", u)
				}
			}
		})
	}
}

// The README's tour is examples/hello: keep the two in step.
func TestReadmeTourMatchesExample(t *testing.T) {
	testpar.UnlessRace(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(# ([^\n]+)\n.*?)```").FindAllStringSubmatch(string(readme), -1)
	found := 0
	for _, b := range blocks {
		name := b[2]
		var path string
		switch {
		case strings.HasPrefix(name, "skills/greeter/"):
			path = "../examples/hello/" + name
		case strings.HasPrefix(name, "hello."):
			path = "../examples/hello/" + name
		default:
			continue
		}
		found++
		want := strings.SplitN(b[1], "\n", 2)[1]
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("README's %s differs from %s", name, path)
		}
	}
	if found != 3 {
		t.Errorf("found %d tour files in the README, want 3", found)
	}
}

// The MCP example: the field-notes skill brings a stdio MCP server whose
// source ships beside it (run with `go run`); its tools arrive with the
// skill's load, and the answer quotes what the server found.
func TestMCPExample(t *testing.T) {
	testpar.UnlessRace(t)
	_, rec, run := loadExample(t, "../examples/mcp/mcp.workflow.yaml")
	res, err := run.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Answer, "[Q3 customer visits] - Churn risk is highest") {
		t.Errorf("answer = %q", res.Answer)
	}
	reqs := rec.reqs[""]
	names := func(r model.Request) string {
		var out []string
		for _, d := range r.Tools {
			out = append(out, d.Name)
		}
		return strings.Join(out, " ")
	}
	if strings.Contains(names(reqs[0]), "mcp__") {
		t.Errorf("MCP tools before the skill loaded: %s", names(reqs[0]))
	}
	for _, want := range []string{"mcp__field-notes__notes__search", "mcp__field-notes__notes__section"} {
		if !strings.Contains(names(reqs[1]), want) {
			t.Errorf("after read_skill the request lacks %s: %s", want, names(reqs[1]))
		}
	}
}

// The workspace example: the scripted host writes notes.md with Write,
// edits it, runs the skill's script on it (in the workspace, where the
// file is) and Bash; the file is in the run's default workspace.
func TestWorkspaceExample(t *testing.T) {
	testpar.UnlessRace(t)
	_, rec, run := loadExample(t, "../examples/workspace/workspace.workflow.yaml")
	res, err := run.Execute(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Workspace != filepath.Join(res.Dir, "workspace") {
		t.Errorf("workspace %q, want the record's", res.Workspace)
	}
	b, err := os.ReadFile(filepath.Join(res.Workspace, "notes.md"))
	if err != nil || !strings.Contains(string(b), "- ACTION ship 1.2 on Friday (Ada)\n") {
		t.Errorf("notes.md = %q, %v", b, err)
	}
	results := map[string]string{}
	for _, req := range rec.reqs[""] {
		for _, m := range req.Messages {
			if m.Role == model.Tool {
				results[m.Name] = m.Text
			}
		}
	}
	for name, want := range map[string]*regexp.Regexp{
		"run_skill_script": regexp.MustCompile(`^action items in notes.md:\n\s+1 Ada\n\s+1 Bo\n$`),
		"Bash":             regexp.MustCompile(`^notes.md\n3\n$`),
	} {
		if !want.MatchString(results[name]) {
			t.Errorf("%s answered %q", name, results[name])
		}
	}
}
