package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// Every request names the model its generator is given: a worker its
// agent's `model:`, else the workflow's; the host its own, else the
// workflow's; and a reload that changes the workflow's `model:` reaches
// the host's next request.
func TestCallerModelFollowsManifests(t *testing.T) {
	testpar.UnlessRace(t)
	dir := t.TempDir()
	wf := filepath.Join(dir, "wf.workflow.yaml")
	if err := os.WriteFile(wf, []byte("name: t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mk := func(wfModel string) *spec.Project {
		s := team()
		s.Agents[0].Model = "openai/agent-model" // iso
		p := project(s)
		p.Workflow.File, p.Workflow.Model = wf, wfModel
		return p
	}
	p := mk("openai/first")
	p.Workflow.Host.Model = ""
	reload := func() (*spec.Project, error) { np := mk("openai/second"); np.Workflow.Host.Model = ""; return np, nil }
	touch := func(req *model.Request) *model.Response {
		future := time.Now().Add(time.Hour)
		_ = os.Chtimes(wf, future, future)
		return call("listTasks", nil)(req)
	}
	_, m, _, err := runMulti(t, p, Options{Reload: reload}, map[string][]step{
		"host": {read("team"), calls("addTask", add("a", "iso"), "addTask", add("b", "prim")), call("runBoard", nil), touch, say("done")},
		"iso":  {say("iso done")},
		"prim": {say("prim done")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.requests("iso")[0].Caller.Model; got != "openai/agent-model" {
		t.Errorf("iso's request names model %q, want its agent's", got)
	}
	if got := m.requests("prim")[0].Caller.Model; got != "openai/first" {
		t.Errorf("prim's request names model %q, want the workflow's", got)
	}
	host := m.requests("host")
	if got := host[0].Caller.Model; got != "openai/first" {
		t.Errorf("the host's request names model %q, want the workflow's", got)
	}
	if got := host[len(host)-1].Caller.Model; got != "openai/second" {
		t.Errorf("after the reload the host's request names model %q, want the reloaded workflow's", got)
	}
}

// The host's own `model:` comes before the workflow's; an agent's before
// both.
func TestCatalogModelFor(t *testing.T) {
	testpar.UnlessRace(t)
	p := project()
	p.Workflow.Model, p.Workflow.Host.Model = "w", "h"
	c := newCatalog(p, nil)
	for _, tc := range []struct {
		agent *spec.Agent
		host  bool
		want  string
	}{
		{nil, true, "h"},
		{&spec.Agent{Model: "a"}, false, "a"},
		{&spec.Agent{}, false, "w"},
		{nil, false, "w"},
	} {
		if got := c.modelFor(tc.agent, tc.host); got != tc.want {
			t.Errorf("modelFor(%+v, host %v) = %q, want %q", tc.agent, tc.host, got, tc.want)
		}
	}
}
