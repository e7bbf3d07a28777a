package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/transcript"
)

// readTranscript returns one generator's entries from a record's
// journal: gen is its name ("transcript.jsonl" for the host,
// "tasks/ID.jsonl" for a task; see runrecord.GenName).
func readTranscript(t *testing.T, dir, gen string) []transcript.Entry {
	t.Helper()
	gens, err := runrecord.ReadJournal(filepath.Join(dir, runrecord.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gens {
		if g.Name == gen {
			return g.Entries
		}
	}
	t.Fatalf("the journal of %s holds no generator %s", dir, gen)
	return nil
}

// C2: the id's form is checked first, then that it is enabled now; an
// explicitly empty selection stays empty.
func TestC2ReadChecks(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle))
	p.Workflow.Enabled, p.Workflow.EnabledSet = []string{"aa"}, true
	_, m, _, err := runWith(t, p, Options{}, read("Not_An_Id!"), read("bb"), read("zz"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	for i, code := range map[int]string{1: "SKILL_ID_INVALID", 2: "SKILL_NOT_ENABLED_IN_PROJECT", 3: "SKILL_NOT_ENABLED_IN_PROJECT"} {
		if r := lastResult(reqs[i]); !r.IsError || !strings.Contains(r.Text, code) {
			t.Errorf("read %d answered %+v, want %s", i, r, code)
		}
	}
	if strings.Contains(reqs[0].Context, "id: bb") {
		t.Error("a skill outside enabled is in the catalog")
	}
}

func TestC2EmptySelectionStaysEmpty(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	p.Workflow.Enabled, p.Workflow.EnabledSet = []string{}, true
	_, m, _, err := runWith(t, p, Options{}, read("aa"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if strings.Contains(reqs[0].Context, "id: aa") {
		t.Errorf("enabled: [] restored defaults:\n%s", reqs[0].Context)
	}
	if r := lastResult(reqs[1]); !strings.Contains(r.Text, "SKILL_NOT_ENABLED_IN_PROJECT") {
		t.Errorf("read under enabled: [] = %s", r.Text)
	}
}

// C3: the read result is a receipt, never the body.
func TestC3Receipt(t *testing.T) {
	testpar.UnlessRace(t)
	for _, ch := range []spec.Channel{spec.ChannelHandle, spec.ChannelInline} {
		p := project(skill("aa", "1.2.3", ch))
		_, m, _, err := runWith(t, p, Options{}, read("aa"), say("done"))
		if err != nil {
			t.Fatal(err)
		}
		r := lastResult(m.requests()[1])
		var rc map[string]any
		if err := json.Unmarshal([]byte(r.Text), &rc); err != nil {
			t.Fatalf("receipt is not JSON: %s", r.Text)
		}
		if rc["id"] != "aa" || rc["version"] != "1.2.3" || rc["loaded"] != true || rc["channel"] != string(ch) {
			t.Errorf("%s receipt = %v", ch, rc)
		}
		if _, hasHandle := rc["handle"]; hasHandle != (ch == spec.ChannelHandle) {
			t.Errorf("%s receipt handle presence wrong: %v", ch, rc)
		}
		if strings.Contains(r.Text, "BODY-OF-aa") {
			t.Errorf("receipt carries the body: %s", r.Text)
		}
	}
}

// C4: a version change or a disable on disk takes the old body and tools
// out of the next request, with a contextChanged entry saying why.
func TestC4ReloadOnChange(t *testing.T) {
	testpar.UnlessRace(t)
	for _, tc := range []struct {
		name, reason string
		version      string
		change       func(p *spec.Project)
	}{
		{"version bump", "version_changed", "1.0.0", func(p *spec.Project) { p.Skills[0] = skill("aa", "1.1.0", spec.ChannelInline) }},
		{"disabled", "disabled", "1.0.0", func(p *spec.Project) { p.Workflow.Enabled, p.Workflow.EnabledSet = []string{}, true }},
		// A SKILL.md without a version: its content digest tells the edit.
		{"unversioned edit", "version_changed", "", func(p *spec.Project) { p.Skills[0].Digest = "feedface00000000000000000000" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			wf := filepath.Join(dir, "wf.workflow.yaml")
			if err := os.WriteFile(wf, []byte("name: t\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			unversioned := func() *spec.Skill {
				s := skill("aa", tc.version, spec.ChannelInline)
				s.Digest = "0123456789abcdef0123456789abcdef"
				return s
			}
			p := project(unversioned())
			p.Workflow.File = wf
			reload := func() (*spec.Project, error) {
				np := project(unversioned())
				np.Workflow.File = wf
				tc.change(np)
				return np, nil
			}
			touch := func(*model.Request) *model.Response {
				future := time.Now().Add(time.Hour)
				_ = os.Chtimes(wf, future, future)
				return &model.Response{Calls: []model.ToolCall{{ID: "x", Name: "aa_echo", Args: json.RawMessage(`{"text":"t"}`)}}}
			}
			res, m, _, err := runWith(t, p, Options{Reload: reload, RunsDir: dir}, read("aa"), touch, say("done"))
			if err != nil {
				t.Fatal(err)
			}
			last := m.requests()[2]
			if strings.Contains(last.Context, "BODY-OF-aa") || has(toolNames(last), "aa_echo") {
				t.Errorf("old body or tools still in the request after %s:\n%s\n%v", tc.name, last.Context, toolNames(last))
			}
			var reasons []string
			for _, e := range readTranscript(t, res.Dir, "transcript.jsonl") {
				if e.Context != nil {
					reasons = append(reasons, string(e.Context.Reason))
				}
			}
			if got := strings.Join(reasons, ","); got != "read,"+tc.reason {
				t.Errorf("reasons = %s, want read,%s", got, tc.reason)
			}
		})
	}
}

// H5: the tool list and context block are rebuilt from the current state
// for every call; nothing of an earlier call's list carries over.
func TestH5RebuiltEveryCall(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle), skill("bb", "1.0.0", spec.ChannelHandle))
	p.Workflow.Limits.MaxLoadedSkills = 1
	_, m, _, err := runWith(t, p, Options{}, read("aa"), read("bb"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	want := [][]string{{"read_skill"}, {"read_skill", "aa_"}, {"read_skill", "bb_"}}
	for i, req := range reqs {
		for _, name := range toolNames(req) {
			ok := false
			for _, prefix := range want[i] {
				ok = ok || strings.HasPrefix(name, prefix) || strings.HasPrefix(name, "artifact_")
			}
			if !ok {
				t.Errorf("request %d offers %s", i, name)
			}
		}
	}
	if has(toolNames(reqs[1]), "artifact_md") == false {
		t.Error("H2: readers missing while a handle skill is loaded")
	}
	if has(toolNames(reqs[0]), "artifact_md") {
		t.Error("H2: readers offered with no handle skill loaded")
	}
}

// W1–W3 in the engine: each request holds at most max-transcript-messages,
// starting at a user message, and the context block is always there.
func TestWindowInRequests(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	p.Workflow.Limits.MaxTranscriptMessages = 5
	p.Workflow.Limits.MaxSteps = 50
	var steps []step
	steps = append(steps, read("aa"))
	for i := 0; i < 12; i++ {
		steps = append(steps, call("aa_echo", map[string]string{"text": "x"}))
	}
	steps = append(steps, say("done"))
	_, m, _, err := runWith(t, p, Options{}, steps...)
	if err != nil {
		t.Fatal(err)
	}
	for i, req := range m.requests() {
		if len(req.Messages) > 5 {
			t.Errorf("request %d holds %d messages", i, len(req.Messages))
		}
		if len(req.Messages) == 0 || req.Messages[0].Role != model.User {
			t.Errorf("request %d does not start at a user message", i)
		}
		if !strings.Contains(req.Context, "<catalog>") || !strings.Contains(req.Context, "You are a test host.") {
			t.Errorf("request %d lost the context block", i)
		}
		calls := map[string]bool{}
		for _, msg := range req.Messages {
			for _, c := range msg.Calls {
				calls[c.ID] = true
			}
			if msg.Role == model.Tool && !calls[msg.CallID] {
				t.Errorf("request %d: orphaned result %s", i, msg.CallID)
			}
		}
	}
}

// D8 for the host: max-steps is an error, not a hang.
func TestMaxSteps(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("aa", "1.0.0", spec.ChannelHandle))
	p.Workflow.Limits.MaxSteps = 3
	var steps []step
	for i := 0; i < 10; i++ {
		steps = append(steps, read("aa"))
	}
	_, _, _, err := runWith(t, p, Options{}, steps...)
	if err == nil || !strings.Contains(err.Error(), "max-steps") {
		t.Fatalf("err = %v, want max-steps", err)
	}
}

// The catalog as Agent Skills clients show it: no version line for a
// SKILL.md without one, a description over the limit cut and marked,
// when_to_use after the description, disable-model-invocation left out
// unless enabled: names the skill.
func TestCatalogAgentSkills(t *testing.T) {
	testpar.UnlessRace(t)
	long := skill("long", "", spec.ChannelHandle)
	long.Description = strings.Repeat("word ", 300) // 1,500 characters
	when := skill("when", "2.0.0", spec.ChannelHandle)
	when.WhenToUse = "the user asks for WHEN-MARKER"
	hidden := skill("hidden", "", spec.ChannelHandle)
	hidden.DisableModelInvocation = true
	for _, tc := range []struct {
		name    string
		enabled []string
		hidden  bool
	}{
		{"every skill found", nil, false},
		{"enabled names it", []string{"hidden", "long", "when"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := project(long, when, hidden)
			if tc.enabled != nil {
				p.Workflow.Enabled, p.Workflow.EnabledSet = tc.enabled, true
			}
			r, err := New(p, Options{Model: &recModel{}})
			if err != nil {
				t.Fatal(err)
			}
			req, err := r.FirstRequest("")
			if err != nil {
				t.Fatal(err)
			}
			cat := req.Context
			if strings.Contains(cat, "0.0.0") || strings.Count(cat, "version: ") != 1 || !strings.Contains(cat, "version: 2.0.0") {
				t.Errorf("versions in the catalog:\n%s", cat)
			}
			if !strings.Contains(cat, spec.CutMark) || strings.Count(cat, "word") > spec.MaxDescription/5 {
				t.Errorf("the long description is not cut and marked:\n%s", cat)
			}
			if !strings.Contains(cat, "Does when things. When to use: the user asks for WHEN-MARKER") {
				t.Errorf("when_to_use does not follow the description:\n%s", cat)
			}
			if got := strings.Contains(cat, "id: hidden"); got != tc.hidden {
				t.Errorf("disable-model-invocation skill in the catalog = %v, want %v:\n%s", got, tc.hidden, cat)
			}
		})
	}
}

// SKILL_ID_INVALID states the rule ValidID applies (spec.IDRule), and an
// id of another script that the rule allows is read, not refused.
func TestReadInvalidIDStatesRule(t *testing.T) {
	testpar.UnlessRace(t)
	p := project(skill("技能", "1.0.0", spec.ChannelHandle))
	_, m, _, err := runWith(t, p, Options{}, read("Not_An_Id"), read("技能"), say("done"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := m.requests()
	if r := lastResult(reqs[1]); !r.IsError || !strings.Contains(r.Text, "SKILL_ID_INVALID") || !strings.Contains(r.Text, spec.IDRule) {
		t.Errorf("an invalid id answered %q, want SKILL_ID_INVALID with %q", r.Text, spec.IDRule)
	}
	if r := lastResult(reqs[2]); r.IsError {
		t.Errorf("reading 技能 answered %q", r.Text)
	}
}

// A skill's .mcp.json is watched like its manifest: an edit reloads the
// catalog, so the next load starts the servers as the file says now.
func TestCatalogWatchesMCPJSON(t *testing.T) {
	testpar.UnlessRace(t)
	path := filepath.Join(t.TempDir(), ".mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := skill("aa", "1.0.0", spec.ChannelHandle)
	s.MCP = []spec.MCPServer{{Name: "t", Command: []string{"x"}, From: path}}
	c := newCatalog(project(s), nil)
	if c.changed() {
		t.Fatal("changed before any edit")
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if !c.changed() {
		t.Error("an edit of the skill's .mcp.json went unnoticed")
	}
}
